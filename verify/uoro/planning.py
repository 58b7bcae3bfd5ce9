"""Pilots that plan the statistical UORO claims before they run (``rnn-verify run --plan``).

A pilot is a short, timed run of the implementation under test on the claim's own fixture problem: how long one
draw takes (so a slow implementation -- a Python loop per sample -- shows its cost before the run), and, for the
unbiasedness tests, how many draws the fixed-sample planner asks for (:mod:`verify.stats.planner`, Laurent &
Massart's bound on the pilot's covariance: the ``samples_planned`` the check reports, computed the same way by
:func:`verify.uoro.unbiased.unbiased_family` on the pilot's draws). A pilot is sized to a time budget: a batch of
:data:`PROBE` draws is timed first, then the pilot takes as many draws as the budget allows (at most the check's
first batch).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from verify.estimators.base import OnlineEstimator, run_estimator
from verify.stats import TestOptions
from verify.stats.unbiased import TARGET_SHARE, pilot_plan
from verify.uoro.cases import Case
from verify.uoro.unbiased import declared_options, family_sampler

__all__ = [
    "PROBE",
    "Pilot",
    "draws_pilot",
    "sequential_calls",
    "sequential_look",
    "speed",
    "timed_pilot",
    "unbiased_pilot",
]

#: draws of the first, sizing batch of a pilot
PROBE = 8
#: the sequential test's schedule in the checks (:func:`verify.uoro.unbiased.unbiased_family`): a first batch, then
#: x GROWTH, by at least MIN_STEP draws -- one sampler call per look
FIRST, GROWTH, MIN_STEP = 1000, 1.1, 4000


def sequential_look(draws: int) -> int:
    """The checks' sequential test's first look at or beyond ``draws`` draws (its first batch at least)."""
    m = FIRST
    while m < draws:
        m = max(m + MIN_STEP, math.ceil(m * GROWTH))
    return m


def sequential_calls(draws: int) -> int:
    """Sampler calls (looks) of the checks' sequential test to reach ``draws`` draws."""
    m, calls = min(FIRST, draws), 1
    while m < draws:
        m, calls = max(m + MIN_STEP, math.ceil(m * GROWTH)), calls + 1
    return calls


@dataclass(frozen=True)
class Pilot:
    """One piece of a claim's work: ``draws`` draws of ``steps`` sample-steps each in ``calls`` calls
    (``planned``: the planner's number from the pilot, else fixed by the check), and the speed a pilot measured:
    ``per_call`` seconds per call plus ``per_draw`` seconds per draw (a line through the pilot's timed batches),
    from ``pilot_draws`` draws in ``pilot_seconds``."""

    label: str
    draws: int
    planned: bool
    calls: int
    per_call: float
    per_draw: float
    pilot_draws: int
    pilot_seconds: float
    steps: int

    @property
    def seconds(self) -> float:
        """Estimated seconds of the piece's draws at the measured speed (all the ``draws``)."""
        return self.calls * self.per_call + self.draws * self.per_draw

    @property
    def expected_draws(self) -> int:
        """The draws expected of a correct estimator: a planned piece's sequential test is tuned to certify at
        :data:`~verify.stats.unbiased.TARGET_SHARE` of the fixed-sample plan (its stop on the toolkit's runs:
        0.41-0.63 of the plan), at the first look there; a fixed piece's ``draws``."""
        return sequential_look(math.ceil(TARGET_SHARE * self.draws)) if self.planned else self.draws

    @property
    def expected_seconds(self) -> float:
        """Estimated seconds of :attr:`expected_draws` at the measured speed."""
        n = self.expected_draws
        calls = sequential_calls(n) if self.planned else self.calls
        return calls * self.per_call + n * self.per_draw

    def as_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "draws": self.draws,
            "planned": self.planned,
            "calls": self.calls,
            "seconds_per_call": self.per_call,
            "seconds_per_sample_step": self.per_draw / max(self.steps, 1),
            "pilot_draws": self.pilot_draws,
            "pilot_seconds": self.pilot_seconds,
            "seconds": self.seconds,
            "expected_draws": self.expected_draws,
            "expected_seconds": self.expected_seconds,
        }


def _line(small: tuple[int, float], big: tuple[int, float]) -> tuple[float, float]:
    """``(per_call, per_draw)`` of the line time = per_call + m·per_draw through a small and a big batch."""
    (m1, t1), (m2, t2) = small, big
    per_draw = max((t2 - t1) / (m2 - m1), 0.0) if m2 > m1 else t2 / max(m2, 1)
    return max(t1 - per_draw * m1, 0.0), per_draw


def speed(draw: Callable[[int], object], budget_s: float, most: int = 4000) -> tuple[float, float, int, float]:
    """Time ``draw(m)`` at m = PROBE (the faster of two calls, after an untimed one that warms caches), then at
    4·PROBE, 16·PROBE, ... within ``budget_s``: ``(per_call, per_draw, draws, seconds)``, the line through the
    smallest and the largest batch (a wide spread of m: the line is not at the mercy of one noisy timing)."""
    t_start = time.perf_counter()
    draw(PROBE)
    small = (PROBE, min(_timed(draw, PROBE) for _ in range(2)))
    big, m, drawn = small, PROBE, 3 * PROBE
    # at least one batch of 4·PROBE (a line needs two sizes), more while the budget lasts
    while m < most and (m == PROBE or time.perf_counter() - t_start + 5 * big[1] <= budget_s):
        m = min(most, 4 * m)
        big = (m, _timed(draw, m))
        drawn += m
    per_call, per_draw = _line(small, big)
    return per_call, per_draw, drawn, time.perf_counter() - t_start


def _timed(draw: Callable[[int], object], m: int) -> float:
    t0 = time.perf_counter()
    draw(m)
    return time.perf_counter() - t0


def timed_pilot(
    label: str, draw: Callable[[int], object], draws: int, calls: int, steps: int, budget_s: float
) -> Pilot:
    """The speed of ``draw(m)`` (:func:`speed`) for a fixed-draw piece: ``draws`` draws in ``calls`` calls."""
    a, b, m, sec = speed(draw, budget_s, most=max(draws, 4 * PROBE))
    return Pilot(label, draws, False, calls, a, b, m, sec, steps)


def draws_pilot(
    label: str, est: OnlineEstimator, case: Case, draws: int, gen: torch.Generator, budget_s: float
) -> Pilot:
    """:func:`timed_pilot` of ``est`` run on ``case`` in one call (:func:`~verify.estimators.base.run_estimator`)."""
    P, th = case.problem, case.theta

    def draw(m: int) -> object:
        return run_estimator(est, P, th, gen, samples=m)

    return timed_pilot(label, draw, draws, 1, P.T, budget_s)


def unbiased_pilot(
    label: str,
    est: OnlineEstimator,
    case: Case,
    steps: Sequence[int],
    influence_steps: Sequence[int] | None,
    opts: TestOptions,
    gen: torch.Generator,
    budget_s: float,
) -> Pilot:
    """The draws the check's sequential test plans for ``est`` on ``case`` (:func:`~verify.stats.unbiased.pilot_plan`
    on at most :data:`FIRST` draws of :func:`~verify.uoro.unbiased.family_sampler`, the check's sampling path) and
    their time at the measured speed, in the sequential test's calls.

    With :data:`FIRST` draws from the check's generator the plan is the check's own ``samples_planned``; a pilot
    cut shorter by the budget plans from fewer draws (the planner inflates the pilot's variance by its
    uncertainty). None planned (the moments overflow float64) counts the pilot's draws only.
    """
    sampler, refs, _ = family_sampler(est, case, steps, influence_steps)
    opts = declared_options(opts, est)  # the check's declaration (its plan is the check's own)
    t_start = time.perf_counter()

    def planned(m: int, g: torch.Generator) -> object:  # draws and folds them into moments, as the test does
        return pilot_plan(sampler, refs, options=opts, generator=g, pilot=m)

    a, b, m, _ = speed(lambda k: planned(k, torch.Generator().manual_seed(0)), budget_s / 3, FIRST)
    small = (PROBE, _timed(lambda k: planned(k, torch.Generator().manual_seed(0)), PROBE))
    n_plan = max(4 * PROBE, min(FIRST, int((budget_s / 2 - a) / max(b, 1e-9))))
    t0 = time.perf_counter()
    plan = pilot_plan(sampler, refs, options=opts, generator=gen, pilot=n_plan)  # the check's first draws
    a, b = _line(small, (n_plan, time.perf_counter() - t0))
    draws = plan.samples if plan is not None else n_plan
    sec = time.perf_counter() - t_start
    return Pilot(label, draws, plan is not None, sequential_calls(draws), a, b, m + n_plan, sec, case.problem.T)
