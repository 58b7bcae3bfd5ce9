r"""What the UORO claims compute: Tallec & Ollivier, "Unbiased Online Recurrent Optimization" (arXiv:1702.05043)
and Cooijmans & Martens, "On the Variance of Unbiased Online Recurrent Optimization" (arXiv:1902.02405).

Functions of (estimator, generator, setup), never of a run configuration; the checks in
:mod:`verify.checks` (``uoro*``) call them and decide. Modules:

* :mod:`verify.uoro.cases` -- the fixture problems (seeded, cached) and their float64 references;
* :mod:`verify.uoro.enumeration` -- Prop. 1 by exact enumeration over every sign pattern;
* :mod:`verify.uoro.unbiased` -- Prop. 1, UORO-T and rank-r UORO (§3) by the sequential test;
* :mod:`verify.uoro.variance` -- rank-r variance (§3), variance growth and preactivation UORO (Cooijmans &
  Martens);
* :mod:`verify.uoro.reinforce_link` -- REINFORCE on the state-perturbed RNN → UORO as σ → 0 (Cooijmans & Martens);
* :mod:`verify.uoro.conformance` -- Algorithm 1's noise law and formulas under tabulated noise;
* :mod:`verify.uoro.normalizers` -- second moments against the independent Algorithm 1 (the ρ₀, ρ₁ normalizers);
* :mod:`verify.uoro.power` -- the operating characteristic of the sequential test on biased mutants.
"""
