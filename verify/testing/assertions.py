r"""User-facing assertions for stochastic gradient estimators (pytest / hypothesis).

* :func:`assert_unbiased` -- the statistical gate of :mod:`verify.stats.unbiased`
  applied to any estimator under the contract of :mod:`verify.estimators.base`:
  draws M independent noise samples of the estimate of :math:`\partial\ell_t/\partial\theta`
  (several t), of the total gradient :math:`\sum_t\tilde g_t`, and optionally of the
  influence matrices :math:`\partial s_t/\partial\theta`, and compares their means with
  the float64 references (Tallec & Ollivier, Prop. 1). Raises ``AssertionError``
  on FAIL (bias detected; false-fail rate ≤ α) and, unless
  ``allow_inconclusive=True``, when the budget runs out; returns the
  :class:`~verify.stats.unbiased.UnbiasednessResult` (certified bound δ·‖g‖ at
  1 − β) on PASS.
* :func:`unbiasedness_property` -- a hypothesis property test over generated
  problems (:func:`verify.testing.strategies.problems`): every example must not FAIL; α
  is split over the examples (Bonferroni), so the whole property test has
  false-fail rate ≤ α.

Worked example (a hand-written UORO; see the README section "Checking your own
estimator")::

    from verify.testing.assertions import assert_unbiased, unbiasedness_property
    from verify.testing.strategies import random_problem, problems

    problem, theta = random_problem("elman-tanh", n=3, d=2, T=5, generator=torch.Generator().manual_seed(0))
    assert_unbiased(MyUORO(), problem, theta, delta=0.05)

    test_my_uoro_everywhere = unbiasedness_property(MyUORO(), problems(cells=("elman-tanh", "gru"), max_n=3, max_T=5))
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verify._validate import require_positive_int, require_probability
from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator
from verify.estimators.online import ContractViolation, check_contract
from verify.estimators.sampling import (
    QUANTITIES,
    InfluenceFn,
    check_steps,
    default_steps,
    estimator_sampler,
    reference_truths,
)
from verify.model.problem import Problem
from verify.stats.moments import empty_moments, update_moments
from verify.stats.unbiased import (
    TestOptions,
    UnbiasednessResult,
    plan_quantity,
    planned_test,
    sequential_test,
    validate_seed,
)
from verify.testing.strategies import ProblemCase, problems

__all__ = [
    "QUANTITIES",
    "UnbiasednessPlan",
    "assert_unbiased",
    "default_steps",
    "estimator_sampler",
    "plan_unbiased",
    "reference_truths",
    "unbiasedness_property",
]


def _contract_first(estimator: OnlineEstimator, problem: Problem, theta: torch.Tensor) -> None:
    """The estimator contract before any statistics, so that a dtype, device, shape or purity mistake is named as such.

    (A float32 estimate on a float64 problem, an impure step or a wrong shape would
    otherwise surface as "bias".) Raises :class:`~verify.errors.InvalidArgument` naming
    the estimator and the violated property.
    """
    try:
        check_contract(estimator, problem, theta, samples=2, steps=min(3, problem.T))
    except ContractViolation as exc:
        name = getattr(estimator, "name", type(estimator).__name__)
        reason = f"violates the online-estimator contract (checked before any statistics): {exc}"
        raise InvalidArgument("estimator", name, reason) from None


def _setup(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    quantity: str | Sequence[str],
    steps: Sequence[int] | None,
    seed: int,
    influence: InfluenceFn | None,
) -> tuple[Callable[[int, torch.Generator], Any], list[str], list[torch.Tensor], torch.Generator]:
    """Shared by :func:`assert_unbiased` and :func:`plan_unbiased`: validated arguments, the estimator's
    sampler (after the contract check), the float64 truths and the seeded generator."""
    quantities = (quantity,) if isinstance(quantity, str) else tuple(quantity)
    if not quantities:
        raise InvalidArgument("quantity", quantity, f"choose one or more of {QUANTITIES}")
    seed = validate_seed("seed", seed)
    theta = problem.check_theta(theta)
    ts = check_steps(steps, problem.T)
    sampler, names = estimator_sampler(estimator, problem, theta, steps=ts, quantities=quantities, influence=influence)
    _contract_first(estimator, problem, theta)
    truths = reference_truths(problem, theta, ts, quantities)
    return sampler, names, truths, torch.Generator().manual_seed(seed)


def assert_unbiased(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    *,
    quantity: str | Sequence[str] = ("gradient", "total"),
    steps: Sequence[int] | None = None,
    alpha: float = 1e-3,
    beta: float = 1e-3,
    delta: float = 0.02,
    max_samples: int = 200_000,
    seed: int = 0,
    method: str = "sequential",
    allow_inconclusive: bool = False,
    influence: InfluenceFn | None = None,
    options: TestOptions | None = None,
    event_floor: float | None = None,
    draw_radius: float | None = None,
) -> UnbiasednessResult:
    r"""Assert that ``estimator`` is unbiased on ``problem`` at frozen θ (Tallec & Ollivier, Prop. 1).

    .. math:: E\,\tilde g_t = \partial\ell_t/\partial\theta,\quad
              E\sum_t\tilde g_t = \nabla_\theta L,\quad
              E\,\widetilde{\partial s_t/\partial\theta} = \partial s_t/\partial\theta

    ``quantity``: any of ``"gradient"`` (at ``steps``, default :func:`default_steps`),
    ``"total"``, ``"influence"`` (needs ``estimator.influence_estimate(problem, state)``
    or ``influence=``). ``method``: ``"sequential"`` (anytime-valid, stops early) or
    ``"fixed"`` (pilot + planned size). Error rates: FAIL for an unbiased estimator
    with probability ≤ ``alpha``; a PASS certifies ‖E ĝ − g‖ < ``delta``·‖g‖ for
    every quantity with probability ≥ 1 − ``beta``. A deviation within the round-off
    budget of the draws and of the float64 truth (:mod:`verify.stats.roundoff`) is
    never called bias; a variance absurd for the mean it estimates (certifying δ would
    need ≥ 10³ × ``max_samples`` draws) is INCONCLUSIVE with the reason "variance anomaly".
    Raises ``AssertionError`` on FAIL (naming its evidence), and on INCONCLUSIVE unless
    ``allow_inconclusive``; ``InvalidArgument`` on bad input (α, β ∉ (0, 1), δ ≤ 0, a
    ``seed`` outside [0, :data:`~verify._validate.MAX_SEED`] (the CLI's ``--seed`` limit), an
    estimate with NaN or the wrong shape, a quantity whose exact value is the zero vector).

    What the estimator declares about its draws (:class:`~verify.stats.TestOptions`): ``event_floor`` (default:
    the estimator's own ``event_floor`` attribute, as the toolkit's UORO states it, else nothing) and
    ``draw_radius``. Without a declaration a coordinate or direction that shows no variation over the draws is
    never taken for deterministic: it is neither certified nor evidence of bias (INCONCLUSIVE, with the reason).
    """
    opts = _declared(
        options
        or TestOptions(alpha=require_probability("alpha", alpha), beta=require_probability("beta", beta), delta=delta),
        estimator,
        event_floor,
        draw_radius,
    )
    if method not in ("sequential", "fixed"):
        raise InvalidArgument("method", method, "must be 'sequential' or 'fixed'")
    require_positive_int("max_samples", max_samples, minimum=2)
    sampler, names, truths, gen = _setup(estimator, problem, theta, quantity, steps, seed, influence)
    res = _unbiasedness_test(method, sampler, truths, opts, gen, max_samples, names)
    label = getattr(estimator, "name", type(estimator).__name__)
    if res.failed:
        raise AssertionError(f"{label} is biased on {problem.describe()}: {res.summary()}")
    if not res.passed and not allow_inconclusive:
        raise AssertionError(f"{label}: unbiasedness not established on {problem.describe()}: {res.summary()}")
    return res


def _declared(
    opts: TestOptions, estimator: object, event_floor: float | None, draw_radius: float | None
) -> TestOptions:
    """``opts`` with the estimator's declarations: the arguments, else its ``event_floor`` attribute."""
    own = getattr(estimator, "event_floor", None)
    if event_floor is None and isinstance(own, (int, float)) and not isinstance(own, bool):
        event_floor = float(own)
    return dataclasses.replace(
        opts,
        event_floor=opts.event_floor if opts.event_floor is not None else event_floor,
        draw_radius=opts.draw_radius if opts.draw_radius is not None else draw_radius,
    )


def _unbiasedness_test(
    method: str,
    sampler: Callable[[int, torch.Generator], Any],
    truths: list[torch.Tensor],
    opts: TestOptions,
    gen: torch.Generator,
    max_samples: int,
    names: list[str],
) -> UnbiasednessResult:
    """The sequential test, or the planned fixed-sample test, on ``min(2000, max_samples)`` first draws."""
    first = min(2000, max_samples)
    if method == "sequential":
        res = sequential_test(
            sampler, truths, options=opts, generator=gen, max_samples=max_samples, first=first, names=names
        )
    else:
        res = planned_test(
            sampler, truths, options=opts, generator=gen, max_samples=max_samples, pilot=first, names=names
        )
    return res


def unbiasedness_property(
    estimator: OnlineEstimator,
    cases: st.SearchStrategy[ProblemCase] | None = None,
    *,
    quantity: str | Sequence[str] = ("gradient", "total"),
    alpha: float = 1e-3,
    beta: float = 1e-3,
    delta: float = 0.05,
    max_samples: int = 50_000,
    examples: int = 10,
    require_pass: bool = False,
) -> Callable[[], None]:
    """A hypothesis property test: ``estimator`` is not detectably biased on any generated problem.

    ``cases``: a strategy of :class:`~verify.testing.strategies.ProblemCase` (default: small
    Elman-tanh, LSTM and GRU problems, squared error). Each example runs
    :func:`assert_unbiased` at level α/``examples`` (Bonferroni: the whole property
    test FAILs a correct estimator with probability ≤ α) with the example's seed,
    so a failure replays exactly. With ``require_pass`` every example must also
    reach a PASS certificate; otherwise INCONCLUSIVE examples are accepted (only
    detected bias fails). Assign the result to a ``test_*`` name in a test module.
    """
    examples = require_positive_int("examples", examples)
    alpha = require_probability("alpha", alpha)
    strategy = (
        cases
        if cases is not None
        else problems(cells=("elman-tanh", "lstm", "gru"), losses=("squared-error",), max_n=3, max_d=2, max_T=5)
    )
    per_alpha = alpha / examples  # Bonferroni over the examples

    @settings(max_examples=examples, deadline=None)
    @given(strategy)
    def test_unbiased_on_generated_problems(case: ProblemCase) -> None:
        P, th = case.problem, case.theta
        ts = default_steps(P.T)
        truths = reference_truths(P, th, ts, (quantity,) if isinstance(quantity, str) else tuple(quantity))
        assume(all(float(torch.linalg.vector_norm(g)) > 1e-8 for g in truths))  # relative bound undefined at 0
        assert_unbiased(
            estimator,
            P,
            th,
            quantity=quantity,
            steps=ts,
            alpha=per_alpha,
            beta=beta,
            delta=delta,
            max_samples=max_samples,
            seed=case.seed,
            allow_inconclusive=not require_pass,
        )

    return test_unbiased_on_generated_problems


@dataclass(frozen=True)
class UnbiasednessPlan:
    """What :func:`assert_unbiased` would cost, from a pilot: draws per quantity and the time they take.

    ``samples``: the fixed-sample plan (the largest over the quantities; ``None`` when a pilot's second
    moments overflow float64 -- then no size certifies δ). The sequential test usually stops at about
    half of it for a correct estimator. ``seconds``: ``samples`` × the pilot's time per draw.
    """

    samples: int | None
    seconds: float | None
    seconds_per_draw: float
    pilot: int
    delta: float
    alpha: float
    beta: float
    quantities: tuple[tuple[str, int | None, float], ...]
    """(name, planned draws, tr Σ / ‖g‖²) per quantity."""
    caveats: tuple[str, ...] = ()
    """What the pilot could not resolve, per quantity ("name: ..."): the plan is then a lower bound (issue 22)."""

    def summary(self) -> str:
        def count(k: int | None) -> str:
            return "overflow" if k is None else (str(k) if k < 10**9 else f"{k:.3g}")

        per = ", ".join(f"{n}: {count(s)} (tr S/||g||^2 = {r:.3g})" for n, s, r in self.quantities)
        if self.samples is None:
            head = "no sample size certifies delta: the pilot's second moments overflow float64 (variance anomaly)"
        else:
            assert self.seconds is not None
            head = (
                f"plan: {count(self.samples)} draws for delta={self.delta:g} at alpha={self.alpha:g}, "
                f"beta={self.beta:g} "
                f"(~{self.seconds:.3g} s at {self.seconds_per_draw * 1e3:.3g} ms/draw; the sequential test "
                "usually stops at about half)"
            )
        out = f"{head}; pilot {self.pilot} draws; {per}"
        if self.caveats:
            out += "; the plan is a lower bound: " + "; ".join(self.caveats)
        return out


def plan_unbiased(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    *,
    quantity: str | Sequence[str] = ("gradient", "total"),
    steps: Sequence[int] | None = None,
    alpha: float = 1e-3,
    beta: float = 1e-3,
    delta: float = 0.02,
    pilot: int = 1000,
    seed: int = 0,
    influence: InfluenceFn | None = None,
    event_floor: float | None = None,
    draw_radius: float | None = None,
) -> UnbiasednessPlan:
    r"""Plan-only mode of :func:`assert_unbiased`: how many draws, and how long, before running it.

    Same arguments and checks as :func:`assert_unbiased` (the estimator contract first); then ``pilot``
    draws, timed, and per quantity the fixed-sample planner
    :func:`verify.stats.planner.plan_from_pilot` (:math:`M = \lceil((a_\gamma + a_\beta)/(\delta\|g\|))^2\rceil`
    on the pilot's covariance, inflated by its uncertainty; α, β split over the quantities as the tests do;
    at least ``min_samples`` = 1000, the PASS premise).
    Nothing is decided: the result says what certifying ``delta`` would take. A pilot that cannot resolve
    the tail (no variation in a coordinate or direction not declared deterministic, one draw dominating the
    scatter) says so: the plan is then a lower bound (``caveats``; issue 22).
    """
    opts = _declared(
        TestOptions(alpha=require_probability("alpha", alpha), beta=require_probability("beta", beta), delta=delta),
        estimator,
        event_floor,
        draw_radius,
    )
    require_positive_int("pilot", pilot, minimum=2)
    sampler, names, truths, gen = _setup(estimator, problem, theta, quantity, steps, seed, influence)
    t0 = time.perf_counter()
    out = sampler(pilot, gen)
    spd = (time.perf_counter() - t0) / pilot
    draws = list(out) if isinstance(out, (list, tuple)) else [out]
    J = len(truths)
    rows: list[tuple[str, int | None, float]] = []
    caveats: list[str] = []
    for name, x, g in zip(names, draws, truths, strict=True):
        gnorm = float(torch.linalg.vector_norm(g))
        overflow = bool(torch.isinf(x).any()) and not bool(torch.isnan(x).any())  # NaN: an error, named below
        empty = empty_moments(g.numel(), diagonal=g.numel() > opts.dense_max)
        mom = None if overflow else update_moments(empty, x, g, name=f"pilot draws of {name}")
        if mom is None or not bool(torch.isfinite(mom.scatter).all()):
            rows.append((name, None, math.inf))
            continue
        a, b, miss = opts.alpha / J, opts.beta / J, opts.miss_rate / J
        plan = plan_quantity(mom, g.to(torch.float64), gnorm, opts, a, b, miss, opts.min_samples)
        rows.append((name, plan.samples, plan.trace / gnorm**2))
        if plan.caveat:
            caveats.append(f"{name}: {plan.caveat}")
    sizes = [s for _, s, _ in rows]
    samples = None if any(s is None for s in sizes) else max(s for s in sizes if s is not None)
    return UnbiasednessPlan(
        samples, None if samples is None else samples * spd, spd, pilot, opts.delta, opts.alpha, opts.beta, tuple(rows),
        tuple(caveats),
    )  # fmt: skip
