"""Figures of the UORO claims (Tallec & Ollivier; Cooijmans & Martens): variances and power."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from verify.report.plots import Figure

if TYPE_CHECKING:
    from verify.stats import UnbiasednessResult

__all__ = [
    "kill_table_figure",
    "normalizers_table",
    "planned_draws_table",
    "power_figure",
    "preactivation_variance_figure",
    "rank_variance_figure",
    "reinforce_link_figure",
    "sequential_looks_figure",
    "variance_growth_figure",
    "variance_reduction_figure",
]


def preactivation_variance_figure(
    q_pre: torch.Tensor, q_uoro: torch.Tensor, ratio: float, ratio_ci: Sequence[float], problem: str
) -> Figure:
    """Cooijmans & Martens, 'Projecting in preactivation space': E||g^ - g||² of both estimators with 95% CIs."""
    ys, lo, hi = [], [], []
    for q in (q_uoro, q_pre):
        x = q.detach().double().cpu()
        m = float(x.mean())
        h = 1.96 * float(x.std()) / math.sqrt(max(x.numel(), 1))
        ys.append(m)
        lo.append(max(m - h, m * 1e-3))
        hi.append(m + h)
    return {
        "kind": "errorbar",
        "title": f"preactivation UORO vs UORO: total-gradient variance ({problem})",
        "x": ["UORO", "preact-UORO"],
        "series": [{"label": "E||g^ - g||^2 (95% CI)", "y": ys, "ylow": lo, "yhigh": hi}],
        "ylabel": "E ||g^ - g||^2 (total gradient)",
        "logy": True,
        "caption": f"{q_pre.numel()} draws each; ratio preactivation / UORO = {ratio:.3g}, CI "
        f"[{ratio_ci[0]:.3g}, {ratio_ci[1]:.3g}] (PASS needs the CI below 1)",
    }


def sequential_looks_figure(results: Sequence[tuple[str, UnbiasednessResult]], delta: float) -> Figure:
    """Tallec & Ollivier, Prop. 1 by the sequential test: the certified relative bias bound at each look."""
    return {
        "kind": "line",
        "title": "sequential test: worst certified relative bias bound vs draws",
        "series": [
            {"label": lab, "x": [lk[0] for lk in r.looks], "y": [lk[1] for lk in r.looks], "style": "markers"}
            for lab, r in results
        ],
        "xlabel": "draws M",
        "ylabel": "certified ||E g^ - g|| / ||g||",
        "logx": True,
        "logy": True,
        "hlines": [{"y": delta, "label": "delta"}],
        "caption": "time-uniform (anytime-valid) bound at 1 - beta; the test stops at the first look below delta",
    }


def planned_draws_table(results: Sequence[tuple[str, UnbiasednessResult]]) -> Figure:
    """Draws of the sequential test (used) against the fixed-sample planner, per problem."""
    return {
        "kind": "table",
        "title": "draws: sequential (used) vs fixed-sample planner",
        "columns": ["problem", "verdict", "used", "planned (fixed)", "used/planned", "certified bound / ||g||"],
        "rows": [
            [
                lab,
                r.verdict.value,
                r.samples_used,
                r.samples_planned,
                round(r.samples_used / r.samples_planned, 3) if r.samples_planned else None,
                round(r.relative_bound, 5),
            ]
            for lab, r in results
        ],
    }


def rank_variance_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Tallec & Ollivier §3, rank-r UORO: E||g_r - g||² against r with 95% bands, beside the 1/r law."""
    return {
        "kind": "errorbar",
        "title": "rank-r UORO: mean squared error of the total gradient vs r",
        "x": [r["rank"] for r in rows],
        "series": [
            {
                "label": "measured E||g_r - g||^2",
                "y": [r["mse"] for r in rows],
                "ylow": [r["mse"] * math.exp(-1.96 * r["se_log"]) for r in rows],
                "yhigh": [r["mse"] * math.exp(1.96 * r["se_log"]) for r in rows],
            },
            {"label": "1/r law", "y": [rows[0]["mse"] / r["rank"] for r in rows], "style": "dashed"},
        ],
        "xlabel": "rank r",
        "ylabel": "E||g_r - g||^2",
        "logx": True,
        "logy": True,
    }


def variance_growth_figure(growth: Mapping[int, Sequence[float]], T: int) -> Figure:
    """Cooijmans & Martens, variance growth: the relative variance of g~_t against t, one line per state size n."""
    return {
        "kind": "line",
        "title": "UORO: relative variance of g~_t vs t (Elman-tanh)",
        "x": list(range(1, T + 1)),
        "series": [{"label": f"n = {n}", "y": growth[n]} for n in growth],
        "xlabel": "t",
        "ylabel": "E||g~_t - g_t||^2 / ||g_t||^2",
        "logy": True,
        "caption": "t = 1 is exact (s~_0 = 0): zero variance, not drawn on the log axis",
    }


def reinforce_link_figure(sigmas: Sequence[float], rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Cooijmans & Martens, 'A link to REINFORCE': REINFORCE against UORO as sigma -> 0, with and without baseline."""
    return {
        "kind": "line",
        "title": "REINFORCE on the state-perturbed RNN vs UORO as sigma -> 0",
        "x": list(sigmas),
        "series": [
            {
                "label": "RMS(REINFORCE with baseline - UORO) / RMS(UORO - g)",
                "y": [r["rms_diff_over_rms_uoro"] for r in rows],
            },
            {
                "label": "E||REINFORCE without baseline - g||^2 / E||UORO - g||^2",
                "y": [r["var_no_baseline"] / r["var_uoro"] for r in rows],
            },
        ],
        "xlabel": "sigma",
        "ylabel": "ratio",
        "logx": True,
        "logy": True,
    }


def normalizers_table(alt_rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Tallec & Ollivier, Algorithm 1's rho_0, rho_1: E||g~ - g||² of each alternative relative to the paper's."""
    return {
        "kind": "table",
        "title": "normalizers: E||g~ - g||^2 (total gradient) relative to Algorithm 1's rho_0, rho_1",
        "columns": ["normalizers", "variance ratio vs paper", "95% CI"],
        "rows": [
            [r["normalizers"], f"{r['variance_ratio_vs_paper']:.3g}", f"[{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]"]
            for r in alt_rows
        ],
    }


def power_figure(rows: Sequence[Mapping[str, Any]], budget: int) -> Figure:
    """The operating characteristic of the sequential unbiasedness test: draws to FAIL against the exact bias."""
    series: list[dict[str, Any]] = []
    for name in dict.fromkeys(r["mutant"] for r in rows):
        hit = [r for r in rows if r["mutant"] == name and not r["censored"]]
        series.append(
            {"label": name, "x": [r["relative_bias"] for r in hit], "y": [r["draws"] for r in hit], "style": "solid"}
        )
    cens = [r for r in rows if r["censored"]]
    if cens:
        series.append(
            {
                "label": "no FAIL: PASS (bias below delta, certified) or budget spent",
                "x": [r["relative_bias"] for r in cens],
                "y": [r["draws"] for r in cens],
                "style": "markers",
            }
        )
    return {
        "kind": "line",
        "title": "operating characteristic of the sequential unbiasedness test: draws to FAIL vs bias",
        "series": series,
        "xlabel": "||E g^ - g|| / ||g|| (exact, by enumeration; mutant mixed in with probability lambda)",
        "ylabel": "draws to FAIL",
        "logx": True,
        "logy": True,
        "hlines": [{"y": budget, "label": "budget"}],
        "caption": (
            "each point: one sequential test (alpha = beta = 1e-3, first look at 100 draws) of the total gradient on "
            "a UORO whose draws come from the biased mutant with probability lambda (bias = lambda * b1 exactly); "
            "for a mean shift b the draws needed grow like (sd/b)^2, slope -2 on these axes"
        ),
    }


def kill_table_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """The UORO kill table, both sides: per mutant, the checks that must FAIL and those that must not."""

    def fmt(d: Mapping[str, str]) -> str:
        return "; ".join(f"{cid}: {v}" for cid, v in d.items()) or "-"

    return {
        "kind": "table",
        "title": "UORO kill table, both sides: what each test must and must not see",
        "columns": ["mutant", "class", "must FAIL", "must not FAIL (PASS or INCONCLUSIVE)", "as expected"],
        "rows": [
            [
                r["mutant"],
                r["class"],
                fmt(r["checks"]),
                fmt(r["must_not_fail"]),
                "yes" if r["killed"] and r["clean"] else "NO",
            ]
            for r in rows
        ],
        "caption": (
            "biased mutants must FAIL every check they are visible to; the unbiased ones (high variance, near-"
            "identical variance) must FAIL their conformance/variance checks and must NOT FAIL the unbiasedness "
            "test (a FAIL there would be a false alarm)"
        ),
    }


def variance_reduction_figure(
    measured: Sequence[Mapping[str, Any]],
    prefix: Mapping[str, Sequence[float]],
    levels: Mapping[str, float],
    label: str,
) -> Figure:
    """Cooijmans & Martens, 'Toward improved variance reduction': E||sum_{s<=t} g~_s - g||^2 vs t, plain UORO, greedy
    and optimal rescaling (measured), with the exact prediction of the optimum and the predicted levels at T."""
    T = len(next(iter(prefix.values())))
    series: list[dict[str, Any]] = [{"label": f"{r['name']} (measured)", "y": r["mean"]} for r in measured]
    series += [{"label": f"{k} (exact)", "y": list(v), "style": "dashed"} for k, v in prefix.items()]
    series += [{"label": f"{k} at T (exact)", "y": [v] * T, "style": "dashed"} for k, v in levels.items()]
    return {
        "kind": "line",
        "title": f"variance of the running total gradient: greedy vs optimal rescaling ({label})",
        "x": list(range(1, T + 1)),
        "series": series,
        "xlabel": "t",
        "ylabel": "E||sum_{s<=t} g~_s - sum_{s<=t} g_s||^2",
        "logy": True,
        "caption": "t = 1 is exact in Algorithm 1's form (zero variance, not drawn on the log axis); levels: the "
        "framework's V + c at the optimal alpha_t with Q0 = I (tr(B) tr(I) + c) and Q0 = B^(-1/4) (tr(B^(1/2))^2 + c)",
    }
