"""Plan a run before it runs (``rnn-verify run --plan``): per claim what its check would do and how long.

A claim whose check registered a planner (``register(..., plan=fn)``, :func:`verify.checks.planners`) is planned
by a short pilot of the implementation under test (at most :data:`PILOT_SECONDS` of it): the statistical UORO
claims say how many draws the sample-size planner asks for and how long those take at the measured speed
(*measured*). Every other claim gets the time recorded for the toolkit's own implementation in the profile
(:data:`RECORDED_SECONDS`, *recorded*), or 0.5 s where none was recorded (*assumed*); where it exercises a part of
the user's implementation, the basis says that its speed was not measured. Nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from theory.catalog import Claim
from verify import stop
from verify.checks import ClaimPlan, planners, uses
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.run.check import describe_exception, torch_threads

__all__ = [
    "PILOT_SECONDS",
    "RECORDED_SECONDS",
    "RUN_OVERHEAD_S",
    "TIMEOUT_FACTOR",
    "TIMEOUT_FLOOR_S",
    "StepCosts",
    "claim_timeout",
    "plan_claims",
    "plan_document",
    "plan_table",
    "schedule_seconds",
    "step_costs",
]

#: the pilot budget of one claim's planner, seconds
PILOT_SECONDS = 1.0

#: wall seconds per claim of the toolkit's own implementations, as recorded: ``ci`` by ``rnn-verify run --profile
#: ci`` (2 workers) on a 2-core x86 machine shared with other work (torch 2.13, 2026-11-27; load ~5, every time
#: divided by 3.0, the ratio of ``uoro.unbiased-statistical``'s there to its 12.7 s on the quiet machine), ``full``
#: from the published report ``reports/latest`` (``--profile full``, 1 worker). The parallel run starts the longest
#: first (:func:`verify.run.catalog.longest_first`): a stale entry makes a long claim start last. Issue 42 (ci):
#: ``uoro.unbiased-statistical`` scaled by its CPU seconds after/before the cheaper fold and looks (15.4 / 18.8,
#: interleaved fresh processes); ``truncation.tbptt-gradient-bound`` and ``fpp.prop2-kkt-equivalence`` as they run
#: after the claim that computes their shared work on the same worker (:data:`verify.run.catalog.SHARED_WORK`)
RECORDED_SECONDS: dict[str, dict[str, float]] = {
    "ci": {
        "reference.adjoint": 0.8, "reference.influence": 0.7, "reference.complex-step": 0.5,
        "reference.finite-difference": 0.6, "rtrl.exact": 0.6, "rtrl.truncated-bptt": 0.5,
        "rtrl.influence-balancing": 1.0, "rtrl.online-convergence": 1.5, "rtrl.snap-exactness": 0.5,
        "rtrl.rflo-limits": 1.0, "rtrl.eprop-limits": 0.5, "rtrl.bias-alignment": 1.6,
        "uoro.exact-expectation": 0.4, "uoro.kfrtrl-unbiased": 2.2, "uoro.kfrtrl-variance": 0.8,
        "uoro.influence-balancing-learning": 4.2, "uoro.ok-unbiased": 0.3, "uoro.ok-variance": 2.7,
        "uoro.variance-reduction-optimal": 0.6, "uoro.unbiased-statistical": 10.4, "uoro.truncated-unbiased": 3.0,
        "uoro.rank-unbiased": 2.3, "uoro.rank-variance": 0.06, "uoro.preactivation": 2.3,
        "uoro.variance-growth": 0.2, "uoro.reinforce-link": 0.3, "uoro.algorithm-1-conformance": 0.1,
        "uoro.variance-matches-algorithm-1": 0.2, "uoro.mutants-caught": 6.1, "fpp.gradient-eq7": 0.3,
        "fpp.lemma3-unbiased": 0.5, "fpp.stationarity": 2.6, "fpp.kkt-recovery": 1.5,
        "fpp.prop2-kkt-equivalence": 0.7, "fpp.cycleworld-reproduction": 2.2,
        "fpp.cycleworld-accuracy-reproduction": 2.4, "fpp.stochasticworld-reproduction": 1.2,
        "fpp.updates-reproduction": 1.4, "truncation.state-bound": 3.5, "truncation.gradient-bound": 0.6,
        "truncation.tbptt-gradient-bound": 0.9, "truncation.rate": 0.03, "truncation.training-prop2": 2.3,
        "truncation.unstable-counterexample": 0.4, "truncation.gd-divergence": 0.4,
        "truncation.assumption-checker": 0.1, "truncation.figure-1a": 1.0, "device.float32-standin": 0.6,
    },
    "full": {
        "reference.adjoint": 16.3, "reference.influence": 16.5, "reference.complex-step": 13.5,
        "reference.finite-difference": 16.8, "rtrl.exact": 15.4, "rtrl.truncated-bptt": 66.1,
        "rtrl.influence-balancing": 14.8, "rtrl.online-convergence": 89.2, "uoro.exact-expectation": 1.6,
        "uoro.unbiased-statistical": 52.5, "uoro.truncated-unbiased": 9.6, "uoro.rank-unbiased": 11.0,
        "uoro.rank-variance": 4.0, "uoro.preactivation": 11.4, "uoro.variance-growth": 9.1,
        "uoro.reinforce-link": 7.0, "uoro.algorithm-1-conformance": 0.6, "uoro.variance-matches-algorithm-1": 5.8,
        "uoro.mutants-caught": 88.2, "fpp.gradient-eq7": 0.9, "fpp.lemma3-unbiased": 1.2, "fpp.stationarity": 27.8,
        "fpp.kkt-recovery": 5.5, "fpp.prop2-kkt-equivalence": 2.6, "fpp.cycleworld-reproduction": 43.4,
        "fpp.stochasticworld-reproduction": 345.7, "fpp.updates-reproduction": 150.2,
        "truncation.state-bound": 302.6, "truncation.gradient-bound": 1.4, "truncation.tbptt-gradient-bound": 1.8,
        "truncation.rate": 0.4, "truncation.training-prop2": 92.1, "truncation.unstable-counterexample": 0.8,
        "truncation.gd-divergence": 0.8, "truncation.assumption-checker": 0.3, "truncation.figure-1a": 41.4,
        "device.float32-standin": 22.5,
    },
}  # fmt: skip
_ASSUMED = 0.5

#: a claim's default time limit (``run --timeout``): this many times its recorded seconds, and at least
#: :data:`TIMEOUT_FLOOR_S` -- generous, since a user's implementation may be much slower than the toolkit's
#: (a numpy KF-RTRL stepped per draw took 90x the recorded time on a loaded machine and was still correct)
TIMEOUT_FACTOR = 100.0
#: the least default time limit of a claim, seconds
TIMEOUT_FLOOR_S = 900.0


def claim_timeout(claim_id: str, profile: str, given: float | None = None) -> float | None:
    """The time limit of one claim, seconds (None: none): ``given`` (``--timeout``; 0 means none) or
    ``max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * recorded seconds)`` (:data:`RECORDED_SECONDS`, else 0.5 s)."""
    if given is not None:
        return None if given == 0 else float(given)
    recorded = RECORDED_SECONDS.get(profile, {}).get(claim_id, _ASSUMED)
    return max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * recorded)


def _recorded(claim: Claim, config: RunConfig, note: str = "") -> ClaimPlan:
    """The recorded timing of the toolkit's implementation (or the assumed 0.5 s); ``note`` says what else. Where
    the claim exercises an online estimator of the user's, its speed is piloted against the toolkit's
    (:func:`step_costs`): a batch-1 numpy estimator stepped per draw is often 100x slower, and a plan from the
    toolkit's timings alone would say seconds for a run of many minutes (issue 37). With the work the claim asks
    of that part (:mod:`verify.run._sample_steps`: its sample-steps and step calls, counted on the toolkit's run)
    the estimate is the claim's own work -- the recorded time less the toolkit's sampling at its piloted cost
    (at least a tenth of the recorded time) -- plus the user's sampling at the user's piloted cost: step calls x
    the cost per call + sample-steps x the cost per sample-step. Without the counts, a range: the recorded time ..
    recorded x the speed ratio (the user's share of the work unknown)."""
    from verify.run._sample_steps import SAMPLE_STEPS, STEP_CALLS

    sec = RECORDED_SECONDS.get(config.profile, {}).get(claim.id)
    mine = [u for u in uses(claim.id) if u in set(config.impls.user_parts())]
    basis = (
        f"recorded: {config.profile} profile, toolkit's implementation" if sec is not None else "assumed (not recorded)"
    )
    seconds = _ASSUMED if sec is None else sec
    costs = {u: step_costs(config, u) for u in mine if u in ESTIMATOR_PARTS}
    counts = SAMPLE_STEPS.get(config.profile, {}).get(claim.id, {})
    calls = STEP_CALLS.get(config.profile, {}).get(claim.id, {})
    counted = {u: c for u, c in costs.items() if c is not None and u in counts}
    ranged = {u: c.mine / c.theirs for u, c in costs.items() if c is not None and u not in counts}
    untimed = [u for u in mine if costs.get(u) is None]
    if counted:
        theirs = sum(c.sampling(counts[u], calls.get(u, 0), mine=False) for u, c in counted.items())
        ours = sum(c.sampling(counts[u], calls.get(u, 0), mine=True) for u, c in counted.items())
        seconds = max(seconds - theirs, 0.1 * seconds) + ours
        basis += (
            f"; its own work {_fmt_seconds(max(seconds - ours, 0.0))} (recorded less the toolkit's sampling, "
            f"{_fmt_seconds(theirs)} at its piloted cost)"
        )
    for u, c in counted.items():
        n_calls = calls.get(u, 0)
        basis += (
            f"; + {counts[u]:,} sample-steps of your {u} in {n_calls:,} step calls (counted on the toolkit's run) at "
            f"{c.mine * 1e6:.3g} us each + {c.mine_call * 1e6:.3g} us per call (a pilot; the toolkit's "
            f"{c.theirs * 1e6:.3g} us + {c.theirs_call * 1e6:.3g} us)"
        )
    upper = None
    if ranged:  # the share of the claim's work that is the user's sampling is not known: a range
        upper = seconds * max(max(ranged.values()), 1.0)
        speeds = ", ".join(f"your {u} is {r:.3g}x the toolkit's time per sample (a pilot)" for u, r in ranged.items())
        basis += (
            f"; {speeds}: between the recorded time (the user's sampling a small share of the work) and "
            f"{_fmt_seconds(upper)} (all of it)"
        )
    if untimed:
        basis += f"; the speed of your {', '.join(untimed)} is not measured for this claim"
    return ClaimPlan(claim.id, seconds, basis + note, upper=upper)


class StepCosts(NamedTuple):
    """Piloted seconds of an online estimator's ``step``: per sample-step (``mine``: the user's, ``theirs``: the
    toolkit's) and per call, beyond its samples (``mine_call``, ``theirs_call``: a vectorized step's fixed cost)."""

    mine: float
    theirs: float
    mine_call: float = 0.0
    theirs_call: float = 0.0

    def sampling(self, sample_steps: int, calls: int, *, mine: bool) -> float:
        """Seconds of ``sample_steps`` sample-steps in ``calls`` step calls, the user's (``mine``) or the toolkit's."""
        per_sample, per_call = (self.mine, self.mine_call) if mine else (self.theirs, self.theirs_call)
        return sample_steps * per_sample + calls * per_call


#: the parts that are online estimators (their speed is piloted against the toolkit's: :func:`speed_ratio`)
ESTIMATOR_PARTS = (
    "rtrl.rtrl", "rtrl.snap", "rtrl.rflo", "rtrl.eprop", "truncation.tbptt", "uoro.uoro", "uoro.preactivation",
    "uoro.kfrtrl", "uoro.ok",
)  # fmt: skip
#: part name -> (the part object piloted, its costs): a pilot per part object, not per claim
_RATIOS: dict[str, tuple[Any, StepCosts | None]] = {}


def _timed(est: Any, P: Any, th: torch.Tensor, samples: int) -> float:
    from verify.estimators.base import run_estimator

    t0 = time.perf_counter()
    run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=samples)
    return time.perf_counter() - t0


def speed_ratio(config: RunConfig, part: str) -> float | None:
    """How many times slower the user's online estimator ``part`` is than the toolkit's per sample-step
    (:func:`step_costs`); None where the pilot cannot run."""
    costs = step_costs(config, part)
    return None if costs is None else costs.mine / costs.theirs


#: samples of the pilots: the user's estimator (often stepped per sample) and the toolkit's (vectorized: its
#: per-sample cost shows only over thousands of samples, under a fixed cost per step)
PILOT_SAMPLES = {"user": (32, 256), "toolkit": (256, 4096)}


def step_costs(config: RunConfig, part: str) -> StepCosts | None:
    """Seconds per sample-step and per step call of the user's online estimator ``part`` and of the toolkit's
    (:class:`StepCosts`): each runs two sample counts (:data:`PILOT_SAMPLES`) of a small problem both support (the
    load check's cells) after a warm-up, the least of three each. The line through the two: its slope over the
    T steps is the cost per sample-step (the claims draw thousands of samples: a per-sample loop scales with them),
    its intercept over T the cost per call (a vectorized step's fixed cost, which the claims pay once per step
    call however few its samples). None where either cannot be built or run (the plan then says the speed is not
    measured). Cached per part object."""
    obj = config.impls.part(part)
    cached = _RATIOS.get(part)
    if cached is not None and cached[0] is obj:  # the same object (held here: its id cannot be reused)
        return cached[1]
    from verify.estimators.base import run_estimator
    from verify.impl import DEFAULT, build
    from verify.impl.loader import _estimator_args, _supported_problem

    args, kwargs = _estimator_args(part)
    kwargs = {**kwargs, "order": 1} if part == "rtrl.snap" else kwargs
    out: StepCosts | None = None
    try:
        mine, theirs = (build(p, part, *args, **kwargs) for p in (obj, DEFAULT.part(part)))
        P, th = _supported_problem(mine)
        lines = []
        with torch_threads(1):  # as the checks run: one torch thread per process
            for est, (a, b) in ((mine, PILOT_SAMPLES["user"]), (theirs, PILOT_SAMPLES["toolkit"])):
                run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=2)  # warm-up: imports, jit
                small, big = (min(_timed(est, P, th, m) for _ in range(3)) for m in (a, b))  # least of three
                # marginal cost per sample-step; never below a tenth of the average (timing noise at a small slope)
                slope = max((big - small) / ((b - a) * P.T), 0.1 * big / (b * P.T), 1e-9)
                lines.append((slope, max(small / P.T - slope * a, 0.0)))
        out = StepCosts(lines[0][0], lines[1][0], lines[0][1], lines[1][1])
    except Exception as exc:  # a pilot that cannot run: the plan says the speed is not measured
        stop.reraise_if_stopped(exc)
    _RATIOS[part] = (obj, out)
    return out


def plan_claims(
    claims: Sequence[Claim], config: RunConfig, skip: Mapping[str, str] | None = None, budget_s: float = PILOT_SECONDS
) -> list[ClaimPlan]:
    """The plan of every claim in ``claims`` (catalog order): a pilot where the check has a planner, else the
    recorded timing; a claim in ``skip`` (or one its planner finds not applicable) is 0 s with the reason."""
    skip = dict(skip or {})
    fns = planners()
    out = []
    with torch_threads(1):  # as the checks run: one torch thread per process
        for claim in claims:
            if claim.id in skip:
                out.append(ClaimPlan(claim.id, 0.0, f"SKIPPED: {skip[claim.id]}"))
                continue
            fn = fns.get(claim.id)
            if fn is None:
                out.append(_recorded(claim, config))
                continue
            t0 = time.perf_counter()
            try:
                out.append(fn(config, budget_s))
            except NotApplicable as exc:
                out.append(ClaimPlan(claim.id, 0.0, f"SKIPPED: not applicable: {exc}", measured=True))
            except BaseException as exc:  # the pilot broke: say so; the check itself will decide
                stop.reraise_if_stopped(exc)  # only a signal delivered to rnn-verify stops the plan
                why = f"; the pilot raised {describe_exception(exc)} (the run would FAIL or SKIP it)"
                plan = _recorded(claim, config, why)
                out.append(ClaimPlan(claim.id, plan.seconds, plan.basis, pilot_seconds=time.perf_counter() - t0))
    return out


def _fmt_seconds(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


#: seconds a run spends beyond its claims' schedule: start-up, imports, the load check, the workers' start and the
#: report. Measured as the wall time of ``rnn-verify run --impl ... --impl-only`` less its claims' schedule on 2
#: workers (each claim's own wall time, in the run's order), on a quiet 2-core x86_64 machine (torch 2.13,
#: 2026-11-27): 4.7 s (numpy UORO), 6.5 s (numpy KF-RTRL), 7.3 s (torch UORO through vmap)
RUN_OVERHEAD_S = 6.0


def schedule_seconds(plans: Sequence[ClaimPlan], workers: int, upper: bool = False) -> float:
    """The wall seconds of ``plans`` on ``workers`` workers as the run schedules them: in the run's order (the
    recorded time, longest first: :func:`verify.run.catalog.longest_first`), each claim to the first worker free,
    at its planned seconds (``upper``: the upper end of a range)."""
    order = RECORDED_SECONDS["ci"]  # verify.run.catalog.EXPECTED_SECONDS, the run's order
    free = [0.0] * max(workers, 1)
    for p in sorted(plans, key=lambda p: -order.get(p.claim_id, _ASSUMED)):
        i = free.index(min(free))
        free[i] += p.upper if upper and p.upper is not None else p.seconds
    return max(free)


def plan_table(plans: Sequence[ClaimPlan], kinds: Mapping[str, str], workers: int) -> str:
    """The plan as a text table (claim, kind, draws, seconds (est.), basis) and a total: the claims' seconds, and
    the run's wall time (:func:`schedule_seconds` + :data:`RUN_OVERHEAD_S`)."""
    rows = [("claim", "kind", "draws", "seconds (est.)", "basis")]
    for p in plans:
        draws = f"{p.draws:,}" if p.draws is not None else "-"
        est = _fmt_seconds(p.seconds) + (f" .. {_fmt_seconds(p.upper)}" if p.upper is not None else "")
        rows.append((p.claim_id, kinds.get(p.claim_id, "?"), draws, est, p.basis))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]

    def line(r: tuple[str, ...]) -> str:
        cells = [c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(r[:4], widths, strict=True))]
        return "  ".join([*cells, r[4]])

    lines = [line(r) for r in rows]
    total = sum(p.seconds for p in plans)
    top = sum(p.upper if p.upper is not None else p.seconds for p in plans)
    measured = sum(p.seconds for p in plans if p.measured)
    pilots = sum(p.pilot_seconds for p in plans)
    wall, wall_top = (schedule_seconds(plans, workers, upper=u) + RUN_OVERHEAD_S for u in (False, True))
    lines.append(
        f"total: {_fmt_seconds(total)} of checks in one process ({_fmt_seconds(measured)} measured by pilots of the "
        f"implementation under test, the rest recorded or assumed); with {workers} worker(s) the run takes about "
        f"{_fmt_seconds(wall)} (the claims in the run's order on {workers} worker(s), + about "
        f"{RUN_OVERHEAD_S:.0f} s to start, load and write the report); pilots took {pilots:.1f} s"
        + (f"; it may take up to {_fmt_seconds(wall_top)} (the upper ends of the ranges)" if top > total else "")
    )
    return "\n".join(lines)


def plan_document(plans: Sequence[ClaimPlan], kinds: Mapping[str, str], info: Mapping[str, Any]) -> dict[str, Any]:
    """The plan as JSON: ``run`` (``info``), ``claims`` (one record per claim) and ``total_seconds``."""
    claims = [{**p.as_dict(), "kind": kinds.get(p.claim_id, "?")} for p in plans]
    upper = sum(p.upper if p.upper is not None else p.seconds for p in plans)
    workers = int(info.get("workers", 1))
    return {
        "run": dict(info),
        "claims": claims,
        "total_seconds": sum(p.seconds for p in plans),
        "upper_seconds": upper,
        "wall_seconds": schedule_seconds(plans, workers) + RUN_OVERHEAD_S,
        "wall_upper_seconds": schedule_seconds(plans, workers, upper=True) + RUN_OVERHEAD_S,
    }
