"""What the statistical UORO checks share: the claim's error rates, the implementation under test, its mutants,
and the result (claims in :mod:`theory.claims.uoro_statistics`; checks in :mod:`verify.checks.uoro_statistics`,
:mod:`verify.checks.uoro_variance` and :mod:`verify.checks.uoro_mutants`; Tallec & Ollivier 2017, Prop. 1 and
Algorithm 1).

Options (``RunConfig.options``): ``controls`` (``False`` skips the negative controls, as the kill table does),
``kill_table`` (the smaller fixtures of the kill table), ``alpha``, ``beta``, ``delta``, ``first``,
``max_samples``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from theory.gate import planned_alpha
from verify.checks import result
from verify.config import RunConfig
from verify.impl import build
from verify.impl.mutants.uoro import get
from verify.stats import TestOptions
from verify.uoro.unbiased import BETA, DELTA, claim_options
from verify.verdict import CheckResult, Verdict

__all__ = ["alpha_of", "combine", "controls_on", "finish", "max_samples", "mutant", "options", "uoro_under_test"]


def alpha_of(config: RunConfig, claim_id: str) -> float:
    """The false-FAIL rate α of ``claim_id``: its share of the gate's budget (:func:`theory.gate.planned_alpha`)
    unless the option ``alpha`` overrides it."""
    return float(config.option("alpha", planned_alpha(claim_id)))


def options(config: RunConfig, claim_id: str, *, split: int = 1) -> TestOptions:
    """The error rates of ``claim_id`` (α :func:`alpha_of`, β = 1e-3, δ = 0.02 unless overridden), split over
    ``split`` tests."""
    return claim_options(
        alpha_of(config, claim_id),
        float(config.option("beta", BETA)),
        float(config.option("delta", DELTA)),
        split=split,
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


def finish(
    claim_id: str, config: RunConfig, t0: float, verdict: Verdict, summary: str, *, comparison: str = "<", **fields: Any
) -> CheckResult:
    """:func:`verify.checks.result` with what the UORO family adds: the comparison ``<`` unless stated, and the
    mutant injected by the kill table (``config.impls.label``) named after the summary (not in the reason)."""
    res = result(claim_id, config, t0, verdict, summary, comparison=comparison, **fields)
    label = config.impls.label
    return replace(res, summary=f"{res.summary} [{label} injected]") if label else res
