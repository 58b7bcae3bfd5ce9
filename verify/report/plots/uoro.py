"""Figures of the UORO claims (Tallec & Ollivier; Cooijmans & Martens): variances and power."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from verify.report.plots import Figure

__all__ = ["preactivation_variance_figure"]


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
