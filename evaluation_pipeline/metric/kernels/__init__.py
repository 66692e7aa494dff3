"""The compiled (numba) kernels over blocks of whole queries; see :mod:`.loading`."""
