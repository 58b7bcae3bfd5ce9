r"""The reference self-check: independent derivative computations must agree within budget.

Before anything else is trusted, the references cross-check each other on a
problem (DESIGN.md, "Reference"):

=====================================  ==================================  =====================
pair                                   what differs                         DESIGN target
=====================================  ==================================  =====================
explicit adjoint vs BPTT (total)       loop of one-step VJPs vs autograd    ≤ 1e-12 relative
explicit adjoint vs BPTT (per step)    vmapped adjoints vs batched grad     ≤ 1e-12 relative
influence: reverse vs forward mode     basis VJPs vs ``jacfwd``             ≤ 1e-12 relative
complex step vs BPTT (directional)     Im f(θ+ihv)/h, analytic cells only   ≤ 1e-12 relative
complex step vs influence (direct.)    Im s_t(θ+ihv)/h vs (∂s_t/∂θ) v       ≤ 1e-12 relative
Richardson central differences         extrapolated FD, random directions   ≤ 1e-8 relative
full Jacobian (small p)                FD/complex step, every coordinate    as above
=====================================  ==================================  =====================

Each pair is judged against a *predicted* budget (:mod:`verify.oracles.budget` for
round-off; the Richardson tableau's own error estimate for differences), and the
report shows the measured error, the budget and the DESIGN target side by side.
Errors of gradients are relative to ‖∇L‖ (directional derivatives along unit v:
:math:`|D_v - g\cdot v| / \|g\|`), errors of influence matrices relative to
:math:`\|\partial s/\partial\theta\|_F`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from verify._narrow import as_reference_dtype
from verify.model.problem import Problem
from verify.oracles.bptt import (
    adjoint_gradient,
    bptt_gradient,
    influence_jacfwd,
    influence_matrices,
    per_step_gradients,
)
from verify.oracles.budget import Conditioning, conditioning, pair_unit, roundoff_budget
from verify.oracles.finite_diff import (
    complex_problem,
    complex_step_directional,
    jacobian_fd,
    richardson_directional,
)

__all__ = ["TARGETS", "Comparison", "SelfCheckReport", "reference_self_check"]

#: DESIGN.md targets on well-conditioned problems (relative errors)
TARGETS = {
    "adjoint": 1e-12,
    "influence": 1e-12,
    "complex-step": 1e-12,
    "finite-difference": 1e-8,
}

AdjointFn = Callable[..., torch.Tensor]
InfluenceFn = Callable[[Problem, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Comparison:
    """One pair of derivative computations compared against a budget."""

    name: str
    family: str
    error: float
    budget: float
    target: float
    detail: str = ""

    @property
    def passed(self) -> bool:
        return math.isfinite(self.error) and self.error <= self.budget

    @property
    def ratio(self) -> float:
        return self.error / self.budget if self.budget > 0 else math.inf


@dataclass(frozen=True)
class SelfCheckReport:
    problem: str
    conditioning: Conditioning
    comparisons: tuple[Comparison, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return all(c.passed for c in self.comparisons)

    def by_family(self, family: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.family == family]

    def format(self) -> str:
        c = self.conditioning
        lines = [
            f"problem: {self.problem}",
            f"conditioning: kappa_grad={c.kappa_grad:.3g} kappa_influence={c.kappa_influence:.3g} "
            f"contraction_sum={c.contraction_sum:.3g} max||J||={c.max_step_jacobian_norm:.3g}",
            f"{'comparison':<44} {'error':>9} {'budget':>9} {'target':>9}  verdict",
        ]
        for cmp in self.comparisons:
            lines.append(
                f"{cmp.name:<44} {cmp.error:9.2e} {cmp.budget:9.2e} {cmp.target:9.0e}  "
                f"{'PASS' if cmp.passed else 'FAIL'}"
            )
        lines.append(f"overall: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    num = float(torch.linalg.vector_norm(a - b))
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def _part_free(
    problem: Problem, theta: torch.Tensor, need_influence: bool, shared: dict[str, object] | None
) -> tuple[Conditioning, torch.Tensor]:
    """The conditioning (with κ_I where needed, always when memoized) and the BPTT gradient: from ``shared`` where
    it holds them, computed (and kept there) otherwise."""
    if shared is None:
        return conditioning(problem, theta, with_influence=need_influence), bptt_gradient(problem, theta)
    if "conditioning" not in shared:
        shared["conditioning"] = conditioning(problem, theta, with_influence=True)
    if "bptt" not in shared:
        shared["bptt"] = bptt_gradient(problem, theta)
    cond, g_bptt = shared["conditioning"], shared["bptt"]
    assert isinstance(cond, Conditioning) and isinstance(g_bptt, torch.Tensor)
    return cond, g_bptt


def reference_self_check(
    problem: Problem,
    theta: torch.Tensor,
    *,
    generator: torch.Generator,
    directions: int = 3,
    full_jacobian_max_p: int = 0,
    adjoint: AdjointFn = adjoint_gradient,
    families: tuple[str, ...] = ("adjoint", "influence", "complex-step", "finite-difference"),
    influence: InfluenceFn = influence_matrices,
    dtype: torch.dtype = torch.float64,
    shared: dict[str, object] | None = None,
) -> SelfCheckReport:
    """Run the reference pairs on ``problem`` at θ and judge each against its budget.

    ``adjoint`` and ``influence`` are the implementations under test (the toolkit's
    :func:`~verify.oracles.bptt.adjoint_gradient` and reverse-mode
    :func:`~verify.oracles.bptt.influence_matrices` by default, :class:`verify.impl.ReferenceImpl`;
    the mutant catalog passes broken ones). Its gradient is what the complex-step and Richardson
    pairs check, so a broken adjoint fails those pairs too. Complex-step pairs are
    skipped (not passed) for non-analytic cells. ``full_jacobian_max_p`` > 0 adds
    full-Jacobian comparisons for p up to that size. ``dtype``: the precision the parts under test compute in
    (issue 37): float32 code is judged against the same budgets at :func:`~verify.oracles.budget.pair_unit`'s
    rounding unit, and its float32 results are taken into float64 (and noted, :mod:`verify._narrow`).
    ``shared``: a memo kept by the caller for this (problem, θ) -- the conditioning (with κ_I) and the BPTT gradient,
    which depend on neither the parts under test nor the families, computed once for every family run on it
    (issue 42: the four ``reference.*`` claims on one suite).
    """
    cond, g_bptt = _part_free(problem, theta, "influence" in families or "complex-step" in families, shared)
    u = pair_unit(dtype)  # u64 for float64 code: the budgets of Conditioning.gradient_budget / influence_budget
    gbud = roundoff_budget(u, cond.depth, cond.steps, cond.kappa_grad)
    ibud = roundoff_budget(u, cond.depth, cond.steps, cond.kappa_influence)
    out: list[Comparison] = []
    g_test = as_reference_dtype(adjoint(problem, theta), g_bptt)
    gnorm = float(torch.linalg.vector_norm(g_bptt))
    if "adjoint" in families:
        out += _adjoint_pairs(problem, theta, adjoint, g_test, g_bptt, gbud)
    I_rev = None
    if "influence" in families:
        I_rev = as_reference_dtype(influence(problem, theta), theta)
        I_fwd = influence_jacfwd(problem, theta)
        out.append(
            Comparison(
                "influence: reverse vs forward mode", "influence", _rel(I_rev, I_fwd), ibud, TARGETS["influence"]
            )
        )
    dirs = [
        torch.randn(problem.p, generator=generator, dtype=torch.float64).to(problem.dtype) for _ in range(directions)
    ]
    dirs = [d / torch.linalg.vector_norm(d) for d in dirs]
    full = bool(full_jacobian_max_p and problem.p <= full_jacobian_max_p)
    if "complex-step" in families and problem.cell.analytic:
        out += _complex_step_pairs(problem, theta, dirs, g_test, gnorm, I_rev, influence, gbud, ibud, full)
    if "finite-difference" in families:
        out += _richardson_pairs(problem, theta, dirs, g_test, gnorm, gbud, full)
    return SelfCheckReport(problem.describe(), cond, tuple(out))


def _adjoint_pairs(
    problem: Problem,
    theta: torch.Tensor,
    adjoint: AdjointFn,
    g_test: torch.Tensor,
    g_bptt: torch.Tensor,
    gbud: float,
) -> list[Comparison]:
    """Explicit adjoint vs BPTT: the total gradient and the per-step gradients."""
    out = [Comparison("adjoint vs BPTT: total gradient", "adjoint", _rel(g_test, g_bptt), gbud, TARGETS["adjoint"])]
    G_b = per_step_gradients(problem, theta)
    G_a = as_reference_dtype(adjoint(problem, theta, per_step=True), G_b)
    out.append(Comparison("adjoint vs BPTT: per-step gradients", "adjoint", _rel(G_a, G_b), gbud, TARGETS["adjoint"]))
    return out


def _complex_step_pairs(
    problem: Problem,
    theta: torch.Tensor,
    dirs: list[torch.Tensor],
    g_test: torch.Tensor,
    gnorm: float,
    I_rev: torch.Tensor | None,
    influence: InfluenceFn,
    gbud: float,
    ibud: float,
    full: bool,
) -> list[Comparison]:
    """Complex step Im f(θ+ihv)/h vs the gradient and the influence along ``dirs`` (and the full gradient)."""
    directions = len(dirs)
    out: list[Comparison] = []
    Pc = complex_problem(problem)
    errs = [abs(float(complex_step_directional(Pc.total_loss, theta, v)) - float(g_test @ v)) / gnorm for v in dirs]
    out.append(
        Comparison(
            f"complex step vs gradient ({directions} dirs)",
            "complex-step",
            max(errs),
            gbud,
            TARGETS["complex-step"],
        )
    )
    if I_rev is None:
        I_rev = as_reference_dtype(influence(problem, theta), theta)
    inorm = float(torch.linalg.vector_norm(I_rev))
    ierrs = [
        float(torch.linalg.vector_norm(complex_step_directional(lambda th: Pc.rollout(th)[1:], theta, v) - I_rev @ v))
        / inorm
        for v in dirs
    ]
    out.append(
        Comparison(
            f"complex step vs influence ({directions} dirs)",
            "complex-step",
            max(ierrs),
            ibud,
            TARGETS["complex-step"],
        )
    )
    if full:
        J, _ = jacobian_fd(Pc.total_loss, theta, method="complex")
        out.append(
            Comparison(
                "complex step full gradient vs gradient",
                "complex-step",
                _rel(g_test, J),
                gbud,
                TARGETS["complex-step"],
            )
        )
    return out


def _richardson_pairs(
    problem: Problem,
    theta: torch.Tensor,
    dirs: list[torch.Tensor],
    g_test: torch.Tensor,
    gnorm: float,
    gbud: float,
    full: bool,
) -> list[Comparison]:
    """Richardson-extrapolated central differences vs the gradient along ``dirs`` (and the full gradient)."""
    directions = len(dirs)
    out: list[Comparison] = []
    errs, buds = [], []
    for v in dirs:
        est = richardson_directional(problem.total_loss, theta, v)
        errs.append(abs(float(est.value) - float(g_test @ v)) / gnorm)
        buds.append(2.0 * est.error / gnorm + gbud)
    worst = max(range(len(errs)), key=lambda i: errs[i] / buds[i])
    out.append(
        Comparison(
            f"Richardson FD vs gradient ({directions} dirs)",
            "finite-difference",
            errs[worst],
            buds[worst],
            TARGETS["finite-difference"],
            "budget = 2 x tableau error estimate + round-off budget",
        )
    )
    if full:
        J, err = jacobian_fd(problem.total_loss, theta, method="richardson")
        out.append(
            Comparison(
                "Richardson full gradient vs gradient",
                "finite-difference",
                _rel(g_test, J),
                2.0 * err / gnorm + gbud,
                TARGETS["finite-difference"],
            )
        )
    return out
