"""What the ``device.*`` claims compute: the CPU/GPU parity runner and float32 sampling.

The parity runner (:mod:`verify.gpu.parity`) runs every algorithm on two devices and
compares against the float64 CPU reference within :mod:`verify.oracles.budget`'s
predicted error budget; :mod:`verify.gpu.float32_sampling` runs the unbiasedness test
in a reduced precision. The torch device helpers are :mod:`verify.hardware`.
"""
