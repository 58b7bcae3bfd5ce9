"""Figure of ``uoro.influence-balancing-learning``: Tallec & Ollivier 2017 (arXiv:1702.05043) §4, Fig. 3a."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verify.report.plots import Figure

__all__ = ["influence_learning_figures"]


def _positive(ys: list[float]) -> list[float | None]:
    """Log-scale values: non-finite or non-positive points dropped (None)."""
    return [y if isinstance(y, float) and math.isfinite(y) and y > 0 else None for y in ys]


def influence_learning_figures(data: Mapping[str, Any]) -> list[Figure]:
    """Fig. 3a style: online loss against steps, log scale; every UORO run, the broken UOROs and TBPTT(k)."""
    c = data.get("curves") or {}
    if not c.get("step"):
        return []
    series: list[dict[str, Any]] = []
    for i, ys in enumerate(c.get("uoro") or []):
        series.append({"label": "UORO" if i == 0 else f"UORO run {i + 1}", "x": c["step"], "y": _positive(ys),
                       "style": "solid"})  # fmt: skip
    for key, name in (("frozen", "control: UORO frozen"), ("sign_flipped", "control: UORO sign-flipped")):
        if c.get(key):
            series.append({"label": name, "x": c["step"], "y": _positive(c[key]), "style": "dashed"})
    if c.get("tbptt"):
        series.append({"label": f"TBPTT(k={data.get('k')})", "x": c["tbptt_step"], "y": _positive(c["tbptt"]),
                       "style": "solid"})  # fmt: skip
    return [
        {
            "kind": "line",
            "title": "Fig. 3a: influence balancing, 23 units, 13 minus",
            "series": series,
            "xlabel": "online step t",
            "ylabel": "online loss 1/2 (s1_t - 1)^2",
            "logy": True,
            "hlines": [{"y": data.get("initial_loss", 0.5), "label": "initial loss"}],
            "caption": f"eta = {data.get('eta')}/(1 + sqrt t); every UORO run (one curve each, sampled every "
            f"{c['step'][0]} steps); a diverged run stays at 1e6; the paper: UORO converges, TBPTT diverges",
        }
    ]
