"""The shared decision of the exact-where-the-theory-says claims (``rtrl.snap-exactness``, ``rtrl.rflo-limits``,
``rtrl.eprop-limits``): rows of cases, each with the relative error of an online algorithm against exact float64
RTRL and what the theory expects (``"exact"`` or ``"biased"``). PASS when every case the theory calls exact is
within :data:`EXACT` and every case it calls biased differs by more than :data:`BIASED` (an estimator that silently
became RTRL is not the rule it is named); negative controls rerun the same suite on mutants, which must FAIL.

An implementation that computes in float32 (declared, or ``--dtype float32``: :mod:`verify.impl.precision`) is
judged by the float32 thresholds (:func:`thresholds`): the exact target with float32's rounding unit in place of
float64's, and a bias that must exceed it (below that, float32 round-off and a bias cannot be told apart).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from verify.checks import precision_name, result
from verify.config import RunConfig
from verify.impl.capabilities import Coverage
from verify.impl.mutants import get as get_mutant
from verify.impl.precision import exact_target
from verify.report.plots.limits import limits_figure
from verify.verdict import CheckResult, Control

__all__ = ["BIASED", "EXACT", "bad_cases", "decide_cases", "thresholds"]

EXACT = 1e-12  #: float64 round-off target (DESIGN.md "Numerical policy")
BIASED = 1e-6  #: six orders above it: a bias, not round-off

Row = dict[str, Any]


def thresholds(dtype: torch.dtype = torch.float64) -> tuple[float, float]:
    """(exact, biased) at the precision the claim judges by: (:data:`EXACT`, :data:`BIASED`) at float64; at float32
    the exact target scaled to float32's rounding unit (:func:`~verify.impl.precision.exact_target`, 2.7e-4) and a
    bias above the larger of it and :data:`BIASED`."""
    exact = exact_target(dtype, EXACT)
    return exact, max(BIASED, exact)


def bad_cases(rows: Sequence[Row], dtype: torch.dtype = torch.float64) -> list[Row]:
    """The rows not as the theory says: an exact case above the exact threshold, a biased one at or below the
    biased one (:func:`thresholds`: :data:`EXACT` and :data:`BIASED` at float64)."""
    exact, biased = thresholds(dtype)
    return [r for r in rows if (r["error"] > exact if r["expect"] == "exact" else r["error"] <= biased)]


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
    dtype: torch.dtype = torch.float64,
) -> CheckResult:
    """The verdict, the controls (``rerun(mutant part)`` for each mutant name), the summary and the figure, judged
    at ``dtype`` (:func:`thresholds`; the mutants, the toolkit's float64 code, at float64)."""
    bad = bad_cases(rows, dtype)
    exact_t, biased_t = thresholds(dtype)
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
        threshold=exact_t,
        dtype=precision_name(dtype),
        data={
            "cases": rows,
            "exact": exact_t,
            "biased": biased_t,
            "figures": [limits_figure(rows, label, title=title, exact=exact_t, biased=biased_t)],
        },
        coverage=coverage,
    )
