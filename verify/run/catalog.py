"""Run catalog claims: selection by id or glob, timing, and turning errors into verdicts.

A check that raises :class:`~verify.errors.AssumptionViolated` becomes
INCONCLUSIVE with the premise as its reason (never PASS); one that raises
:class:`~verify.errors.NotApplicable` (the implementation under test does not declare
what the claim needs) becomes SKIPPED with the reason; any other exception in a
check is a FAIL naming the exception -- a crashed check must not let a CI gate through.
Every result names the implementation under test of the parts its check uses
(``CheckResult.implementation``).

:func:`run_claims` runs claims in this process or, with ``workers > 1``, in that
many worker processes (``spawn``; each gets :data:`THREADS_PER_PROCESS` torch
thread, as does this process when it runs checks serially; never more processes than CPUs available or claims
to run; the longest claims start first, :func:`longest_first`) -- the sweep's
process-pool executor (:mod:`verify.run.sweep.executors`): a worker killed mid-check is
replaced and its claim rerun --, or on any sweep executor (``executor=``, e.g. Dask). Results
always come back in catalog order. When the run is stopped (Ctrl-C, or SIGTERM/SIGHUP
turned into an exception by the CLI) the worker processes are terminated and
reaped before the exception goes on (:func:`verify.run.sweep.executors.stop_processes`), so none outlives
it. ``skip`` turns chosen claims
into SKIPPED results with a reason without running them (e.g. the ``device``
claims when CUDA was asked for and is absent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from theory.catalog import Claim
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.run.check import THREADS_PER_PROCESS, claim_params, run_check, skipped_result, torch_threads
from verify.run.plan import RECORDED_SECONDS, claim_timeout
from verify.run.pool import IsolatedPool
from verify.run.sweep.cache import code_version
from verify.run.sweep.cells import SweepCell
from verify.run.sweep.executors import available_cpus
from verify.text import safe_str
from verify.verdict import CheckResult, Verdict

__all__ = [
    "EXPECTED_SECONDS",
    "MAXFAIL_REASON",
    "SHARED_WORK",
    "claim_time_limit",
    "isolated_pool",
    "longest_first",
    "run_claims",
    "run_on_executor",
]

Progress = Callable[[str, Claim, CheckResult | None], None]


def run_claims(
    claims: Sequence[Claim],
    config: RunConfig | Mapping[str, RunConfig],
    progress: Progress | None = None,
    *,
    workers: int = 1,
    skip: Mapping[str, str] | None = None,
    executor: Any = None,
    isolate: bool = False,
    maxfail: int | None = None,
) -> list[CheckResult]:
    """Run ``claims``, calling ``progress("start"|"done", claim, result)``; results in catalog order.

    ``config`` is one :class:`RunConfig` for every claim or a mapping claim id ->
    config. ``workers > 1`` runs checks in up to that many processes (capped at the
    CPUs available and at the number of claims to run). ``skip`` maps claim ids to
    the reason they are reported SKIPPED without running. ``maxfail`` (``-x``,
    ``--maxfail N``): after that many FAILs no claim is started; those not run are SKIPPED
    :data:`MAXFAIL_REASON` (in parallel, one still running then is stopped and SKIPPED too).
    """
    skip = dict(skip or {})
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgument("workers", workers, "must be an integer >= 1")

    def cfg(claim: Claim) -> RunConfig:
        return config if isinstance(config, RunConfig) else config[claim.id]

    results: dict[str, CheckResult] = {}
    todo = [c for c in claims if c.id not in skip]
    # a user's implementations loaded only in workers (impl_sources without the objects) never run here
    isolate = isolate or any(cfg(c).impl_specs and cfg(c).implementations is None for c in todo)
    parallel = executor is not None or (bool(todo) and isolate) or (workers > 1 and len(todo) > 1)
    with torch_threads(THREADS_PER_PROCESS):
        for claim in claims:  # serially: in catalog order; in parallel: the skipped ones first
            if parallel and claim.id not in skip:
                continue
            if progress:
                progress("start", claim, None)
            if claim.id in skip:
                res = skipped_result(claim, cfg(claim), skip[claim.id])
            elif _reached(results, maxfail):
                res = skipped_result(claim, cfg(claim), MAXFAIL_REASON)
            else:
                res = run_check(claim, cfg(claim))
            results[claim.id] = res
            if progress:
                progress("done", claim, res)
    if parallel and executor is not None:
        run_on_executor(longest_first(todo), cfg, progress, executor, results, maxfail=maxfail)
    elif parallel:
        n = max(1, min(workers, len(todo), _cpus()))
        _run_parallel(longest_first(todo), cfg, progress, n, results, maxfail=maxfail)
    return [results[c.id] for c in claims]


#: why a claim did not run after ``--maxfail`` FAILs (the SKIPPED summary reads "not run: --maxfail reached")
MAXFAIL_REASON = "--maxfail reached"


def _reached(results: Mapping[str, CheckResult], maxfail: int | None) -> bool:
    """Whether ``results`` hold ``maxfail`` FAILs (never, without a ``maxfail``)."""
    return maxfail is not None and sum(r.verdict is Verdict.FAIL for r in results.values()) >= maxfail


def _skip_rest(
    todo: Sequence[Claim],
    cfg: Callable[[Claim], RunConfig],
    progress: Progress | None,
    results: dict[str, CheckResult],
) -> None:
    """Every claim of ``todo`` without a result: SKIPPED :data:`MAXFAIL_REASON`."""
    for claim in todo:
        if claim.id not in results:
            results[claim.id] = skipped_result(claim, cfg(claim), MAXFAIL_REASON)
            if progress:
                progress("done", claim, results[claim.id])


#: expected seconds per claim in the ci profile: the recorded timings ``--plan`` uses (one table,
#: :data:`verify.run.plan.RECORDED_SECONDS`); a scheduling hint only -- the parallel run starts the longest claims
#: first so that no long claim starts last. Claims not listed count as 0.5 s. Results do not depend on the order.
EXPECTED_SECONDS: dict[str, float] = RECORDED_SECONDS["ci"]


def longest_first(claims: Sequence[Claim]) -> list[Claim]:
    """``claims`` ordered by :data:`EXPECTED_SECONDS`, longest first (stable: ties keep catalog order); claims that
    share work (:data:`SHARED_WORK`) stay together, placed by their seconds summed, so that one worker runs them
    early on (none left for the end, when another worker would compute their shared work again rather than idle)."""
    secs = {c.id: EXPECTED_SECONDS.get(c.id, 0.5) for c in claims}
    total: dict[str, float] = {}
    for c in claims:
        if c.id in SHARED_WORK:
            total[SHARED_WORK[c.id]] = total.get(SHARED_WORK[c.id], 0.0) + secs[c.id]

    def key(c: Claim) -> tuple[float, str, float]:
        name = SHARED_WORK.get(c.id)
        return (-(total[name] if name else secs[c.id]), name or "", -secs[c.id])

    return sorted(claims, key=key)


def _cpus() -> int:
    """CPUs this process may run on (:func:`verify.run.sweep.executors.available_cpus`)."""
    return available_cpus()


def _run_parallel(
    todo: Sequence[Claim],
    cfg: Callable[[Claim], RunConfig],
    progress: Progress | None,
    workers: int,
    results: dict[str, CheckResult],
    maxfail: int | None = None,
) -> None:
    """``--workers N`` (or a user's implementations): the claims as sweep cells on isolated worker processes
    (:class:`~verify.run.pool.IsolatedPool`), each with its time limit (:func:`claim_time_limit`)."""
    with isolated_pool(workers, cfg, todo) as executor:
        run_on_executor(todo, cfg, progress, executor, results, maxfail=maxfail)


def claim_time_limit(config: RunConfig, claim_id: str) -> float | None:
    """A claim's time limit in a worker: ``config.timeout`` (0: none) or the plan's default."""
    return claim_timeout(claim_id, config.profile, config.timeout)


def isolated_pool(workers: int, cfg: Callable[[Claim], RunConfig], todo: Sequence[Claim]) -> IsolatedPool:
    """An :class:`IsolatedPool` of ``workers`` processes whose ``claim`` cells get their claim's time limit."""
    by_id = {c.id: c for c in todo}

    def limit(cell: SweepCell) -> float | None:
        claim = by_id.get(str(cell.params.get("claim")))
        return None if claim is None else claim_time_limit(cfg(claim), claim.id)

    def affinity(cell: SweepCell) -> str | None:
        return SHARED_WORK.get(str(cell.params.get("claim")))

    return IsolatedPool(workers, THREADS_PER_PROCESS, timeout_for=limit, affinity_for=affinity)


#: claims whose checks share a computation cached in the process (claim id -> the cache's name): a parallel run
#: sends them to one worker where it can (:class:`~verify.run.pool.IsolatedPool`'s ``affinity_for``), so the
#: computation runs once, not once per worker (the truncation suite's evaluations, 2 s; FPP's KKT path, 1 s; the
#: reference suite's conditioning and BPTT gradients, about 2 s)
SHARED_WORK: dict[str, str] = {
    "truncation.state-bound": "truncation-suite", "truncation.gradient-bound": "truncation-suite",
    "truncation.tbptt-gradient-bound": "truncation-suite", "truncation.rate": "truncation-suite",
    "fpp.kkt-recovery": "fpp-kkt-path", "fpp.prop2-kkt-equivalence": "fpp-kkt-path",
    "reference.adjoint": "reference-suite", "reference.influence": "reference-suite",
    "reference.complex-step": "reference-suite", "reference.finite-difference": "reference-suite",
}  # fmt: skip


def run_on_executor(
    todo: Sequence[Claim],
    cfg: Callable[[Claim], RunConfig],
    progress: Progress | None,
    executor: Any,
    results: dict[str, CheckResult],
    maxfail: int | None = None,
) -> None:
    """Run ``todo`` as ``claim`` cells on a sweep executor (process pool or Dask); fill ``results`` by claim id.
    After ``maxfail`` FAILs the rest is SKIPPED (:func:`run_claims`); the caller closes the executor, which stops
    a cell still running.

    A cell that could not run (its worker died too often, a lost cluster, a worker with other sources) is a
    FAIL naming the cause -- a crashed check must not let a CI gate through. On an interruption the
    executor stops its workers before the exception goes on.
    """
    by_key: dict[str, Claim] = {}
    cells = []
    announce_each = isinstance(executor, IsolatedPool)  # it says when each cell starts; others: all at once
    for claim in todo:
        cell = SweepCell("claim", claim_params(claim, cfg(claim)), label=claim.id)
        by_key[cell.key] = claim
        cells.append(cell)
        if progress and not announce_each:
            progress("start", claim, None)
    if announce_each and progress:
        executor.on_start = lambda cell: progress("start", by_key[cell.key], None)
    code = code_version()
    for cell, out in executor.map_unordered(cells):
        claim = by_key[cell.key]
        if out.get("ok") and out.get("code") == code:
            try:
                res = CheckResult.from_dict(out["value"])
            except InvalidArgument as exc:
                res = _worker_failure(claim, cfg(claim), f"malformed result from the worker: {safe_str(exc)}")
        elif out.get("ok"):
            res = _worker_failure(
                claim, cfg(claim), f"worker {out.get('worker')} runs other rnn-verify sources ({out.get('code')})"
            )
        elif out.get("died"):  # the worker died or ran past its time limit: what the code under test did
            res = _worker_failure(claim, cfg(claim), str(out.get("error") or ""), str(out.get("summary") or ""))
        else:
            res = _worker_failure(claim, cfg(claim), str(out.get("error") or "unknown error"))
        results[claim.id] = res
        if progress:
            progress("done", claim, res)
        if _reached(results, maxfail):
            break
    _skip_rest(todo, cfg, progress, results)


def _worker_failure(claim: Claim, config: RunConfig, why: str, summary: str = "") -> CheckResult:
    first = (why.strip().splitlines() or ["?"])[-1]
    return CheckResult(
        claim.id, Verdict.FAIL, summary or f"worker process failed: {first}", reason=why or summary,
        seed=config.seed, device=config.device,
    )  # fmt: skip
