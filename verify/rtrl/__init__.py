r"""What the ``rtrl.*`` claims compute: RTRL's exactness, the truncation it avoids, online convergence.

Papers: Tallec & Ollivier, "Unbiased Online Recurrent Optimization" (arXiv:1702.05043), whose
eq. (4) is RTRL's forward recursion and whose §4 is the influence-balancing example, and the
RTRL convergence analysis (``rtrl-convergence-analysis.md``), §2.3 and §7.1-7.2. Modules:

* :mod:`verify.rtrl.exact` -- the problem suite, RTRL and online truncated BPTT / the
  truncated model (Miller & Hardt eq. (3)) against their float64 references
  (``rtrl.exact``, ``rtrl.truncated-bptt``);
* :mod:`verify.rtrl.influence_balancing` -- UORO §4: RTRL run to equilibrium, the online
  TBPTT(k) estimator's equilibrium derivative and its round-off budget
  (``rtrl.influence-balancing``);
* :mod:`verify.rtrl.online_convergence` -- the rebuilt §7.1-7.2 experiments: teachers,
  AR(1) data, the long-run loss, the Gauss–Newton stationarity δ and online training
  curves (``rtrl.online-convergence``).

Every function takes the implementation part under test as a factory (``rtrl()`` or
``tbptt(k)``: the check passes ``config.impls.<family>.<field>`` wrapped by
:func:`verify.impl.build`), generators and a setup; never a run configuration.
"""
