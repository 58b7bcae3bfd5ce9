"""SHIM (not numba): names snapjax's CUDA primitive imports; never called on the dense path."""


def _no(*a, **k):
    raise RuntimeError("numba shim: the CUDA sparse primitive is not available")


carray = cfunc = _no


class types:
    pass
