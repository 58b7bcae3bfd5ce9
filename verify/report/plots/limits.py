"""The figure of the exact-where-the-theory-says claims (``rtrl.snap-exactness``, ``rtrl.rflo-limits``,
``rtrl.eprop-limits``): each case's error against exact float64 RTRL, on a log scale, beside the two thresholds
(round-off for the cases the theory says are exact, the bias floor for those it says are biased)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verify.figure_spec import Figure

__all__ = ["limits_figure"]

_TINY = 1e-18  #: an error of exactly 0 drawn at this height (log scale)


def limits_figure(
    rows: Sequence[Mapping[str, Any]], label: Callable[[Mapping[str, Any]], str], *, title: str, exact: float,
    biased: float,
) -> Figure:  # fmt: skip
    """One point per case (``label(row)``, a category), ``row["error"]`` its relative error, one series per
    ``row["expect"]``."""

    def series(kind: str, text: str) -> dict[str, Any]:
        mine = [r for r in rows if r["expect"] == kind]
        return {"label": text, "x": [label(r) for r in mine], "y": [max(float(r["error"]), _TINY) for r in mine]}

    return {
        "kind": "scatter",
        "title": title,
        "series": [
            series("exact", "theory: exact (must be <= round-off)"),
            series("biased", "theory: biased (must be > the bias floor)"),
        ],
        "ylabel": "relative error vs exact RTRL",
        "logy": True,
        "hlines": [{"y": exact, "label": f"round-off {exact:.0e}"}, {"y": biased, "label": f"bias floor {biased:.0e}"}],
        "caption": f"an error of 0 is drawn at {_TINY:.0e}; PASS needs every exact case below {exact:.0e} and every "
        f"biased case above {biased:.0e}",
    }
