"""What a test that runs make leaves out of its environment: make's own variables. Under
`make test EXTRAS=...` (CI) MAKEFLAGS carries EXTRAS to every make started below it, which
would then look for another install stamp."""

MAKE_VARIABLES = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
