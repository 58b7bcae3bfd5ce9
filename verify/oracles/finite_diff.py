r"""Finite-difference and complex-step derivatives, used to check the reverse-mode references.

* :func:`richardson_directional` -- central differences
  :math:`D(h) = (f(\theta + h v) - f(\theta - h v)) / 2h` on a halving sequence of
  steps, combined by Richardson extrapolation (Neville tableau; the central
  difference's error expands in even powers of h, so level j removes the
  :math:`h^{2j}` term). Returns the estimate with the smallest error estimate and
  that estimate (the difference between neighbouring tableau entries), plus a
  round-off term :math:`\varepsilon_{\mathrm{mach}}\,|f|/h`.
  Step: :math:`h_0 = 10^{-2}\max(1, \|\theta\|_\infty)` for a unit direction. The
  extrapolated error is :math:`O(h^{2L+2})`, so a coarse first step is right: the
  round-off, which grows as :math:`1/h`, stays near :math:`\varepsilon |f| / h_{\min}`.
* :func:`complex_step_directional` -- :math:`\operatorname{Im} f(\theta + i h v)/h`
  with :math:`h = 10^{-20}` (Squire & Trapp 1998; Martins et al. 2003): no
  subtractive cancellation, exact to round-off, but only for functions built from
  analytic operations; the problem's cell must say :attr:`~verify.model.cells.Cell.analytic`.
* :func:`jacobian_fd` -- either method along every coordinate direction: the full
  Jacobian for small p.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from verify._validate import require_positive_int
from verify.errors import InvalidArgument
from verify.model.problem import Problem

__all__ = [
    "FDEstimate",
    "complex_problem",
    "complex_step_directional",
    "jacobian_fd",
    "richardson_directional",
]

VectorFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class FDEstimate:
    """A finite-difference derivative with its estimated absolute error (2-norm)."""

    value: torch.Tensor
    error: float
    step: float
    levels_used: int


def _unit(direction: torch.Tensor) -> tuple[torch.Tensor, float]:
    norm = float(torch.linalg.vector_norm(direction))
    if not math.isfinite(norm) or norm == 0.0:
        raise InvalidArgument("direction", f"vector of norm {norm}", "must be finite and non-zero")
    return direction / norm, norm


def richardson_directional(
    f: VectorFn,
    theta: torch.Tensor,
    direction: torch.Tensor,
    *,
    h: float | None = None,
    levels: int = 4,
    retries: int = 4,
    rtol: float = 1e-10,
) -> FDEstimate:
    r"""Directional derivative :math:`J_f(\theta)\,v` by Richardson-extrapolated central differences.

    ``levels`` central differences on steps :math:`h, h/2, \dots` fill a Neville
    tableau; the entry with the smallest error estimate is returned. If that
    estimate exceeds ``rtol`` (relative to the derivative's size) the whole
    tableau is recomputed with h/10, up to ``retries`` times, keeping the best: a
    piecewise-smooth function (relu) is differentiated on steps that no longer
    cross a kink.
    """
    levels = require_positive_int("levels", levels, minimum=2)
    v, vnorm = _unit(direction)
    if h is None:
        h = 1e-2 * max(1.0, float(theta.abs().max()))
    if not (math.isfinite(h) and h > 0):
        raise InvalidArgument("h", h, "step must be finite and > 0")
    best_est: FDEstimate | None = None
    for _ in range(retries + 1):
        est = _richardson_once(f, theta, v, vnorm, h, levels)
        if best_est is None or est.error < best_est.error:
            best_est = est
        if est.error <= rtol * max(1.0, float(torch.linalg.vector_norm(est.value))):
            break
        h /= 10.0
    assert best_est is not None
    return best_est


def _richardson_once(
    f: VectorFn, theta: torch.Tensor, v: torch.Tensor, vnorm: float, h: float, levels: int
) -> FDEstimate:
    eps = torch.finfo(theta.dtype).eps
    D: list[list[torch.Tensor]] = []
    fscale = 0.0
    best: tuple[float, torch.Tensor, int] | None = None
    for i in range(levels):
        hi = h / 2**i
        fp, fm = f(theta + hi * v), f(theta - hi * v)
        fscale = max(fscale, float(fp.abs().max()), float(fm.abs().max()))
        row = [(fp - fm) / (2 * hi)]
        for j in range(1, i + 1):
            c = 4.0**j
            row.append((c * row[j - 1] - D[i - 1][j - 1]) / (c - 1))
        D.append(row)
        if i >= 1:
            for j in range(1, i + 1):
                err = float(torch.linalg.vector_norm(row[j] - row[j - 1])) + float(
                    torch.linalg.vector_norm(row[j] - D[i - 1][j - 1])
                )
                if best is None or err < best[0]:
                    best = (err, row[j], i)
    assert best is not None
    roundoff = 4 * eps * fscale * math.sqrt(max(1, best[1].numel())) / (h / 2 ** best[2])
    return FDEstimate(best[1] * vnorm, (best[0] + roundoff) * vnorm, h, best[2] + 1)


def complex_step_directional(
    f: VectorFn, theta: torch.Tensor, direction: torch.Tensor, *, h: float = 1e-20
) -> torch.Tensor:
    r"""Directional derivative by the complex step, :math:`\operatorname{Im} f(\theta + i h v)/h`.

    ``f`` must accept a complex θ and be analytic (see :func:`complex_problem`).
    """
    v, vnorm = _unit(direction)
    ctype = torch.complex128 if theta.dtype == torch.float64 else torch.complex64
    th = theta.to(ctype) + 1j * h * v.to(ctype)
    out = f(th)
    if not out.is_complex():
        raise InvalidArgument("f", "function returning a real tensor", "must propagate the complex input")
    return out.imag * (vnorm / h)


def complex_problem(problem: Problem) -> Problem:
    """The problem cast to complex128, refused for cells that are not analytic (e.g. relu)."""
    if not problem.cell.analytic:
        raise InvalidArgument(
            "problem.cell",
            problem.cell.describe(),
            "complex-step differentiation needs a cell built from analytic operations "
            "(relu is not analytic); use richardson_directional instead",
        )
    if problem.dtype != torch.float64:
        raise InvalidArgument("problem.dtype", str(problem.dtype), "complex step references need float64")
    return problem.to(torch.complex128)


def jacobian_fd(
    f: VectorFn, theta: torch.Tensor, *, method: str = "richardson", levels: int = 4
) -> tuple[torch.Tensor, float]:
    """Full Jacobian of ``f`` at θ, one column per coordinate: (*out_shape, p), and an error estimate.

    ``method`` is ``"richardson"`` or ``"complex"``. For a complex step ``f`` must
    accept complex θ. The error estimate is the 2-norm over columns of the
    per-column estimates (0 for the complex step, whose error is round-off).
    """
    if method not in ("richardson", "complex"):
        raise InvalidArgument("method", method, "must be 'richardson' or 'complex'")
    cols, errs = [], []
    eye = torch.eye(theta.shape[0], dtype=theta.dtype, device=theta.device)
    for i in range(theta.shape[0]):
        if method == "complex":
            cols.append(complex_step_directional(f, theta, eye[i]))
            errs.append(0.0)
        else:
            est = richardson_directional(f, theta, eye[i], levels=levels)
            cols.append(est.value)
            errs.append(est.error)
    return torch.stack(cols, dim=-1), math.sqrt(sum(e * e for e in errs))
