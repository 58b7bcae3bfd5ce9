r"""The round-off model of the unbiasedness tests: what "no noise" and "no deviation" mean in floating point.

DESIGN.md, "Statistics: round-off is not bias". An estimator and its truth are
computed in floating point, so :math:`E\hat g - g` is never exactly 0 for a correct
estimator, and a covariance computed in float64 cannot resolve variances far below
its largest eigenvalue. The tests of :mod:`verify.stats.unbiased` therefore decide
with the following model instead of fixed relative cuts (u = unit round-off: 2⁻⁵³
for float64 draws, 2⁻²⁴ for float32, the coarsest dtype the sampler returned).

**Round-off budget of the mean** (per coordinate k; :func:`coordinate_budget`):

.. math::
    \tau_k = \big(\kappa\,u + (\lceil\log_2 M\rceil + 2)\,u_{64}\big)\,
             \big(\mathrm{rms}_k(X) + |g_k|\big),
    \qquad \mathrm{rms}_k(X) = \sqrt{\tfrac1M\textstyle\sum_i X_{ik}^2}

-- each coordinate of a draw may carry κ units of round-off of the draws' own
magnitude (κ = ``roundoff_ulps``, default 2¹⁰: the estimator's arithmetic), plus the
float64 summation of the mean and of :math:`X - g`. The truth carries
:math:`\tau_g = \mathrm{truth\_rtol}\cdot\|g\|` (default 2¹⁰·u₆₄ ≈ 1.1e-13: a float64
reference; pass the reference's own budget when it is larger). Along a unit direction v
the budget is :math:`\tau(v) = \sum_k |v_k|\tau_k + \tau_g`; for the whole vector
:math:`\tau = \|\tau_{1..p}\|_2 + \tau_g`. A mean shift within τ(v) is **never
detected** (the test statistics use :math:`\max(|v^\top\bar Y| - \tau(v), 0)`, a valid
test of the interval null :math:`|v^\top E Y| \le \tau(v)`) and a PASS certifies
:math:`\|\bar Y\| + r + \tau` (the budget is part of the certified bound and reported).

**No noise** (:func:`deterministic_coordinates`): a coordinate is *deterministic*
when its sample variance (a sum of squares: computed to relative accuracy) is at most
what round-off of its magnitude can produce, :math:`S_{kk} \le \tau_k^2`. Those
coordinates (e.g. UORO's readout gradient) are tested one by one against
:math:`\tau_k + \tau_g` (plus their own tiny standard error) and are kept out of the
eigen-decomposition.

**Resolution of the covariance** (:func:`eigen_floor`): the eigen-decomposition of
the remaining d×d block :math:`S_N` is backward stable, so for every computed pair
:math:`(\hat\lambda_j, \hat v_j)`: :math:`|\hat v_j^\top S_N \hat v_j - \hat\lambda_j| \le e`,

.. math::
    e = c_e\, d\, u_{64}\, \hat\lambda_{\max}, \qquad c_e = 8

(measured: the largest error over p = 5…300, condition numbers 1e4…1e20, rotated and
axis-aligned, is 1.3·d·u·λ_max; c_e = 8 leaves a factor 6). A direction with
:math:`\hat\lambda_j \le 10\,e` is *unresolved*: it cannot be declared
deterministic (its true variance may be anything up to ~e) and it cannot enter
Hotelling's T² as a resolved direction. It is tested with the variance
:math:`\hat\lambda_j + e` (an upper bound of the sample variance along :math:`\hat v_j`)
and the budget :math:`\tau(\hat v_j)`. Every variance used by a test or by the
certificate is :math:`\hat\lambda_j + e`.

**When the null space is evidence.** With M draws the sample covariance has rank
at most M − 1, so for M ≤ d + 1 a null space exists whatever the estimator; the
unresolved directions are tested only when the resolved rank r is at most M − 2
(the draws span fewer dimensions than they could: the rest is really flat).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from verify.stats.moments import U64, Moments

__all__ = [
    "DEFAULT_TRUTH_RTOL",
    "DEFAULT_ULPS",
    "EIG_FACTOR",
    "RESOLVE_FACTOR",
    "coordinate_budget",
    "deterministic_coordinates",
    "draw_rms",
    "eigen_floor",
    "symmetric_eigh",
]

#: κ: round-off units of its own magnitude each coordinate of a draw may carry
DEFAULT_ULPS = 2.0**10
#: relative round-off budget of a float64 truth
DEFAULT_TRUTH_RTOL = 2.0**10 * U64
#: c_e of the eigen-decomposition floor e = c_e·d·u·λ_max (measured ≤ 1.3)
EIG_FACTOR = 8.0
#: an eigen-direction is resolved when its eigenvalue exceeds this multiple of the floor
RESOLVE_FACTOR = 10.0


def draw_rms(m: Moments, truth: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathrm{rms}_k(X) = \sqrt{\frac{n-1}{n}S_{kk} + (\bar Y_k + g_k)^2}` (the draws' magnitudes)."""
    var = m.variances() * ((m.n - 1) / m.n) if m.n >= 2 else torch.zeros_like(m.mean)
    return torch.sqrt(var.clamp(min=0.0) + (m.mean + truth) ** 2)


def coordinate_budget(m: Moments, truth: torch.Tensor, ulps: float) -> torch.Tensor:
    r"""τ_k: the round-off budget of the k-th coordinate of the mean :math:`\bar Y = \bar X - g` (module docstring)."""
    summation = (math.ceil(math.log2(max(m.n, 2))) + 2) * U64
    return (ulps * m.unit_roundoff + summation) * (draw_rms(m, truth) + truth.abs())


def deterministic_coordinates(m: Moments, tau: torch.Tensor) -> torch.Tensor:
    """Mask of the coordinates whose sample variance is within round-off of their magnitude: S_kk ≤ τ_k²."""
    return m.variances() <= tau * tau


def eigen_floor(lam_max: float, dim: int) -> float:
    """e = c_e·d·u₆₄·λ_max: how far a computed eigenvalue may lie from the variance along its computed vector."""
    return EIG_FACTOR * max(dim, 1) * U64 * max(lam_max, 0.0)


def symmetric_eigh(a: torch.Tensor, *, vectors: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenvalues (ascending) and, with ``vectors``, eigenvectors of the symmetric matrix ``a``, always.

    LAPACK's divide-and-conquer driver (``torch.linalg.eigh``) can fail to converge on covariances whose
    entries span ~10¹³ and more (the unbiased ρ₀-inverted UORO mutant), which is the estimator's variance,
    not an error of the test. The matrix is symmetrized and scaled to unit largest entry first; on a
    convergence failure the decomposition is retried with the relatively robust representation driver
    (``scipy.linalg.eigh(driver="evr")``) and then the QR driver (``"ev"``). All are backward stable, so
    :func:`eigen_floor` still bounds the error. Non-finite entries raise ``ValueError``.
    """
    a = a.to(torch.float64)
    if not bool(torch.isfinite(a).all()):
        raise ValueError("symmetric_eigh: the matrix has non-finite entries")
    d = a.shape[-1]
    scale = float(a.abs().max()) if a.numel() else 0.0
    if scale == 0.0:
        return torch.zeros(d, dtype=torch.float64), torch.eye(d, dtype=torch.float64) if vectors else None
    if not 1e-300 < scale < 1e300:  # 0.5/scale would overflow (or lose the entries): rescale by a power of two first
        e = math.frexp(scale)[1]
        a = torch.from_numpy(np.ldexp(a.numpy(), -e))  # exact (torch.ldexp forms 2^-e, which may overflow)
        scale = float(a.abs().max())
        back = math.ldexp(scale, e)
    else:
        back = scale
    b = (a + a.T) * (0.5 / scale)
    try:
        if vectors:
            lam, vec = torch.linalg.eigh(b)
            return lam * back, vec
        return torch.linalg.eigvalsh(b) * back, None
    except torch.linalg.LinAlgError:  # type: ignore[attr-defined]
        import scipy.linalg

        err: Exception | None = None
        for driver in ("evr", "ev"):
            try:
                res = scipy.linalg.eigh(b.numpy(), eigvals_only=not vectors, driver=driver, check_finite=False)
            except (np.linalg.LinAlgError, ValueError) as exc:
                err = exc
                continue
            if vectors:
                w, v = res
                return torch.from_numpy(w) * back, torch.from_numpy(v)
            return torch.from_numpy(res) * back, None
        raise ValueError(f"symmetric_eigh: no LAPACK driver converged on a {d}x{d} matrix") from err
