"""What a test that runs make leaves out of its environment: make's own variables and the
command-line ones it exports. Under `make test-all EXTRAS=...` (CI) EXTRAS reaches every make
started below it, in MAKEFLAGS and in the environment, which would then look for another
install stamp."""

MAKE_VARIABLES = ("EXTRAS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
