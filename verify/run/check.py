"""Run one claim's check: selection by id or glob, timing, and turning errors into verdicts.

A check that raises :class:`~verify.errors.AssumptionViolated` becomes
INCONCLUSIVE with the premise as its reason (never PASS); one that raises
:class:`~verify.errors.NotApplicable` (the implementation under test does not declare
what the claim needs) becomes SKIPPED with the reason; one that raises
:class:`~verify.errors.ContractViolation` (the implementation returned or chose a value its contract
forbids) is a FAIL worded as what the implementation did wrong; any other exception in a
check -- ``SystemExit`` from code under test included -- is a FAIL naming the
exception: a crashed check must not let a CI gate through. Every result names the
implementation under test of the parts its check uses (``CheckResult.implementation``).

This module is below :mod:`verify.run.sweep` (whose ``claim`` task calls
:func:`run_check`) and :mod:`verify.run.catalog` (which runs a selection).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from theory.catalog import Claim, all_claims
from verify import stop
from verify.checks import registry, uses
from verify.config import RunConfig
from verify.errors import AssumptionViolated, ContractViolation, ImplementationError, InvalidArgument, NotApplicable
from verify.impl import Implementations, precision
from verify.impl.adapters import low_precision_seen, reset_precision
from verify.impl.loader import load_implementations
from verify.selection import select_claims as _select_claims
from verify.text import clean, safe_repr, safe_str, type_name
from verify.verdict import CheckResult, Verdict

__all__ = [
    "THREADS_PER_PROCESS",
    "claim_params",
    "describe_exception",
    "implementations_from_params",
    "run_check",
    "select_claims",
    "skipped_result",
    "torch_threads",
]


def select_claims(patterns: Sequence[str] | None = None, profile: str | None = None) -> list[Claim]:
    """Claims matching any of ``patterns`` (ids or globs such as ``uoro.*``), catalog order
    (:func:`verify.selection.select_claims` over this module's catalog).

    With ``profile`` only the claims that run in that profile are kept when no
    explicit pattern is given. Unknown ids raise :class:`InvalidArgument` with the
    nearest matches.
    """
    return _select_claims(patterns, profile, claims=all_claims())


def run_check(claim: Claim, config: RunConfig) -> CheckResult:
    """Run one claim's check; never raises for a failing or crashing check. A FAIL whose error sits at float32
    round-off while the claim judged at float64 says so, and how to declare the precision
    (:func:`verify.impl.precision.roundoff_hint`); a FAIL of a claim during which the implementation under test
    returned float32 (or narrower) arrays says that too (issue 37)."""
    reset_precision()
    res = _run_check(claim, config)
    low = low_precision_seen()
    if res.verdict is Verdict.FAIL:
        note = _precision_note(claim, config, res, low)
        # the round-off hint first (the terminal shows a summary's beginning), the other notes after it
        res = replace(res, summary=f"{note[2:]}; {res.summary}" if note.startswith("; error ") else res.summary + note)
    return replace(res, implementation=config.impls.describe(uses(claim.id)))


def _precision_note(claim: Claim, config: RunConfig, res: CheckResult, low: tuple[str, ...]) -> str:
    """What a FAIL's summary adds about precision: the round-off hint, the low-precision arrays seen, or that the
    claim was asked to judge at float32 but judges at float64 (a check without a float32 budget yet)."""
    asked = precision.judged_dtype(config.dtype, (config.impls.part(u) for u in uses(claim.id)))
    returned = f"the implementation under test returned {'/'.join(low)} arrays" if low else ""
    if asked == torch.float32 and res.dtype == "float64":
        hint = precision.roundoff_hint(res.statistic, res.threshold, "float64")
        return (
            "; NOTE: float32 was asked for (declared, or --dtype float32), but this claim's check judges at float64 "
            "(it has no float32 budget)" + ("; " + hint.split(":")[0] if hint else "")
        )
    hint = precision.roundoff_hint(res.statistic, res.threshold, res.dtype)
    if hint:
        return f"; {hint}" + (f" ({returned})" if returned else "")
    if low and res.dtype == "float64":
        return (
            f"; NOTE: {returned}: its round-off (float32: ~1e-7 relative) is above the float64 budgets rnn-verify "
            "judges exact claims by; compute in float64, or declare dtype='float32' (--dtype float32) to be judged "
            "against the predicted float32 budget"
        )
    return ""


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
            f"not applicable to the implementation under test: {safe_str(exc)}",
            reason=safe_str(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    except AssumptionViolated as exc:
        return CheckResult(
            claim.id,
            Verdict.INCONCLUSIVE,
            f"premise not met: {safe_str(exc)}",
            reason=safe_str(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    except BaseException as exc:  # a crashing check is a failing check; so is sys.exit() in user code
        stop.reraise_if_stopped(exc)  # only a signal delivered to rnn-verify stops the run
        summary = (  # the toolkit's validation caught the implementation: its FAIL, worded so, not a crash
            f"the implementation under test broke its contract: {safe_str(exc)}"
            if isinstance(exc, ContractViolation)
            else f"check raised {describe_exception(exc)}"
        )
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            summary,
            reason=_traceback_text(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    stop.raise_pending()  # a stop that the code under test swallowed
    if result.claim_id != claim.id:
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            f"check returned a result for {result.claim_id!r}",
            reason="mis-registered check",
            seed=config.seed,
        )
    if result.wall_time == 0.0:
        result = replace(result, wall_time=time.perf_counter() - t0)
    return result


#: innermost frames a crashed check's reason keeps (the raising frame -- often the user's code -- is always among them)
TRACEBACK_FRAMES = 12
_TOOLKIT_ROOT = Path(__file__).resolve().parents[1]


def describe_exception(exc: BaseException) -> str:
    """One line: the exception, its message (or that it has none) and the innermost frame outside the toolkit
    and torch -- where the implementation under test raised it."""
    if isinstance(exc, SystemExit):
        return (
            f"SystemExit({safe_repr(exc.code)}): code under test called sys.exit(); a check's exit is a FAIL, never "
            "the run's exit status"
        )
    if isinstance(exc, KeyboardInterrupt | stop.Stop):
        return (
            f"{type_name(exc)}: raised by the code itself, no signal was delivered to rnn-verify (a FAIL of the "
            "check, never an interruption of the run)"
        )
    message = safe_str(exc) or "(no message)"
    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if not _in_toolkit(f.filename) and "/torch/" not in f.filename]
    where = (
        f" [raised at {clean(outside[-1].filename)}:{outside[-1].lineno} in {clean(outside[-1].name)}]"
        if outside
        else ""
    )
    return f"{type_name(exc)}: {message}{where}"


def _in_toolkit(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(_TOOLKIT_ROOT)
    except (OSError, ValueError):  # a name no file system holds (a NUL byte, too long): not the toolkit's
        return False


def _traceback_text(exc: BaseException) -> str:
    """The innermost :data:`TRACEBACK_FRAMES` frames of the exception being handled and its last line, as
    :func:`traceback.format_exc` words them; where formatting itself fails (a class whose name or module
    raises), the frames and :func:`describe_exception`'s line. Cleaned (:func:`verify.text.clean`)."""
    try:
        return clean(traceback.format_exc(limit=-TRACEBACK_FRAMES))
    except Exception:
        frames = "".join(traceback.format_tb(exc.__traceback__, limit=-TRACEBACK_FRAMES))
        return clean(f"Traceback (most recent call last):\n{frames}{describe_exception(exc)}\n")


def skipped_result(claim: Claim, config: RunConfig, reason: str) -> CheckResult:
    return CheckResult(
        claim.id, Verdict.SKIPPED, f"not run: {reason}", reason=reason, seed=config.seed, device=config.device
    )


def claim_params(claim: Claim, config: RunConfig) -> dict[str, Any]:
    """The parameters of the sweep task ``claim`` (:mod:`verify.run.sweep.tasks`) for one claim and config.

    A user's implementations travel as what they were loaded from (``impls``: the ``FAMILY=SPEC`` texts of
    ``config.impl_specs``, this process's folder and ``sys.path``, and the provenance of every part); the worker
    loads them again (:func:`implementations_from_params`). Implementations built in code (a mutant, a value made
    with ``with_part``) cannot be sent: :class:`InvalidArgument`.
    """
    params: dict[str, Any] = {
        "claim": claim.id,
        "profile": config.profile,
        "seed": config.seed,
        "device": config.device,
        "dtype": config.dtype,
        "options": {str(k): v for k, v in config.options},
    }
    if config.impl_specs:
        params["impls"] = {
            "specs": list(config.impl_specs),
            "root": os.getcwd(),
            "path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path],
            "sources": list(config.impl_sources) or [s.as_dict() for s in config.impls.sources],
        }
    elif config.implementations is not None and (config.impls.user_parts() or config.impls.label):
        raise InvalidArgument(
            "implementations",
            config.impls.label or ", ".join(config.impls.user_parts()),
            "built in code, they cannot be sent to a worker process: run the claims in this process (workers=1), "
            "or give them as FAMILY=SPEC texts (load_implementations, RunConfig.impl_specs)",
        )
    return params


#: the implementations loaded in this (worker) process, by what was sent: loaded once per process
_LOADED: dict[str, Implementations] = {}


def implementations_from_params(block: dict[str, Any]) -> Implementations:
    """The implementations :func:`claim_params` sent (``params["impls"]``), loaded in this process (cached).

    They were validated in the run's process; here they are loaded without the validation probe
    (``validate=False``), with the run's folder for relative file specs and its ``sys.path`` entries appended
    where missing. A spec that does not load, or loads something whose provenance (file, SHA-256) differs from
    what the run's process loaded, is an :class:`~verify.errors.ImplementationError` naming the spec and this
    process.
    """
    key = json.dumps(block, sort_keys=True)
    if key in _LOADED:
        return _LOADED[key]
    where = f"worker process {os.getpid()} on {socket.gethostname()}"
    for entry in block.get("path") or []:
        if entry not in sys.path:
            sys.path.append(entry)
    try:
        impls = load_implementations(list(block["specs"]), validate=False, root=block.get("root"))
    except ImplementationError as exc:
        raise ImplementationError(
            exc.name, exc.spec, f"cannot be loaded in {where}, where the claim runs: {exc.reason}", option=exc.option
        ) from None
    sent = {s["name"]: s for s in block.get("sources") or []}
    for src in impls.sources:
        them = sent.get(src.name)
        if them != src.as_dict():
            was = f"file {them['file']} sha256 {them['sha256']}" if them else "nothing"
            raise ImplementationError(
                src.name,
                src.spec,
                f"loaded in {where} it is file {src.file} sha256 {src.sha256}, but the run's process validated "
                f"{was} (did the file change, or does this machine have other sources?)",
            )
    _LOADED[key] = impls
    return impls


#: torch intra-op threads of a process that runs checks (this one serially, each worker in parallel). The
#: checks' tensors are small (n <= 64): a second thread gains ~15 % on a quiet machine, while OpenMP's
#: spin-waiting threads stall whenever a core is taken by another process -- on a 2-core machine with one
#: CPU-bound neighbour three claims took 61 s with 2 threads and 9.7 s with 1. One thread per process, and as
#: many processes as CPUs, uses the machine without that cliff.
THREADS_PER_PROCESS = 1


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the previous count."""
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
