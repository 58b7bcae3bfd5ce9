r"""Second moments of the UORO under test against the independent Algorithm 1 (Tallec & Ollivier 2017, Algorithm 1's
normalizers ρ₀, ρ₁; App. A: unbiasedness is invariant to them, so only the variance can tell them apart).

The fixture (:func:`variance_fixture`) is a problem on which the comparison can see the alternatives to the
paper's normalizers in :data:`SEPARATED`: its draws are planned from the exact moments of the squared errors
(:func:`verify.oracles.algorithm1.exact_squared_error_moments`, enumeration over 2^{nT} sign patterns). The
comparison (:func:`compare_to_algorithm1`) is Welch's z on E q and the Mann–Whitney rank test on the law of q,
for the total gradient and g̃_T.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from verify.errors import AssumptionViolated
from verify.estimators.base import OnlineEstimator, run_estimator
from verify.oracles.algorithm1 import (
    NORMALIZERS,
    Rule,
    StepJacobians,
    algorithm1_reference,
    exact_squared_error_moments,
    step_jacobians,
)
from verify.oracles.algorithm1 import gaussian as _gaussian
from verify.oracles.algorithm1 import rademacher as _rademacher
from verify.oracles.bptt import per_step_gradients
from verify.stats import MomentComparison, compare_second_moments, dist, draws_to_separate, squared_errors
from verify.uoro.cases import Case, problem_case

__all__ = [
    "PAPER",
    "SEPARATED",
    "FixtureSetup",
    "VarianceFixture",
    "candidate_q",
    "compare_to_algorithm1",
    "normalizer_alternatives",
    "rank_test",
    "ref_q",
    "variance_fixture",
]

#: the normalizer alternatives a variance run must tell from Algorithm 1's with power 1 - control_beta: the
#: check's negative control (rho1 = 1, mutant uoro.rho1-constant) and the kill table's other near-identical one
SEPARATED = ("rho1 = 1", "rho1 without sqrt")
#: the normalizers of the paper (Algorithm 1) in :data:`~verify.oracles.algorithm1.NORMALIZERS`
PAPER = "paper (Algorithm 1)"


@dataclass(frozen=True)
class FixtureSetup:
    """Sizes of the variance fixture: (n, T) (n·T signs, 2^{nT} patterns enumerated exactly), fewest and most draws
    per side, candidate problems tried before giving up, and the miss probability allowed to each alternative."""

    size: tuple[int, int]
    draws: tuple[int, int]
    control_beta: float
    tries: int = 8


@dataclass(frozen=True)
class VarianceFixture:
    """The problem of ``uoro.variance-matches-algorithm-1``, chosen so the comparison can see its controls.

    ``exact``: E q, Var q of every normalizer rule of :data:`NORMALIZERS` in :data:`SEPARATED` and Algorithm 1's
    (exact enumeration); ``needed``: draws per side to tell each alternative apart with power 1 − β;
    ``draws``: the draws the check takes; ``tried``: candidate problems rejected before this one.
    """

    case: Case
    jac: StepJacobians
    g_tot: torch.Tensor
    g_T: torch.Tensor
    draws: int
    exact: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    needed: dict[str, float]
    tried: int


def _exact_need(
    jac: StepJacobians, g_tot: torch.Tensor, g_T: torch.Tensor, alpha: float, control_beta: float
) -> tuple[dict[str, tuple[tuple[float, ...], tuple[float, ...]]], dict[str, float]]:
    """Exact moments of q under Algorithm 1 and each :data:`SEPARATED` rule, and the draws a Welch test at α/4 needs
    to tell each from Algorithm 1 with power 1 − ``control_beta`` (the better of the two statistics)."""
    ref = exact_squared_error_moments(jac, g_tot, g_T, NORMALIZERS[PAPER])
    exact = {PAPER: (ref.mean, ref.var)}
    needed: dict[str, float] = {}
    for name in SEPARATED:
        alt = exact_squared_error_moments(jac, g_tot, g_T, NORMALIZERS[name])
        exact[name] = (alt.mean, alt.var)
        needed[name] = min(
            draws_to_separate(ref.mean[i], ref.var[i], alt.mean[i], alt.var[i], alpha=alpha / 4, beta=control_beta)
            for i in range(2)
        )
    return exact, needed


@functools.lru_cache(maxsize=8)
def variance_fixture(seed: int, setup: FixtureSetup, alpha: float) -> VarianceFixture:
    """Draw candidate problems (Elman-tanh, inputs × 5) until one lets the test see every :data:`SEPARATED` rule.

    For each candidate the exact second moments of q under Algorithm 1 and under each alternative come from
    :func:`~verify.oracles.algorithm1.exact_squared_error_moments`; the draws a Welch test at α/4 needs to
    reject with power 1 − ``setup.control_beta`` follow from them (:func:`~verify.stats.variance.draws_to_separate`,
    the better of the two statistics). The first candidate whose need fits ``setup.draws`` is used: the
    choice depends on the seed and the toolkit's own oracle only, never on the implementation under test. Where
    the problem drawn first cannot separate the rules (E q within ~1 % of each other: a seed-dependent fixture
    then caught the control only sometimes), another is drawn.
    """
    n, T = setup.size
    floor, cap = setup.draws
    for attempt in range(setup.tries):
        case = problem_case("elman-tanh", n, T, seed, 490 + 1000 * attempt, 5.0)
        jac = step_jacobians(case.problem, case.theta)
        G = per_step_gradients(case.problem, case.theta)
        g_tot, g_T = G.sum(0), G[-1]
        exact, needed = _exact_need(jac, g_tot, g_T, alpha, setup.control_beta)
        if max(needed.values()) <= cap:
            draws = max(floor, math.ceil(max(needed.values())))
            return VarianceFixture(case, jac, g_tot, g_T, draws, exact, needed, attempt)
    raise AssumptionViolated(
        "a fixture whose variance comparison can see its controls (exact enumeration)",
        f"{setup.tries} candidate problems, none separates Algorithm 1's normalizers from {', '.join(SEPARATED)} "
        f"within {cap} draws",
    )


def ref_q(
    fx: VarianceFixture, gen: torch.Generator, rules: tuple[Rule, Rule], *, post: bool = False, law: str = "rademacher"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared errors of the total gradient and of g̃_T under Algorithm 1 with normalizers ``rules`` (ρ₀, ρ₁);
    ``post``: of its post-update variant (g̃ from the updated s̃_t, θ̃_t; unbiased too, another variance);
    ``law``: ν's law, Algorithm 1's random signs or the ``"gaussian"`` variant."""
    jac = fx.jac
    T, n = jac.J_s.shape[0], jac.J_s.shape[1]
    draw = _gaussian if law == "gaussian" else _rademacher
    run = algorithm1_reference(jac, draw(T, fx.draws, 1, n, gen), rho0=rules[0], rho1=rules[1])
    g = run.g_post if post else run.g
    return squared_errors(g.sum(0), fx.g_tot), squared_errors(g[-1], fx.g_T)


def candidate_q(est: OnlineEstimator, fx: VarianceFixture, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared errors of the total gradient and of g̃_T of ``est`` on the fixture (``fx.draws`` draws)."""
    X = run_estimator(est, fx.case.problem, fx.case.theta, gen, samples=fx.draws)
    return squared_errors(X.sum(0), fx.g_tot), squared_errors(X[-1], fx.g_T)


def rank_test(a: torch.Tensor, b: torch.Tensor) -> float:
    """Two-sided Mann–Whitney U p-value for equal laws of the per-draw squared errors (robust to heavy tails)."""
    return dist.mann_whitney_p(a.numpy(), b.numpy())


def compare_to_algorithm1(
    cand: tuple[torch.Tensor, torch.Tensor], ref: tuple[torch.Tensor, torch.Tensor], alpha: float
) -> tuple[bool, list[dict[str, Any]], MomentComparison]:
    """Welch's z on E q and the rank test on the law of q, total gradient and g̃_T (four tests at α/4 each).

    Returns whether any rejects, one row per statistic, and the comparison of the total gradient.
    """
    rows, rejected = [], False
    k = 4  # Welch + rank test, on two statistics: Bonferroni
    first: MomentComparison | None = None
    for label, a, b in (("total gradient", cand[0], ref[0]), ("g~_T", cand[1], ref[1])):
        cmp = compare_second_moments(a, b, alpha=alpha / k)
        pr = rank_test(a, b)
        rej = cmp.pvalue <= alpha / k or pr <= alpha / k
        rejected = rejected or rej
        rows.append({"statistic": label, **cmp.to_data(), "rank_pvalue": pr, "rejected_any": rej})
        first = first or cmp
    assert first is not None
    return rejected, rows, first


def normalizer_alternatives(
    fx: VarianceFixture,
    ref: tuple[torch.Tensor, torch.Tensor],
    gen: Callable[[], torch.Generator],
    alpha: float,
    *,
    post: bool = False,
    law: str = "rademacher",
) -> list[dict[str, Any]]:
    """E q (total gradient) of every alternative to the paper's normalizers relative to ``ref`` (Algorithm 1's),
    each drawn from a fresh ``gen()`` (the same ν for every alternative), and of the other form of g̃ (post-update
    where ``post`` is False, Algorithm 1's where it is True) with the paper's normalizers."""
    rows: list[dict[str, Any]] = []
    forms = [(name, rules, post, law) for name, rules in NORMALIZERS.items() if not name.startswith("paper")]
    forms.append(("g~ in Algorithm 1's order" if post else "g~ post-update", NORMALIZERS[PAPER], not post, law))
    other = "rademacher" if law == "gaussian" else "gaussian"
    forms.append((f"nu {'random signs' if other == 'rademacher' else 'Gaussian'}", NORMALIZERS[PAPER], post, other))
    for name, rules, post_form, law_form in forms:
        q = ref_q(fx, gen(), rules, post=post_form, law=law_form)
        c = compare_second_moments(q[0], ref[0], alpha=alpha)
        rows.append({"normalizers": name, "variance_ratio_vs_paper": c.ratio, "ci": list(c.ratio_ci)})
    return rows
