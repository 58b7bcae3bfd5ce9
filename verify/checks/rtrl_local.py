"""The checks of ``rtrl.rflo-limits`` and ``rtrl.eprop-limits``: RFLO (Murray 2019) and e-prop (Bellec et al.
2020), declared biased, against exact float64 RTRL in the limits where their definitions drop nothing.

Decides only: the rows come from :func:`verify.estimators.local.limits_suite` run on the implementation under test
(``config.impls.rtrl.rflo`` / ``config.impls.rtrl.eprop``, built with no arguments: symmetric feedback). PASS when
every row the theory says is exact (RFLO: W = 0, and t = 1 for any W; e-prop: diagonal W, and t = 1) is within
1e-12 of exact RTRL and every row it says is biased (RFLO: diagonal and dense W; e-prop: dense W) differs by more
than 1e-6 (at float32, code declared so: 2.7e-4 both, :func:`verify.checks.exact_cases.thresholds`) -- an
estimator that silently became RTRL (or e-prop passed off as RFLO) is not the rule it is named.
Negative controls: the mutants of :mod:`verify.impl.mutants.local` rerun through the same suite must FAIL.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from verify.checks import judged_dtype, register
from verify.checks.exact_cases import decide_cases, thresholds
from verify.config import RunConfig
from verify.estimators.local import LIMIT_CELLS, _limit_problem, limits_suite
from verify.impl import build
from verify.impl.capabilities import Coverage, cover
from verify.verdict import CheckResult

CONTROLS = {
    "rflo": ("rflo.transposed-trace", "rflo.no-leak", "rflo.feedback-through-w"),
    "eprop": ("eprop.transposed-trace", "eprop.no-self-connection"),
}


def _suite(factory: Any, rule: str, config: RunConfig, cells: tuple[str, ...] = LIMIT_CELLS) -> list[dict[str, Any]]:
    alphas = (0.2, 0.5, 1.0) if config.full else (0.5, 1.0)
    make = lambda: build(factory, f"rtrl.{rule}")  # noqa: E731
    return limits_suite(make, rule, config.generator(salt=27), alphas=alphas, cells=cells)


def _covered(claim: str, rule: str, factory: Any) -> tuple[tuple[str, ...], Coverage]:
    """The cells the implementation under test declares (a user's Elman-only RFLO is run on the Elman cell, the
    leaky units left out with its reason; none: SKIPPED)."""

    def probe(cell: str) -> tuple[str, Any, Any, Any]:
        P, th = _limit_problem("dense", 0.5, 3, 3, torch.Generator().manual_seed(0), cell)
        return cell, build(factory, f"rtrl.{rule}"), P, th

    kept, coverage = cover(claim, LIMIT_CELLS, probe)
    return tuple(kept), coverage


def _label(r: Any) -> str:
    where = f"a={r['alpha']}" if r["cell"] == "leaky-elman-tanh" else "elman"
    return f"{where} {r['W']} W{' t=1' if r['steps'] == 'first' else ''}"


def _name(r: dict[str, Any]) -> str:
    steps = "all steps" if r["steps"] == "all" else "t = 1"
    where = f"alpha = {r['alpha']}" if r["cell"] == "leaky-elman-tanh" else r["cell"]
    return f"{where}, {r['W']} W, {steps} ({r['expect']}: error {r['error']:.1e})"


def _summary(rows: list[dict[str, Any]], dtype: torch.dtype = torch.float64) -> str:
    exact_t, biased_t = thresholds(dtype)
    exact = [r["error"] for r in rows if r["expect"] == "exact"]
    biased = [r for r in rows if r["expect"] == "biased"]
    return (
        f"{len(exact)} exact cases: largest error {max(exact):.1e} (must be <= {exact_t:.2g}); {len(biased)} biased "
        f"cases: largest per-step relative bias {min(r['error'] for r in biased):.2g}.."
        f"{max(r['error'] for r in biased):.2g} (must be > {biased_t:.2g}), summed-gradient bias "
        f"{min(r['bias_total'] for r in biased):.2g}..{max(r['bias_total'] for r in biased):.2g}"
    )


def _check(claim: str, rule: str, factory: Any, config: RunConfig) -> CheckResult:
    t0 = time.perf_counter()
    cells, coverage = _covered(claim, rule, factory)
    dtype = judged_dtype(config, claim)
    return decide_cases(
        claim, config, t0, _suite(factory, rule, config, cells), summary=lambda rows: _summary(rows, dtype),
        controls=CONTROLS[rule], rerun=lambda part: _suite(part, rule, config), name=_name, label=_label,
        title=f"{claim}: each case against exact RTRL", coverage=coverage, dtype=dtype,
    )  # fmt: skip


@register("rtrl.rflo-limits", uses=("rtrl.rflo",))
def check_rflo_limits(config: RunConfig) -> CheckResult:
    """Murray 2019 §Results (the RFLO learning rule): RFLO = RTRL (<= 1e-12) without recurrent interaction
    (W = 0) and at t = 1; biased otherwise."""
    return _check("rtrl.rflo-limits", "rflo", config.impls.rtrl.rflo, config)


@register("rtrl.eprop-limits", uses=("rtrl.eprop",))
def check_eprop_limits(config: RunConfig) -> CheckResult:
    """Bellec et al. 2020 eq. (3), (14): e-prop = RTRL (<= 1e-12) for a diagonal W and at t = 1; biased for a
    dense W."""
    return _check("rtrl.eprop-limits", "eprop", config.impls.rtrl.eprop, config)
