"""The shared decision of the exact-where-the-theory-says claims (``rtrl.snap-exactness``, ``rtrl.rflo-limits``,
``rtrl.eprop-limits``): rows of cases, each with the relative error of an online algorithm against exact float64
RTRL and what the theory expects (``"exact"`` or ``"biased"``). PASS when every case the theory calls exact is
within :data:`EXACT` and every case it calls biased differs by more than :data:`BIASED` (an estimator that silently
became RTRL is not the rule it is named); negative controls rerun the same suite on mutants, which must FAIL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verify.checks import result
from verify.config import RunConfig
from verify.impl.capabilities import Coverage
from verify.impl.mutants import get as get_mutant
from verify.report.plots.limits import limits_figure
from verify.verdict import CheckResult, Control

__all__ = ["BIASED", "EXACT", "bad_cases", "decide_cases"]

EXACT = 1e-12  #: float64 round-off target (DESIGN.md "Numerical policy")
BIASED = 1e-6  #: six orders above it: a bias, not round-off

Row = dict[str, Any]


def bad_cases(rows: Sequence[Row]) -> list[Row]:
    """The rows not as the theory says: an exact case above :data:`EXACT`, a biased one at or below :data:`BIASED`."""
    return [r for r in rows if (r["error"] > EXACT if r["expect"] == "exact" else r["error"] <= BIASED)]


def decide_cases(
    claim: str,
    config: RunConfig,
    t0: float,
    rows: list[Row],
    *,
    summary: Callable[[list[Row]], str],
    controls: Sequence[str],
    rerun: Callable[[Any], list[Row]],
    name: Callable[[Row], str],
    label: Callable[[Mapping[str, Any]], str],
    title: str,
    coverage: Coverage,
) -> CheckResult:
    """The verdict, the controls (``rerun(mutant part)`` for each mutant name), the summary and the figure."""
    bad = bad_cases(rows)
    ctl: list[Control] = []
    if config.option("controls", True):
        for mutant in controls:
            wrong = bad_cases(rerun(get_mutant(mutant).part))
            detail = "; ".join(name(r) for r in wrong[:2]) or "every case as the theory says"
            ctl.append(Control(f"mutant {mutant}", "FAIL", "FAIL" if wrong else "PASS", detail))
    text = summary(rows)
    if bad:
        text += "; not as the theory says: " + "; ".join(name(r) for r in bad[:3])
    exact = [r["error"] for r in rows if r["expect"] == "exact"]
    return result(
        claim,
        config,
        t0,
        not bad,
        text,
        controls=ctl,
        statistic=max(exact),
        threshold=EXACT,
        data={
            "cases": rows,
            "exact": EXACT,
            "biased": BIASED,
            "figures": [limits_figure(rows, label, title=title, exact=EXACT, biased=BIASED)],
        },
        coverage=coverage,
    )
