r"""UORO's Proposition 1 by computation (Tallec & Ollivier 2017, Prop. 1, App. A; Algorithm 1, §3 for rank-r UORO
and UORO-T; Cooijmans & Martens 2019 for preactivation UORO): the expectation over every Rademacher sign pattern
(:mod:`verify.estimators.enumerate`) of s̃_t ⊗ θ̃_t and g̃_t against the float64 references, within a round-off
budget that includes the cancellation among patterns (:mod:`verify.oracles.budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.errors import NotApplicable
from verify.estimators.enumerate import Enumerable, EnumeratedExpectation, enumerate_expectation
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.oracles.budget import conditioning, pair_unit, roundoff_budget, unit_roundoff

__all__ = [
    "MAX_PATTERNS",
    "SUITE",
    "TARGET",
    "EnumerationCase",
    "References",
    "compare_enumeration",
    "enumerable_steps",
    "enumeration_suite",
    "row_thresholds",
]

#: DESIGN.md target for the enumerated expectation vs the references (relative)
TARGET = 1e-12
#: cancellation κ (E|g̃| / |E g̃|) above which a row is judged by its round-off budget alone, not the 1e-12 target
CANCELLING = 1e3


def row_thresholds(r: dict[str, Any]) -> tuple[float, float]:
    """(gradient, influence) thresholds a row of :func:`compare_enumeration` was judged by (judged at float32: the
    budgets alone, the 1e-12 target being float64's)."""
    cancel = float(r["kappa_noise"]) > CANCELLING or r.get("dtype", "float64") != "float64"
    g, i = float(r["gradient_budget"]), float(r["influence_budget"])
    return (g, i) if cancel else (min(g, TARGET), min(i, TARGET))


#: ceiling on the patterns of one enumeration (ci, the first problem)
MAX_PATTERNS = 4096
#: the problems of the suite: (cell, loss, batch shape); n = 2 (LSTM: H = 1), d = 1, k = 2
SUITE = (
    ("elman-tanh", "squared-error", ()),
    ("elman-relu", "cross-entropy", ()),
    ("linear", "squared-error", ()),
    ("lstm", "cross-entropy", ()),
    ("gru", "squared-error", (2,)),
)


@dataclass(frozen=True)
class EnumerationCase:
    """One enumeration: an estimator on a problem, with the most patterns it may enumerate."""

    label: str
    estimator: Enumerable
    problem: Problem
    theta: torch.Tensor
    limit: int  #: most patterns enumerated for this case


def enumerable_steps(est: Enumerable, problem: Problem, limit: int) -> int:
    """The largest number of steps (≤ T) whose patterns fit in ``limit``."""
    per = math.prod(est.noise_shape(problem))
    support = est.noise.support
    if support is None:
        name = getattr(est, "name", type(est).__name__)
        raise NotApplicable(
            "uoro.exact-expectation",
            f"the noise law of {name} ({type(est.noise).__name__}) has no finite support (a continuous law): its "
            "expectation cannot be enumerated; the statistical unbiasedness claims test it",
        )
    best = 0
    for t in range(1, problem.T + 1):
        if len(support) ** (est.noise_draws(t) * per) <= limit:
            best = t
    return best


def enumeration_suite(
    variants: Callable[[bool], Sequence[Enumerable]], gen: torch.Generator, T: int, limits: Sequence[int]
) -> list[EnumerationCase]:
    """The cases of :data:`SUITE`: the problems drawn from ``gen`` in turn (T steps), each with the estimators
    ``variants(elman)`` (``elman``: an Elman cell, where preactivation UORO applies) whose first step fits in the
    problem's pattern limit (``limits``, one per problem)."""
    cases = []
    for (kind, loss, batch), limit in zip(SUITE, limits, strict=True):
        n = 1 if kind == "lstm" else 2
        P, th = random_problem(kind, n=n, d=1, T=T, k=2, loss=loss, batch=batch, generator=gen)
        label = f"{kind}/{loss}" + ("/batch2" if batch else "")
        for est in variants(kind.startswith("elman")):
            if enumerable_steps(est, P, limit) >= 1:
                cases.append(EnumerationCase(f"{label}: {est.name}", est, P, th, limit))
    return cases


@dataclass(frozen=True)
class References:
    """The float64 references of one problem, computed once."""

    gradients: torch.Tensor
    influence: torch.Tensor
    kappa_grad: float
    kappa_influence: float

    @staticmethod
    def of(problem: Problem, theta: torch.Tensor) -> References:
        cond = conditioning(problem, theta)
        return References(
            per_step_gradients(problem, theta),
            influence_matrices(problem, theta),
            cond.kappa_grad,
            cond.kappa_influence,
        )


def _budgets(
    E: EnumeratedExpectation,
    G: torch.Tensor,
    I_at: torch.Tensor,
    P: Problem,
    steps: int,
    refs: References,
    dtype: torch.dtype = torch.float64,
) -> tuple[float, ...]:
    """(gradient budget, influence budget, cancellation κ of the gradients, of the influence); an estimator computing
    in ``dtype`` against the float64 references: the rounding unit :func:`~verify.oracles.budget.pair_unit`."""
    u = max(unit_roundoff(P.dtype), pair_unit(dtype))
    depth = P.n + P.cell.input_size + P.readout.output_size + E.coordinates
    k_g = float(torch.linalg.vector_norm(E.gradients_abs)) / max(float(torch.linalg.vector_norm(G)), 1e-300)
    k_i = (
        0.0
        if E.influence_abs is None
        else float(torch.linalg.vector_norm(E.influence_abs)) / max(float(torch.linalg.vector_norm(I_at)), 1e-300)
    )
    b_g = roundoff_budget(u, depth, steps, max(refs.kappa_grad, 1.0) * max(k_g, 1.0))
    b_i = roundoff_budget(u, depth, steps, max(refs.kappa_influence, 1.0) * max(k_i, 1.0))
    return b_g, b_i, k_g, k_i


def compare_enumeration(
    est: Enumerable, case: EnumerationCase, refs: References, dtype: torch.dtype = torch.float64
) -> dict[str, Any]:
    """Enumerate ``est`` on ``case``; relative errors of E g̃ and E s̃⊗θ̃ against ``refs``, their budgets, and whether
    they are within the budgets (``within_budget``) and the 1e-12 target as well (``passed``). ``dtype``: the
    precision the estimator is judged at (float32: its budgets, :mod:`verify.impl.precision`; no target)."""
    P, th, limit = case.problem, case.theta, case.limit
    steps = enumerable_steps(est, P, limit)
    E = enumerate_expectation(est, P, th, steps=steps, max_patterns=limit)
    G = refs.gradients[:steps]
    I_ref = refs.influence
    zero = torch.zeros_like(I_ref[0])
    I_at = torch.stack([I_ref[s - 1] if s > 0 else zero for s in E.influence_steps])
    b_g, b_i, k_g, k_i = _budgets(E, G, I_at, P, steps, refs, dtype)
    e_g = _rel(E.gradients, G)
    e_i = 0.0 if E.influence is None else _rel(E.influence, I_at)
    within = e_g <= b_g and e_i <= b_i
    # DESIGN "Numerical policy": exactness is judged against the predicted budget; the 1e-12 target is for
    # well-conditioned sums. An unbiased estimator whose patterns cancel strongly (kappa_noise >> 1: e.g. a
    # normalizer of another step) may exceed the target within its budget -- no evidence of bias, not a FAIL
    ok = within and (max(e_g, e_i) <= TARGET or max(k_g, k_i) > CANCELLING or dtype != torch.float64)
    return {
        "case": case.label,
        "estimator": est.name,
        "steps": steps,
        "patterns": E.patterns,
        "gradient_error": e_g,
        "gradient_budget": b_g,
        "influence_error": e_i,
        "influence_budget": b_i,
        "kappa_noise": max(k_g, k_i),
        "influence_compared": E.influence is not None,
        "within_budget": within,
        "passed": ok,
        "dtype": str(dtype).replace("torch.", ""),
    }


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    num = float(torch.linalg.vector_norm(a - b))
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)
