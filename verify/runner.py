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
process-pool executor (:mod:`verify.sweep.executors`): a worker killed mid-check is
replaced and its claim rerun --, or on any sweep executor (``executor=``, e.g. Dask). Results
always come back in catalog order. When the run is stopped (Ctrl-C, or SIGTERM/SIGHUP
turned into an exception by the CLI) the worker processes are terminated and
reaped before the exception goes on (:func:`stop_processes`), so none outlives it. ``skip`` turns chosen claims
into SKIPPED results with a reason without running them (e.g. the ``device``
claims when CUDA was asked for and is absent).
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from theory.catalog import Claim, all_claims
from verify.checks import registry, uses
from verify.errors import AssumptionViolated, InvalidArgument, NotApplicable
from verify.results import CheckResult, RunConfig, Verdict

__all__ = ["run_check", "run_claims", "select_claims", "stop_processes"]

Progress = Callable[[str, Claim, CheckResult | None], None]


def select_claims(patterns: Sequence[str] | None = None, profile: str | None = None) -> list[Claim]:
    """Claims matching any of ``patterns`` (ids or globs such as ``uoro.*``), catalog order.

    With ``profile`` only the claims that run in that profile are kept when no
    explicit pattern is given. Unknown ids raise :class:`InvalidArgument` with the
    nearest matches.
    """
    claims = all_claims()
    if not patterns:
        return [c for c in claims.values() if profile is None or profile in c.profiles]
    chosen: dict[str, Claim] = {}
    split = [p.strip() for pat in patterns for p in pat.split(",") if p.strip()]
    if not split:
        raise InvalidArgument("--claims", list(patterns), "give at least one claim id or glob")
    for pat in split:
        hits = [cid for cid in claims if fnmatch.fnmatchcase(cid, pat)]
        if not hits:
            near = difflib.get_close_matches(pat, list(claims), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(near)}?" if near else "; see `rnn-verify list`"
            raise InvalidArgument("--claims", pat, f"matches no claim id{hint}")
        for cid in hits:
            chosen[cid] = claims[cid]
    return [c for cid, c in claims.items() if cid in chosen]


def run_check(claim: Claim, config: RunConfig) -> CheckResult:
    """Run one claim's check; never raises for a failing or crashing check."""
    from dataclasses import replace

    res = _run_check(claim, config)
    return replace(res, implementation=config.impls.describe(uses(claim.id)))


def _run_check(claim: Claim, config: RunConfig) -> CheckResult:
    checks = registry()
    t0 = time.perf_counter()
    fn = checks.get(claim.id)
    if fn is None:
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            "no check registered for this claim",
            reason="catalog entry without a check",
            seed=config.seed,
        )
    try:
        result = fn(config)
    except NotApplicable as exc:
        return CheckResult(
            claim.id,
            Verdict.SKIPPED,
            f"not applicable to the implementation under test: {exc}",
            reason=str(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    except AssumptionViolated as exc:
        return CheckResult(
            claim.id,
            Verdict.INCONCLUSIVE,
            f"premise not met: {exc}",
            reason=str(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    except (Exception, SystemExit) as exc:  # a crashing check is a failing check; so is sys.exit() in user code
        tb = traceback.format_exc(limit=6)
        what = (
            f"SystemExit({exc.code!r}): code under test called sys.exit(); a check's exit is a FAIL, never the run's "
            "exit status"
            if isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {exc}"
        )
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            f"check raised {what}",
            reason=tb,
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    if result.claim_id != claim.id:
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            f"check returned a result for {result.claim_id!r}",
            reason="mis-registered check",
            seed=config.seed,
        )
    if result.wall_time == 0.0:
        from dataclasses import replace

        result = replace(result, wall_time=time.perf_counter() - t0)
    return result


def _skipped(claim: Claim, config: RunConfig, reason: str) -> CheckResult:
    return CheckResult(
        claim.id, Verdict.SKIPPED, f"not run: {reason}", reason=reason, seed=config.seed, device=config.device
    )


def run_claims(
    claims: Sequence[Claim],
    config: RunConfig | Mapping[str, RunConfig],
    progress: Progress | None = None,
    *,
    workers: int = 1,
    skip: Mapping[str, str] | None = None,
    executor: Any = None,
) -> list[CheckResult]:
    """Run ``claims``, calling ``progress("start"|"done", claim, result)``; results in catalog order.

    ``config`` is one :class:`RunConfig` for every claim or a mapping claim id ->
    config. ``workers > 1`` runs checks in up to that many processes (capped at the
    CPUs available and at the number of claims to run). ``skip`` maps claim ids to
    the reason they are reported SKIPPED without running.
    """
    skip = dict(skip or {})
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgument("workers", workers, "must be an integer >= 1")

    def cfg(claim: Claim) -> RunConfig:
        return config if isinstance(config, RunConfig) else config[claim.id]

    results: dict[str, CheckResult] = {}
    todo = [c for c in claims if c.id not in skip]
    parallel = executor is not None or (workers > 1 and len(todo) > 1)
    with torch_threads(THREADS_PER_PROCESS):
        for claim in claims:  # serially: in catalog order; in parallel: the skipped ones first
            if parallel and claim.id not in skip:
                continue
            if progress:
                progress("start", claim, None)
            if claim.id in skip:
                res = _skipped(claim, cfg(claim), skip[claim.id])
            else:
                res = run_check(claim, cfg(claim))
            results[claim.id] = res
            if progress:
                progress("done", claim, res)
    if parallel and executor is not None:
        run_on_executor(longest_first(todo), cfg, progress, executor, results)
    elif parallel:
        _run_parallel(longest_first(todo), cfg, progress, min(workers, len(todo), _cpus()), results)
    return [results[c.id] for c in claims]


#: torch intra-op threads of a process that runs checks (this one serially, each worker in parallel). The
#: checks' tensors are small (n <= 64): a second thread gains ~15 % on a quiet machine, while OpenMP's
#: spin-waiting threads stall whenever a core is taken by another process -- on a 2-core machine with one
#: CPU-bound neighbour three claims took 61 s with 2 threads and 9.7 s with 1. One thread per process, and as
#: many processes as CPUs, uses the machine without that cliff.
THREADS_PER_PROCESS = 1

#: expected seconds of the slower claims in the ci profile (one thread of a 2-core x86 machine, quiet): a
#: scheduling hint only -- the parallel run starts the longest claims first so that no long claim starts last.
#: Claims not listed count as 0.5 s. Results and verdicts do not depend on the order.
EXPECTED_SECONDS: dict[str, float] = {
    "uoro.unbiased-statistical": 7.0,
    "uoro.mutants-caught": 2.2,
    "truncation.state-bound": 1.9,
    "uoro.truncated-unbiased": 1.6,
    "fpp.stationarity": 1.6,
    "uoro.rank-unbiased": 1.3,
    "truncation.rate": 1.2,
    "uoro.preactivation": 1.0,
    "rtrl.online-convergence": 1.0,
    "fpp.cycleworld-reproduction": 1.0,
    "reference.adjoint": 1.0,
    "fpp.kkt-recovery": 0.8,
    "truncation.training-prop2": 0.8,
}


def longest_first(claims: Sequence[Claim]) -> list[Claim]:
    """``claims`` ordered by :data:`EXPECTED_SECONDS`, longest first (stable: ties keep catalog order)."""
    return sorted(claims, key=lambda c: -EXPECTED_SECONDS.get(c.id, 0.5))


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the previous count."""
    import torch

    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _cpus() -> int:
    """CPUs this process may run on (:func:`verify.sweep.executors.available_cpus`)."""
    from verify.sweep.executors import available_cpus

    return available_cpus()


def stop_processes(procs: Sequence[Any], timeout: float = 5.0) -> None:
    """Terminate (SIGTERM) the given ``multiprocessing`` processes, then reap them; SIGKILL any still alive.

    Used when a run is stopped: a worker or figure process must not outlive the
    command (it would go on computing as an orphan).
    """
    for proc in procs:
        with contextlib.suppress(Exception):
            if proc.is_alive():
                proc.terminate()
    deadline = time.monotonic() + timeout
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(1.0)


def claim_params(claim: Claim, config: RunConfig) -> dict[str, Any]:
    """The parameters of the sweep task ``claim`` (:mod:`verify.sweep.tasks`) for one claim and config."""
    return {
        "claim": claim.id,
        "profile": config.profile,
        "seed": config.seed,
        "device": config.device,
        "dtype": config.dtype,
        "options": {str(k): v for k, v in config.options},
    }


def _run_parallel(
    todo: Sequence[Claim],
    cfg: Callable[[Claim], RunConfig],
    progress: Progress | None,
    workers: int,
    results: dict[str, CheckResult],
) -> None:
    """``--workers N``: the claims as sweep cells on a local process pool (:class:`verify.sweep.ProcessExecutor`)."""
    from verify.sweep.executors import ProcessExecutor

    with ProcessExecutor(workers, THREADS_PER_PROCESS) as executor:
        run_on_executor(todo, cfg, progress, executor, results)


def run_on_executor(
    todo: Sequence[Claim],
    cfg: Callable[[Claim], RunConfig],
    progress: Progress | None,
    executor: Any,
    results: dict[str, CheckResult],
) -> None:
    """Run ``todo`` as ``claim`` cells on a sweep executor (process pool or Dask); fill ``results`` by claim id.

    A cell that could not run (its worker died too often, a lost cluster, a worker with other sources) is a
    FAIL naming the cause -- a crashed check must not let a CI gate through. On an interruption the
    executor stops its workers before the exception goes on.
    """
    from verify.sweep.cache import code_version
    from verify.sweep.cells import Cell

    by_key: dict[str, Claim] = {}
    cells = []
    for claim in todo:
        cell = Cell("claim", claim_params(claim, cfg(claim)), label=claim.id)
        by_key[cell.key] = claim
        cells.append(cell)
        if progress:
            progress("start", claim, None)
    code = code_version()
    for cell, out in executor.map_unordered(cells):
        claim = by_key[cell.key]
        if out.get("ok") and out.get("code") == code:
            try:
                res = CheckResult.from_dict(out["value"])
            except InvalidArgument as exc:
                res = _worker_failure(claim, cfg(claim), f"malformed result from the worker: {exc}")
        elif out.get("ok"):
            res = _worker_failure(
                claim, cfg(claim), f"worker {out.get('worker')} runs other rnn-verify sources ({out.get('code')})"
            )
        else:
            res = _worker_failure(claim, cfg(claim), str(out.get("error") or "unknown error"))
        results[claim.id] = res
        if progress:
            progress("done", claim, res)


def _worker_failure(claim: Claim, config: RunConfig, why: str) -> CheckResult:
    first = (why.strip().splitlines() or ["?"])[-1]
    return CheckResult(
        claim.id, Verdict.FAIL, f"worker process failed: {first}", reason=why, seed=config.seed, device=config.device
    )
