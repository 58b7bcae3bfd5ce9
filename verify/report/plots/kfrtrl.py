"""KF-RTRL's and OK's figures (Mujika, Meier & Steger 2018, arXiv:1805.10842; Benzing et al. 2019, arXiv:1902.03993)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verify.figure_spec import Figure

__all__ = ["kfrtrl_variance_figure", "ok_variance_figure"]


def kfrtrl_variance_figure(rows: Sequence[Mapping[str, Any]], level: float, slope: float) -> Figure:
    """E‖g̃_T − g_T‖² of KF-RTRL over UORO's at each state size n, with its CI, against the line ratio = 1."""
    return {
        "kind": "errorbar",
        "title": "KF-RTRL / UORO: last-step gradient variance ratio vs state size n",
        "x": [f"n={r['n']}" for r in rows],
        "series": [
            {
                "label": f"ratio ({level:.6g}-CI)",
                "y": [r["ratio"] for r in rows],
                "ylow": [r["ci"][0] for r in rows],
                "yhigh": [r["ci"][1] for r in rows],
            }
        ],
        "ylabel": "E||g~KF - g||^2 / E||g~UORO - g||^2",
        "logy": True,
        "hlines": [{"y": 1.0, "label": "equal variance"}],
        "caption": f"{rows[0]['draws']} draws per estimator and n; slope of log ratio on log n = {slope:.2f} "
        "(PASS needs the CI below 1 at the largest n and a negative slope)",
    }


def ok_variance_figure(
    ratios: Mapping[str, Sequence[Mapping[str, Any]]], pooled: Mapping[str, Sequence[Any]], level: float
) -> Figure:
    """OK's trajectory comparison (Benzing et al. 2019): E‖g̃_T − g_T‖² of OK(1) over KF-RTRL's and of OK(2) over
    OK(1)'s at each n, and pooled over n, with their CIs, against the line ratio = 1."""
    names = list(ratios)
    first = ratios[names[0]]
    return {
        "kind": "errorbar",
        "title": "OK: last-step gradient variance ratios vs state size n (and pooled)",
        "x": [*(f"n={r['n']}" for r in first), "pooled"],
        "series": [
            {
                "label": name,
                "y": [*(r["ratio"] for r in ratios[name]), pooled[name][0]],
                "ylow": [*(r["ci"][0] for r in ratios[name]), pooled[name][1][0]],
                "yhigh": [*(r["ci"][1] for r in ratios[name]), pooled[name][1][1]],
            }
            for name in names
        ],
        "ylabel": "ratio of E||g~_T - g_T||^2",
        "logy": True,
        "hlines": [{"y": 1.0, "label": "equal variance"}],
        "caption": f"{first[0]['draws']} draws per estimator and n; per-n CIs at {level:.6g}; PASS needs both "
        "pooled CIs below 1 (and the exact per-step part)",
    }
