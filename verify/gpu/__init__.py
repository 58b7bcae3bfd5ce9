"""What the ``device.*`` claims compute: the CPU/GPU parity runner, its suite and GPU-scale sampling.

The parity runner (:mod:`verify.gpu.parity`) runs every algorithm on two devices and
compares against the float64 CPU reference within :mod:`verify.oracles.budget`'s
predicted error budget; :mod:`verify.gpu.suite` is the problem suite the parity claims
run it on (and a negative control's run); :mod:`verify.gpu.unbiasedness` tests UORO's
unbiasedness at GPU scale (Tallec & Ollivier Prop. 1) and :mod:`verify.gpu.float32_sampling`
runs the unbiasedness test in a reduced precision. The torch device helpers are
:mod:`verify.hardware`.
"""
