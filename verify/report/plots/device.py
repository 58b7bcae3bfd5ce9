r"""Figures of the device claims (DESIGN.md "GPU paths"): parity errors against their budget, GPU-scale bias bounds.

``device.float32-standin`` and ``device.cuda-parity`` compare every algorithm's rows with the
CPU float64 reference within the parity budget of :mod:`verify.oracles.budget` §2,

.. math:: \|\hat r_{row} - r_{row}\| \le C\,(u_{cand}+u_{ref})\,\sqrt{m L_{eff} + T_{sum}}\,\|\bar r_{row}\| ;

``device.gpu-unbiasedness`` certifies Tallec & Ollivier's Prop. 1 (UORO unbiased) by a sequential
test whose certified relative bound shrinks with the draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verify.report.plots import Figure

__all__ = ["Comparison", "parity_figures", "unbiasedness_figures"]


class Comparison(Protocol):
    """What a figure reads of one parity comparison (:class:`verify.gpu.parity.ParityComparison`)."""

    @property
    def algorithm(self) -> str: ...
    @property
    def arithmetic(self) -> str: ...
    @property
    def order(self) -> str: ...
    @property
    def error(self) -> float: ...
    @property
    def budget(self) -> float: ...
    @property
    def ratio(self) -> float: ...


def parity_figures(comparisons: Sequence[Comparison], controls: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """Measured error vs budget (per algorithm), worst measured/budget per algorithm and setting, the controls."""
    algs = list(dict.fromkeys(c.algorithm for c in comparisons))
    settings = list(dict.fromkeys(f"{c.arithmetic}, {c.order}" for c in comparisons))
    scatter = {
        "kind": "scatter",
        "title": "measured error vs predicted budget (worst row of each comparison)",
        "series": [
            {
                "label": a,
                "x": [c.budget for c in comparisons if c.algorithm == a],
                "y": [c.error for c in comparisons if c.algorithm == a],
            }
            for a in algs
        ],
        "xlabel": "budget C (u_cand + u_ref) sqrt(m L_eff + T_sum) ||r_bar||",
        "ylabel": "measured ||r_hat - r||",
        "logx": True,
        "logy": True,
        "diagonal": True,
        "caption": "every point below the diagonal is within its budget",
    }
    bars = {
        "kind": "bar",
        "title": "worst measured / budget per algorithm",
        "x": algs,
        "series": [
            {
                "label": s,
                "y": [
                    max(
                        (c.ratio for c in comparisons if c.algorithm == a and f"{c.arithmetic}, {c.order}" == s),
                        default=float("nan"),
                    )
                    for a in algs
                ],
            }
            for s in settings
        ],
        "ylabel": "measured / budget",
        "logy": True,
        "hlines": [{"y": 1.0, "label": "budget"}],
    }
    figs: list[Figure] = [scatter, bars]
    if controls:
        figs.append(
            {
                "kind": "table",
                "title": "negative controls (must FAIL: measured/budget > 1)",
                "columns": ["mutant", "measured / budget", "detail"],
                "rows": [[c["mutant"], f"{c['ratio']:.3g}", c["detail"]] for c in controls],
            }
        )
    return figs


def unbiasedness_figures(looks: Sequence[Sequence[float]], delta: float) -> list[Figure]:
    """The sequential test's certified relative bias bound after each look, against δ."""
    return [
        {
            "kind": "line",
            "title": "certified relative bias bound vs draws (sequential looks)",
            "x": [lk[0] for lk in looks],
            "series": [{"label": "certified bound", "y": [lk[1] for lk in looks]}],
            "xlabel": "draws",
            "ylabel": "bound / ||Q^T g||",
            "logx": True,
            "logy": True,
            "hlines": [{"y": delta, "label": "delta"}],
        }
    ]
