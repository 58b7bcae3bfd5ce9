"""Run catalog claims: selection by id or glob, timing, and turning errors into verdicts.

A check that raises :class:`~verify.errors.AssumptionViolated` becomes
INCONCLUSIVE with the premise as its reason (never PASS); any other exception in a
check is a FAIL naming the exception -- a crashed check must not let a CI gate through.
"""

from __future__ import annotations

import difflib
import fnmatch
import time
import traceback
from collections.abc import Callable, Sequence

from theory.catalog import Claim, all_claims
from verify.checks import registry
from verify.errors import AssumptionViolated, InvalidArgument
from verify.results import CheckResult, RunConfig, Verdict

__all__ = ["run_check", "run_claims", "select_claims"]

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
    for pat in patterns:
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
    except AssumptionViolated as exc:
        return CheckResult(
            claim.id,
            Verdict.INCONCLUSIVE,
            f"premise not met: {exc}",
            reason=str(exc),
            seed=config.seed,
            wall_time=time.perf_counter() - t0,
        )
    except Exception as exc:  # a crashing check is a failing check
        tb = traceback.format_exc(limit=6)
        return CheckResult(
            claim.id,
            Verdict.FAIL,
            f"check raised {type(exc).__name__}: {exc}",
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


def run_claims(claims: Sequence[Claim], config: RunConfig, progress: Progress | None = None) -> list[CheckResult]:
    """Run ``claims`` in order, calling ``progress("start"|"done", claim, result)``."""
    results = []
    for claim in claims:
        if progress:
            progress("start", claim, None)
        res = run_check(claim, config)
        results.append(res)
        if progress:
            progress("done", claim, res)
    return results
