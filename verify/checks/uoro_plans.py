"""Planners of the statistical UORO claims (``rnn-verify run --plan``; registered with their checks, ``register(...,
plan=...)`` in :mod:`verify.checks.uoro_statistics` and :mod:`verify.checks.uoro_variance`).

Each planner sets up what its check sets up -- the same fixture problems, the implementation under test with the
same hyperparameters, the same error rates and generator -- and runs a short pilot of it
(:mod:`verify.uoro.planning`): the unbiasedness claims get the draws the sample-size planner asks for
(:mod:`verify.stats.planner`, the ``samples_planned`` of the check), the others their fixed draws; the seconds are
those draws at the speed the pilot measured. Not counted: the negative controls (the toolkit's mutants, as fast
as the toolkit), the float64 references and the statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from theory.claims.uoro_statistics import VARIANCE_CONTROL_BETA
from verify.checks import ClaimPlan
from verify.checks.uoro_common import alpha_of, options, uoro_under_test
from verify.config import RunConfig
from verify.estimators.uoro import UORO
from verify.impl import build, part_label
from verify.impl.capabilities import Coverage, cover
from verify.stats import TestOptions
from verify.uoro.cases import Case, problem_case
from verify.uoro.normalizers import FixtureSetup
from verify.uoro.planning import Pilot, draws_pilot, timed_pilot, unbiased_pilot

__all__ = [
    "plan_preactivation",
    "plan_rank_unbiased",
    "plan_rank_variance",
    "plan_reinforce_link",
    "plan_truncated_unbiased",
    "plan_unbiased_statistical",
    "plan_variance_growth",
    "plan_variance_matches",
    "prop1_cells",
    "variance_setup",
]

_NOT_COUNTED = "controls, references and statistics not counted"


def _plan(claim_id: str, what: str, pilots: Sequence[Pilot]) -> ClaimPlan:
    """The claim's plan from the pilots of its pieces: draws and seconds summed, the basis in words. A planned
    piece is expected to stop near half its fixed-sample plan (:attr:`~verify.uoro.planning.Pilot.expected_draws`:
    the seconds), and may draw all of it (the upper end of the range)."""
    draws = sum(p.draws for p in pilots)
    step_us = max(p.per_draw / max(p.steps, 1) for p in pilots) * 1e6
    planned = any(p.planned for p in pilots)
    expected = sum(p.expected_draws for p in pilots)
    how = (
        f"draws planned (fixed-sample plan); the sequential test expected to stop at about {expected:,} "
        "(it is tuned to certify a correct estimator near half the plan), at most the plan"
        if planned
        else "fixed draws"
    )
    basis = f"measured: pilot of {what}, up to {step_us:.3g} us per sample-step; {how}; {_NOT_COUNTED}"
    return ClaimPlan(
        claim_id,
        sum(p.expected_seconds for p in pilots),
        basis,
        draws=draws,
        measured=True,
        pilot_seconds=sum(p.pilot_seconds for p in pilots),
        pieces=tuple(p.as_dict() for p in pilots),
        upper=sum(p.seconds for p in pilots) if planned else None,
    )


# the checks' sizes (the check modules import this one: these mirror them; tests/cli/test_plan.py holds them equal)
def prop1_cells(config: RunConfig) -> list[tuple[str, int, int]]:
    """``uoro.unbiased-statistical``'s problems (``verify.checks.uoro_statistics._prop1_cells``)."""
    if config.full:
        return [("elman-tanh", 4, 64), ("lstm", 2, 64), ("gru", 4, 64)]
    return [("elman-tanh", 4, 16), ("lstm", 2, 16), ("gru", 2, 32)]


def variance_setup(config: RunConfig) -> FixtureSetup:
    """``uoro.variance-matches-algorithm-1``'s fixture setup (``verify.checks.uoro_variance.VARIANCE_SETUP``)."""
    return (
        FixtureSetup((3, 6), (20_000, 200_000), VARIANCE_CONTROL_BETA)
        if config.full
        else FixtureSetup((3, 5), (3000, 20_000), VARIANCE_CONTROL_BETA)
    )


def _steps(T: int) -> tuple[int, ...]:
    return tuple(sorted({2, (T + 1) // 2 + 1, T}))


def prop1_runs(config: RunConfig) -> tuple[list[tuple[Case, Any, tuple[int, ...], tuple[int, ...]]], Coverage]:
    """``uoro.unbiased-statistical``'s runs (problem, estimator, gradient steps, influence steps) on the problems the
    implementation under test supports, and the :class:`~verify.impl.capabilities.Coverage`; NotApplicable when
    it supports none. The influence is tested at t = T (the longest chain)."""
    runs = []
    for i, (kind, n, T) in enumerate(prop1_cells(config)):
        case = problem_case(kind, n, T, config.seed, 410 + i)
        runs.append((case, uoro_under_test(config, "uoro.unbiased-statistical"), _steps(T), (T,)))
    return cover("uoro.unbiased-statistical", runs, lambda r: (r[0].label, r[1], r[0].problem, r[0].theta))


def plan_unbiased_statistical(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.unbiased-statistical``: the planner's draws per problem it covers (Elman-tanh, LSTM, GRU)."""
    runs, _ = prop1_runs(config)
    opts, gen, pilots = options(config, "uoro.unbiased-statistical", split=len(runs)), config.generator(401), []
    for case, est, steps, infl in runs:
        pilots.append(unbiased_pilot(case.label, est, case, steps, infl, opts, gen, budget_s / len(runs)))
    return _plan("uoro.unbiased-statistical", part_label(config.impls.uoro.uoro), pilots)


def plan_truncated_unbiased(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.truncated-unbiased``: UORO-T (blocks of 4) on the check's Elman-tanh problem."""
    n, T, block = (4, 64, 4) if config.full else (4, 16, 4)
    est = uoro_under_test(config, "uoro.truncated-unbiased (UORO-T)", block=block)
    case = problem_case("elman-tanh", n, T, config.seed, 420)
    bounds = (block * (T // 2 // block), T)
    pilot = unbiased_pilot(
        case.label,
        est,
        case,
        (2, 3, T),
        bounds,
        options(config, "uoro.truncated-unbiased"),
        config.generator(401),
        budget_s,
    )
    return _plan("uoro.truncated-unbiased", f"UORO-T (block {block})", [pilot])


def plan_rank_unbiased(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.rank-unbiased``: rank-r UORO on the check's Elman-tanh problem."""
    n, T, r = (4, 64, 8) if config.full else (4, 16, 4)
    est = uoro_under_test(config, "uoro.rank-unbiased (rank-r UORO)", rank=r)
    case = problem_case("elman-tanh", n, T, config.seed, 430)
    pilot = unbiased_pilot(
        case.label, est, case, _steps(T), (T,), options(config, "uoro.rank-unbiased"), config.generator(401), budget_s
    )
    return _plan("uoro.rank-unbiased", f"rank-{r} UORO", [pilot])


def plan_preactivation(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.preactivation``: the planned unbiasedness draws, then the fixed draws of the variance ratio."""
    n, T, draws = (4, 64, 20_000) if config.full else (4, 16, 4000)
    case = problem_case("elman-tanh", n, T, config.seed, 450)
    base = options(config, "uoro.preactivation")
    opts = TestOptions(
        alpha=alpha_of(config, "uoro.preactivation") / 2, beta=float(config.option("beta", 1e-3)), delta=base.delta
    )
    est = build(config.impls.uoro.preactivation, "uoro.preactivation")
    gen = config.generator(451)
    pilots = [
        unbiased_pilot(case.label, est, case, (2, 3, T), (T,), opts, gen, budget_s / 2),
        draws_pilot("variance ratio: preactivation", est, case, draws, config.generator(452), budget_s / 4),
        draws_pilot("variance ratio: toolkit UORO", UORO(), case, draws, config.generator(452), budget_s / 4),
    ]
    return _plan("uoro.preactivation", part_label(config.impls.uoro.preactivation), pilots)


def plan_rank_variance(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.rank-variance``: fixed draws per rank."""
    n, T, draws = (4, 8, 10_000) if config.full else (3, 5, 1500)
    ranks = (1, 2, 4, 8) if config.full else (1, 2, 4)
    case = problem_case("elman-tanh", n, T, config.seed, 440)
    pilots = [
        draws_pilot(
            f"rank {r}",
            build(config.impls.uoro.uoro, "uoro.rank-variance (rank-r UORO)", rank=r),
            case,
            draws,
            config.generator(441),
            budget_s / len(ranks),
        )
        for r in ranks
    ]
    return _plan("uoro.rank-variance", f"rank-r UORO, r in {ranks}", pilots)


def plan_variance_growth(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.variance-growth``: fixed draws per state size, and the measurement checked against enumeration."""
    ns = (2, 4, 8, 16, 32) if config.full else (2, 4, 8, 16)
    T, draws = (20, 4000) if config.full else (8, 800)
    est = uoro_under_test(config, "uoro.variance-growth")
    pilots = [
        draws_pilot(
            f"n={n}",
            est,
            problem_case("elman-tanh", n, T, config.seed, 460 + i),
            draws,
            config.generator(461),
            budget_s / (len(ns) + 1),
        )
        for i, n in enumerate(ns)
    ]
    small = problem_case("elman-tanh", 2, 6, config.seed, 469)
    pilots.append(
        draws_pilot("vs exact enumeration", est, small, 4000, config.generator(462), budget_s / (len(ns) + 1))
    )
    return _plan("uoro.variance-growth", part_label(config.impls.uoro.uoro), pilots)


def plan_reinforce_link(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.reinforce-link``: coupled draws with and without the baseline at five σ."""
    from verify.oracles.algorithm1 import step_jacobians

    n, T, draws = (6, 10, 8000) if config.full else (3, 5, 1500)
    sigmas = (0.05, 0.025, 0.0125, 0.00625, 0.003125)
    case = problem_case("elman-tanh", n, T, config.seed, 470)
    P, th = case.problem, case.theta
    jac = step_jacobians(P, th)
    gen = config.generator(471)
    part = config.impls.uoro.reinforce
    pilots = []
    for baseline in (True, False):
        est = build(part, "uoro.reinforce-link", sigmas[0], baseline=baseline)

        def draw(m: int, est: object = est) -> object:
            return est.sample(P, th, m, gen, jac)  # type: ignore[attr-defined]

        label = f"{'with' if baseline else 'without'} baseline, {len(sigmas)} sigmas"
        pilots.append(timed_pilot(label, draw, draws * len(sigmas), len(sigmas), T, budget_s / 2))
    return _plan("uoro.reinforce-link", part_label(part), pilots)


def plan_variance_matches(config: RunConfig, budget_s: float) -> ClaimPlan:
    """``uoro.variance-matches-algorithm-1``: the fixture's draws of the UORO under test (the fixture is found
    by exact enumeration, part of the pilot)."""
    from verify.uoro.normalizers import variance_fixture

    fx = variance_fixture(config.seed, variance_setup(config), alpha_of(config, "uoro.variance-matches-algorithm-1"))
    est = build(config.impls.uoro.uoro, "uoro.variance-matches-algorithm-1")
    pilot = draws_pilot(fx.case.label, est, fx.case, fx.draws, torch.Generator().manual_seed(config.seed), budget_s)
    return _plan("uoro.variance-matches-algorithm-1", part_label(config.impls.uoro.uoro), [pilot])
