"""KF-RTRL's figures (Mujika, Meier & Steger 2018, arXiv:1805.10842): the variance ratio against UORO over n."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verify.figure_spec import Figure

__all__ = ["kfrtrl_variance_figure"]


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
