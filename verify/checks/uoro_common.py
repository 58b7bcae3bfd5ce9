"""What the statistical UORO checks share: the claim's error rates, the implementation under test, its mutants,
and the result (claims in :mod:`theory.claims.uoro_statistics`; checks in :mod:`verify.checks.uoro_statistics`,
:mod:`verify.checks.uoro_variance` and :mod:`verify.checks.uoro_mutants`; Tallec & Ollivier 2017, Prop. 1 and
Algorithm 1).

Options (``RunConfig.options``): ``controls`` (``False`` skips the negative controls, as the kill table does),
``kill_table`` (the smaller fixtures of the kill table), ``alpha``, ``beta``, ``delta``, ``first``,
``max_samples``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from theory.claims.uoro_statistics import ALPHA
from verify.config import RunConfig
from verify.impl import build
from verify.impl.mutants.uoro import get
from verify.stats import TestOptions
from verify.uoro.unbiased import BETA, DELTA, claim_options
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["alpha_of", "combine", "controls_on", "finish", "max_samples", "mutant", "options", "uoro_under_test"]


def alpha_of(config: RunConfig) -> float:
    """The claim's false-FAIL rate α (ALPHA = 5e-5 unless the option ``alpha`` overrides it)."""
    return float(config.option("alpha", ALPHA))


def options(config: RunConfig, *, split: int = 1) -> TestOptions:
    """The claim's error rates (α = ALPHA, β = 1e-3, δ = 0.02 unless overridden), split over ``split`` tests."""
    return claim_options(
        alpha_of(config), float(config.option("beta", BETA)), float(config.option("delta", DELTA)), split=split
    )


def max_samples(config: RunConfig) -> int:
    """Most draws of one sequential test (option ``max_samples``)."""
    return int(config.option("max_samples", 2_000_000 if config.full else 1_500_000))


def uoro_under_test(config: RunConfig, claim: str, **kw: int) -> Any:
    """The UORO of the implementation under test with hyperparameters ``kw`` (NotApplicable if it takes none)."""
    return build(config.impls.uoro.uoro, claim, **kw)


def mutant(name: str, claim: str, **kw: int) -> Any:
    """The estimator of catalog mutant ``name`` (a control: ``replace(default, field=broken)``'s part)."""
    return build(get(name).part, claim, **kw)


def controls_on(config: RunConfig) -> bool:
    """Whether the negative controls run (the kill table turns them off)."""
    return bool(config.option("controls", True))


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """FAIL if any FAILs, PASS if all PASS, else INCONCLUSIVE."""
    if any(v is Verdict.FAIL for v in verdicts):
        return Verdict.FAIL
    if all(v is Verdict.PASS for v in verdicts):
        return Verdict.PASS
    return Verdict.INCONCLUSIVE


def _mutant_label(config: RunConfig) -> str:
    label = config.impls.label
    return f" [{label} injected]" if label else ""


def finish(
    claim_id: str,
    config: RunConfig,
    t0: float,
    verdict: Verdict,
    summary: str,
    *,
    statistic: float | None = None,
    threshold: float | None = None,
    comparison: str = "<",
    controls: Sequence[Control] = (),
    data: dict[str, Any] | None = None,
    reason: str | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    delta: float | None = None,
    samples_planned: int | None = None,
    samples_used: int | None = None,
) -> CheckResult:
    """The result: a negative control not caught turns a PASS into a FAIL (and is named in the summary); an
    INCONCLUSIVE or SKIPPED verdict without a reason takes the summary as its reason."""
    bad = [c for c in controls if not c.ok]
    if bad:
        summary += "; NEGATIVE CONTROL NOT CAUGHT: " + ", ".join(f"{c.name} ({c.observed})" for c in bad)
        if verdict is Verdict.PASS:
            verdict = Verdict.FAIL
    if verdict in (Verdict.INCONCLUSIVE, Verdict.SKIPPED) and not reason:
        reason = summary
    return CheckResult(
        claim_id=claim_id,
        verdict=verdict,
        summary=summary + _mutant_label(config),
        statistic=statistic,
        threshold=threshold,
        comparison=comparison,
        seed=config.seed,
        dtype="float64",
        device="cpu",
        alpha=alpha,
        beta=beta,
        delta=delta,
        samples_planned=samples_planned,
        samples_used=samples_used,
        reason=reason,
        controls=tuple(controls),
        data=data or {},
        wall_time=time.perf_counter() - t0,
    )
