"""The figure spec: the JSON form every figure of a result takes, validated in one place.

A check writes figure specs into ``CheckResult.data["figures"]`` (the format is
documented in :mod:`verify.report.figures`); :func:`normalize_figure` validates a
spec and returns its clean JSON copy. The results schema (:mod:`verify.schema`) and
the renderers (:mod:`verify.report`) both call it, so a figure a renderer sees has
passed the same validation as one read back from a ``results.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verify.errors import InvalidArgument

__all__ = ["FIGURE_KINDS", "Figure", "finite_or_none", "normalize_figure"]

FIGURE_KINDS = ("line", "scatter", "bar", "errorbar", "table")
_STYLES = ("solid", "dashed", "markers")

Figure = dict[str, Any]


def finite_or_none(v: Any) -> float | None:
    """A finite float, or None for null/nan/inf/non-numbers."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _jsonable_list(name: str, v: Any) -> list[Any]:
    if not isinstance(v, (list, tuple)):
        raise InvalidArgument(name, type(v).__name__, "must be a list")
    out: list[Any] = []
    for item in v:
        if item is None or isinstance(item, (str, int, float, bool)):
            out.append(item if not (isinstance(item, float) and not math.isfinite(item)) else str(item))
        else:
            raise InvalidArgument(name, type(item).__name__, "items must be numbers, strings or null")
    return out


def normalize_figure(spec: Any) -> Figure:
    """Validate a figure spec and return a clean JSON copy; raises :class:`InvalidArgument`."""
    if not isinstance(spec, Mapping):
        raise InvalidArgument("figure", type(spec).__name__, "a figure spec must be a JSON object")
    kind = spec.get("kind")
    if kind not in FIGURE_KINDS:
        raise InvalidArgument("figure.kind", kind, f"must be one of {FIGURE_KINDS}")
    title = spec.get("title")
    if not isinstance(title, str) or not title:
        raise InvalidArgument("figure.title", title, "every figure needs a title")
    out: Figure = {"kind": kind, "title": title}
    for key in ("xlabel", "ylabel", "caption"):
        if key in spec and spec[key] is not None:
            out[key] = str(spec[key])
    if kind == "table":
        out["columns"], out["rows"] = _table(spec)
        return out
    for key in ("logx", "logy", "diagonal"):
        out[key] = bool(spec.get(key, False))
    shared_x = _jsonable_list("figure.x", spec["x"]) if spec.get("x") is not None else None
    if shared_x is not None:
        out["x"] = shared_x
    series_in = spec.get("series")
    if not isinstance(series_in, (list, tuple)) or not series_in:
        raise InvalidArgument("figure.series", series_in, "needs a non-empty list of series")
    out["series"] = [_series(i, s, shared_x, kind) for i, s in enumerate(series_in)]
    hl = spec.get("hlines") or []
    if not isinstance(hl, (list, tuple)):
        raise InvalidArgument("figure.hlines", type(hl).__name__, "must be a list of {'y', 'label'}")
    hlines = []
    for i, h in enumerate(hl):
        if not isinstance(h, Mapping) or finite_or_none(h.get("y")) is None:
            raise InvalidArgument(f"figure.hlines[{i}]", h, "needs a finite 'y'")
        hlines.append({"y": finite_or_none(h.get("y")), "label": str(h.get("label", ""))})
    if hlines:
        out["hlines"] = hlines
    return out


def _table(spec: Mapping[str, Any]) -> tuple[list[Any], list[list[Any]]]:
    """A table figure's columns and rows, each row as long as the columns."""
    cols = _jsonable_list("figure.columns", spec.get("columns"))
    rows_in = spec.get("rows")
    if not isinstance(rows_in, (list, tuple)):
        raise InvalidArgument("figure.rows", type(rows_in).__name__, "a table needs a list of rows")
    rows = [_jsonable_list(f"figure.rows[{i}]", r) for i, r in enumerate(rows_in)]
    for i, r in enumerate(rows):
        if len(r) != len(cols):
            raise InvalidArgument(f"figure.rows[{i}]", len(r), f"has {len(r)} cells for {len(cols)} columns")
    return cols, rows


def _series(i: int, s: Any, shared_x: list[Any] | None, kind: str) -> dict[str, Any]:
    """Series ``i`` of a plot, validated: label, y, its own x if given, error bars, style."""
    name = f"figure.series[{i}]"
    if not isinstance(s, Mapping):
        raise InvalidArgument(name, type(s).__name__, "must be an object with 'label' and 'y'")
    y = _jsonable_list(f"{name}.y", s.get("y"))
    x = _jsonable_list(f"{name}.x", s["x"]) if s.get("x") is not None else shared_x
    if x is None:
        raise InvalidArgument(f"{name}.x", None, "no x values (give the figure's 'x' or the series' own)")
    if len(x) != len(y):
        raise InvalidArgument(f"{name}.y", len(y), f"has {len(y)} values for {len(x)} x values")
    clean: dict[str, Any] = {"label": str(s.get("label", f"series {i + 1}")), "y": y}
    if s.get("x") is not None:
        clean["x"] = x
    for key in ("yerr", "ylow", "yhigh"):
        if s.get(key) is not None:
            vals = _jsonable_list(f"{name}.{key}", s[key])
            if len(vals) != len(y):
                raise InvalidArgument(f"{name}.{key}", len(vals), f"has {len(vals)} values for {len(y)} y values")
            clean[key] = vals
    if ("ylow" in clean) != ("yhigh" in clean):
        raise InvalidArgument(name, "ylow/yhigh", "give both 'ylow' and 'yhigh' (or 'yerr')")
    style = s.get("style", "markers" if kind == "scatter" else "solid")
    if style not in _STYLES:
        raise InvalidArgument(f"{name}.style", style, f"must be one of {_STYLES}")
    clean["style"] = style
    return clean


# -------------------------------------------------------------------- adapters
