r"""The figure layer of the report: a JSON figure convention and its matplotlib renderer.

Every figure in a report is a plain JSON object (a *figure spec*); the same object
is stored in ``results.json`` (so every figure's data is in the JSON) and drawn
into a PNG with matplotlib (no pyplot, no global backend change).

How a check gets figures
------------------------
1. **Explicitly** -- put a list of figure specs under ``data["figures"]`` in the
   :class:`~verify.verdict.CheckResult`::

       data={"figures": [{
           "kind": "line",                      # line | scatter | bar | errorbar | table
           "title": "truncation error vs k",
           "x": [1, 2, 3, 4],                   # shared x (numbers; strings = categories)
           "series": [
               {"label": "measured", "y": [0.3, 0.1, 0.02, 0.004]},
               {"label": "bound k*lam^k*gamma", "y": [0.5, 0.2, 0.05, 0.01], "style": "dashed"},
           ],
           "xlabel": "k", "ylabel": "||grad - grad^k||", "logx": False, "logy": True,
       }]}

2. **By convention** -- a check whose ``data`` has a known shape gets a figure
   without writing one (see :data:`ADAPTERS`):

   * ``data["comparisons"]``: rows ``{"error": float, "budget": float,
     "comparison": str?, "problem": str?, "target": float?}`` -- or with several
     named errors ``{"<name>_error": float, "<name>_budget": float}`` (a shared
     ``budget`` serves every ``<name>_error`` without its own) -> *measured error vs
     predicted budget* (log-log scatter, one series per comparison label / error
     name, the line error = budget, the design target (:mod:`theory.notes`) as a horizontal line). The
     ``reference`` and ``rtrl`` families use it; GPU-vs-CPU parity checks can use
     the same rows.

   Explicit ``data["figures"]`` take precedence over conventions (a check that
   writes its own figures gets exactly those).

3. **Run-level** figures are built from every result: the *negative controls /
   mutant-kill table* (every :class:`~verify.verdict.Control` of every claim, plus
   rows a check lists in ``data["mutants"]`` as ``{"mutant", "expected",
   "observed", "detail"?}``).

Figure spec fields
------------------
``kind``
    ``"line"`` (lines with markers), ``"scatter"`` (markers), ``"bar"`` (grouped
    bars over categorical ``x``), ``"errorbar"`` (points with error bars, e.g.
    confidence intervals) or ``"table"``.
``title`` (required), ``xlabel``, ``ylabel``, ``caption`` (optional text under it)
``x``
    Shared x values. A series may carry its own ``"x"`` instead.
``series``
    List of ``{"label": str, "y": [...]}``; optional ``"x"``, ``"yerr"`` (symmetric
    half-widths) or ``"ylow"``/``"yhigh"`` (interval bounds, e.g. a confidence
    interval), ``"style"``: ``"solid"`` | ``"dashed"`` (a bound) | ``"markers"``.
``logx``, ``logy``
    Log axes. Values <= 0 cannot be shown on a log axis; they are left out and the
    figure says how many were left out (never silently).
``hlines``
    ``[{"y": float, "label": str}]`` horizontal reference lines (a threshold).
``diagonal``
    ``true`` draws the line y = x (for measured-vs-predicted plots).
``columns``, ``rows`` (``kind="table"`` only)
    Column names and rows of cells (strings or numbers); drawn as an HTML/markdown
    table, not a PNG.

Numbers may be ``null``, ``"nan"`` or ``"inf"`` (how :func:`verify.verdict.to_jsonable`
writes non-finite floats); such points are left out of the plot and counted.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verify.errors import InvalidArgument
from verify.figure_spec import FIGURE_KINDS, Figure, normalize_figure
from verify.figure_spec import finite_or_none as _num

__all__ = [
    "ADAPTERS",
    "FIGURE_KINDS",
    "claim_figures",
    "comparisons_figure",
    "controls_table",
    "figure_empty_reason",
    "normalize_figure",
    "render_png",
]

_ZERO_FLOOR = 1e-18


def _error_pairs(row: Mapping[str, Any]) -> list[tuple[str | None, Any, float | None]]:
    """(label suffix, error, budget) pairs of one comparison row (see :func:`comparisons_figure`)."""
    pairs: list[tuple[str | None, Any, float | None]] = []
    shared = _num(row.get("budget"))
    if "error" in row:
        pairs.append((None, row.get("error"), shared))
    for key in row:
        if key.endswith("_error"):
            name = key[: -len("_error")]
            bud = _num(row.get(f"{name}_budget"))
            pairs.append((name.replace("_", " "), row.get(key), bud if bud is not None else shared))
    return pairs


def comparisons_figure(claim_id: str, data: Mapping[str, Any]) -> list[Figure]:
    """``data["comparisons"]`` rows -> measured error vs predicted budget (log-log scatter).

    A row holds ``error`` and ``budget``, and/or any number of ``<name>_error`` with
    ``<name>_budget`` (or the shared ``budget``); optional ``comparison`` (series
    label), ``problem``, ``target`` (drawn as a horizontal line). Series: one per
    ``comparison`` label and error name. Errors that are exactly 0 (bitwise
    agreement) cannot sit on a log axis; they are drawn at 1e-18 in their own,
    labelled series. Rows without a finite error and positive budget are left out
    (counted in the caption).
    """
    rows = data.get("comparisons")
    if not isinstance(rows, list) or not rows:
        return []
    groups, zeros, targets, points, skipped = _comparison_points(rows)
    series = [{"label": k, "x": v[0], "y": v[1], "style": "markers"} for k, v in sorted(groups.items())]
    if zeros[0]:
        series.append(
            {"label": f"error exactly 0 (drawn at {_ZERO_FLOOR:g})", "x": zeros[0], "y": zeros[1], "style": "markers"}
        )
    if not series:
        return []
    caption = f"{points} comparisons; a point below the diagonal error = budget passes."
    if skipped:
        caption += f" {skipped} entries without a finite error and budget are not drawn."
    fig: Figure = {
        "kind": "scatter",
        "title": f"{claim_id}: measured error vs predicted budget",
        "series": series,
        "xlabel": "predicted round-off budget (relative)",
        "ylabel": "measured relative error",
        "logx": True,
        "logy": True,
        "diagonal": True,
        "caption": caption,
    }
    if targets:
        fig["hlines"] = [{"y": t, "label": f"design target {t:g}"} for t in sorted(targets)]
    return [fig]


def _comparison_points(
    rows: list[Any],
) -> tuple[dict[str, tuple[list[Any], list[Any]]], tuple[list[Any], list[Any]], set[float], int, int]:
    """(budget, error) points by series label, the exact zeros, the targets, points drawn and entries left out."""
    groups: dict[str, tuple[list[Any], list[Any]]] = {}
    zeros: tuple[list[Any], list[Any]] = ([], [])
    targets: set[float] = set()
    points = skipped = 0
    for r in rows:
        if not isinstance(r, Mapping):
            continue
        t = _num(r.get("target"))
        if t is not None and t > 0:
            targets.add(t)
        for name, err_raw, bud in _error_pairs(r):
            err = _num(err_raw)
            if bud is None or bud <= 0 or err is None:
                skipped += 1
                continue
            points += 1
            if err == 0.0:
                zeros[0].append(bud)
                zeros[1].append(_ZERO_FLOOR)
                continue
            base = r.get("comparison", r.get("name"))
            label = " / ".join(str(v) for v in (base, name) if v) or "comparison"
            xs, ys = groups.setdefault(label, ([], []))
            xs.append(bud)
            ys.append(err)
    return groups, zeros, targets, points, skipped


#: conventional data shapes -> figures; each adapter sees (claim_id, data) and
#: returns figure specs (an empty list when the shape is absent)
ADAPTERS: tuple[Callable[[str, Mapping[str, Any]], list[Figure]], ...] = (comparisons_figure,)


def claim_figures(claim_id: str, data: Mapping[str, Any]) -> tuple[list[Figure], list[str]]:
    """Figures of one claim: ``data["figures"]`` if given, else the conventional adapters.

    Returns (valid normalised figures, problems); a spec that does not validate is
    reported by name, not drawn, and does not stop the report.
    """
    problems: list[str] = []
    raw: list[Any]
    if "figures" in data:
        given = data["figures"]
        raw = list(given) if isinstance(given, (list, tuple)) else [given]
    else:
        raw = []
        for adapter in ADAPTERS:
            try:
                raw.extend(adapter(claim_id, data))
            except Exception as exc:  # a malformed data shape must not sink the report
                problems.append(f"{adapter.__name__}: {exc}")
    out: list[Figure] = []
    for i, spec in enumerate(raw):
        try:
            fig = normalize_figure(spec)
        except InvalidArgument as exc:
            problems.append(f"figure {i + 1}: {exc}")
            continue
        empty = figure_empty_reason(fig)
        if empty:  # a figure that would draw nothing is not drawn; the report says why
            problems.append(f"figure {i + 1} ({fig['title']}): {empty}; its data are in results.json")
        else:
            out.append(fig)
    return out, problems


def figure_empty_reason(fig: Mapping[str, Any]) -> str | None:
    """Why a normalised figure would draw no point at all (``None`` when it draws something).

    Tables always draw. A plot draws nothing when no series has a point with finite x
    and y (and positive values on a log axis); then it is not drawn and the report says
    why instead of showing empty axes.
    """
    if fig.get("kind") == "table":
        return None
    series = fig.get("series") or []
    categorical = any(isinstance(v, str) for s in series for v in s.get("x", fig.get("x", [])) or [])
    logx = bool(fig.get("logx")) and not (categorical or fig.get("kind") == "bar")
    logy = bool(fig.get("logy"))
    total = drawn = 0
    for s in series:
        xs = s.get("x", fig.get("x")) or []
        keep, dropped = _points(xs, s.get("y") or [], logx, logy)
        drawn += len(keep)
        total += len(keep) + dropped
    if drawn:
        return None
    why = "not finite, or not positive on a log axis" if (logx or logy) else "not finite"
    return f"none of its {total} points can be drawn ({why})"


def controls_table(records: Sequence[Mapping[str, Any]]) -> Figure | None:
    """The negative-control / mutant-kill table over every claim record."""
    rows: list[list[Any]] = []
    for rec in records:
        cid = str(rec.get("id"))
        for c in rec.get("controls") or []:
            if isinstance(c, Mapping):
                exp, obs = str(c.get("expected")), str(c.get("observed"))
                rows.append(
                    [cid, str(c.get("name")), exp, obs, "yes" if exp == obs else "NO", str(c.get("detail", ""))]
                )
        data = rec.get("data") or {}
        for m in data.get("mutants") or [] if isinstance(data, Mapping) else []:
            if isinstance(m, Mapping):
                exp, obs = str(m.get("expected", "FAIL")), str(m.get("observed", m.get("verdict")))
                rows.append(
                    [cid, str(m.get("mutant")), exp, obs, "yes" if exp == obs else "NO", str(m.get("detail", ""))]
                )
    if not rows:
        return None
    caught = sum(r[4] == "yes" for r in rows)
    return {
        "kind": "table",
        "title": "Negative controls and mutants",
        "caption": f"{caught} of {len(rows)} controls came out as expected (a mutant must be caught: expected FAIL).",
        "columns": ["claim", "control / mutant", "expected", "observed", "as expected", "detail"],
        "rows": rows,
    }


# -------------------------------------------------------------------- drawing
def _points(xs: Sequence[Any], ys: Sequence[Any], logx: bool, logy: bool) -> tuple[list[int], int]:
    """Indices of drawable points and the count of points left out."""
    keep: list[int] = []
    dropped = 0
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        yv = _num(y)
        xv = _num(x) if not isinstance(x, str) else 0.0
        if yv is None or xv is None or (logy and yv <= 0) or (logx and not isinstance(x, str) and xv <= 0):
            dropped += 1
        else:
            keep.append(i)
    return keep, dropped


def _log_ticks(axis: Any) -> None:
    """Readable log-axis labels: 1-2-5 majors over short ranges, never labelled minors (they overlap)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    if lo > 0 and hi / lo < 100:  # short range: 1-2-5 ticks with compact labels (0.2, 5, 2e-14)
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def render_png(fig: Mapping[str, Any], dpi: int = 100) -> bytes:
    """Draw a normalised (non-table) figure spec as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    if fig["kind"] == "table":
        raise InvalidArgument("figure.kind", "table", "tables are rendered as tables, not PNG")
    mfig = MplFigure(figsize=(7.0, 4.2))
    FigureCanvasAgg(mfig)
    ax = mfig.add_subplot(1, 1, 1)
    kind = fig["kind"]
    logx, logy = bool(fig.get("logx")), bool(fig.get("logy"))
    dropped = 0
    series = fig["series"]
    cats = _categories(fig, series, kind)
    finite_xy: list[float] = []  # any drawn point at all
    empty_series: list[str] = []
    drawn: list[tuple[str, list[float], list[float]]] = []  # (label, x, y) of the series drawn so far
    for si, s in enumerate(series):
        xs = s.get("x", fig.get("x"))
        keep, d = _points(xs, s["y"], logx and not cats, logy)
        dropped += d
        if not keep:
            if d:
                empty_series.append(str(s["label"]))
            continue
        x, y, err = _series_data(s, xs, keep, cats)
        if cats and kind == "errorbar" and len(series) > 1:  # side by side within a category: no bar hides another
            x = [xx + _dodge(si, len(series)) for xx in x]
        finite_xy.extend(x + y)
        same = next((lab for lab, dx, dy in drawn if _same_points(dx, dy, x, y)), None)
        label = s["label"] if same is None else f"{s['label']} (same points as {same})"
        _draw_series(ax, kind, si, len(series), x, y, err, label, s.get("style", "solid"), hollow=same is not None)
        drawn.append((str(s["label"]), x, y))
    _decorate(ax, fig, cats, logx, logy, finite_xy)
    if dropped:
        why = "non-positive on a log axis or not finite" if (logx or logy) else "not finite"
        note = f"{dropped} point(s) not drawn ({why}); they are in results.json"
        if empty_series:
            note += "; series with no drawn point: " + ", ".join(empty_series)
        mfig.text(0.01, 0.01, note, fontsize=7)
    # fixed margins instead of tight_layout (which costs more than the drawing itself)
    rotated = bool(cats) and max(len(c) for c in cats) > 6
    mfig.subplots_adjust(left=0.13, right=0.97, top=0.92, bottom=0.26 if rotated else 0.13)
    buf = io.BytesIO()
    mfig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def _dodge(si: int, n_series: int) -> float:
    """The x offset of series ``si`` of ``n_series`` within a category (error bars side by side, 0.6 wide in all)."""
    return (si - (n_series - 1) / 2.0) * min(0.6 / n_series, 0.2)


def _categories(fig: Mapping[str, Any], series: Sequence[Mapping[str, Any]], kind: str) -> list[str]:
    """The categorical x values in order of appearance (bar charts, string x); empty for a numeric x axis."""
    categorical = any(isinstance(v, str) for s in series for v in s.get("x", fig.get("x", [])))
    cats: list[str] = []
    if categorical or kind == "bar":
        for s in series:
            for v in s.get("x", fig.get("x", [])):
                if str(v) not in cats:
                    cats.append(str(v))
    return cats


def _series_data(
    s: Mapping[str, Any], xs: Sequence[Any], keep: list[int], cats: list[str]
) -> tuple[list[float], list[float], Any]:
    """The drawable points of one series: x (category index on a categorical axis), y, and error bars or None."""
    y = [float(_num(s["y"][i]) or 0.0) for i in keep]
    if cats:
        x = [float(cats.index(str(xs[i]))) for i in keep]
    else:
        x = [float(_num(xs[i]) or 0.0) for i in keep]
    err: Any = None
    if "yerr" in s:
        err = [abs(_num(s["yerr"][i]) or 0.0) for i in keep]
    elif "ylow" in s:
        lo = [_num(s["ylow"][i]) for i in keep]
        hi = [_num(s["yhigh"][i]) for i in keep]
        err = [
            [max(yy - (lv if lv is not None else yy), 0.0) for yy, lv in zip(y, lo, strict=True)],
            [max((hv if hv is not None else yy) - yy, 0.0) for yy, hv in zip(y, hi, strict=True)],
        ]
    return x, y, err


#: one marker shape per series (cycled), so that series of similar colour or on the same points stay apart
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _same_points(x0: list[float], y0: list[float], x1: list[float], y1: list[float]) -> bool:
    """Whether two drawn series have the same points (to 1e-9 relative): the later one would hide the first."""
    return len(x0) == len(x1) and all(
        math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300) for a, b in zip([*x0, *y0], [*x1, *y1], strict=True)
    )


def _draw_series(
    ax: Any, kind: str, si: int, n_series: int, x: list[float], y: list[float], err: Any, label: Any, style: str,
    *, hollow: bool = False,
) -> None:  # fmt: skip
    """Series ``si`` of ``n_series`` as bars, error bars, markers or a line.

    Each series has its own marker shape (:data:`MARKERS`); a series on the same points as one drawn before it
    (``hollow``) is drawn on top with larger hollow markers and a dotted line, so that both stay visible.
    """
    marker = MARKERS[si % len(MARKERS)]
    big = {"markersize": 8, "markerfacecolor": "none", "markeredgewidth": 1.5} if hollow else {}
    if kind == "bar":
        width = 0.8 / max(n_series, 1)
        xb = [xx - 0.4 + width * (si + 0.5) for xx in x]
        ax.bar(xb, y, width=width, label=label, yerr=err, capsize=3 if err is not None else 0)
    elif kind == "errorbar" or (err is not None and kind != "scatter"):
        ls = "--" if style == "dashed" else ("none" if kind == "errorbar" or style == "markers" else "-")
        ls = ":" if hollow and ls != "none" else ls
        ax.errorbar(x, y, yerr=err, fmt=marker, linestyle=ls, capsize=3, label=label, **({"markersize": 4} | big))
    elif hollow and (kind == "scatter" or style == "markers"):
        ax.plot(x, y, linestyle="none", marker=marker, label=label, **big)
    elif kind == "scatter" or style == "markers":
        ax.scatter(x, y, label=label, s=18, marker=marker)
    else:
        ls = ":" if hollow else ("--" if style == "dashed" else "-")
        ax.plot(x, y, ls, marker="" if style == "dashed" and not hollow else marker, label=label,
                **({"markersize": 3} | big))  # fmt: skip


def _decorate(ax: Any, fig: Mapping[str, Any], cats: list[str], logx: bool, logy: bool, finite_xy: list[float]) -> None:
    """The diagonal, horizontal lines, axes (categorical or log), title, labels, grid and legend."""
    if fig.get("diagonal") and finite_xy and not cats:
        if logx:
            ax.set_xscale("log")
        xlo, xhi = ax.get_xlim()  # the line y = x across the data's x range
        ax.plot([xlo, xhi], [xlo, xhi], color="grey", linestyle=":", linewidth=1, label="y = x")
        ax.set_xlim(xlo, xhi)
    looks = (("tab:red", "--"), ("tab:gray", "-."), ("tab:purple", ":"), ("tab:brown", "--"))
    for i, h in enumerate(fig.get("hlines", [])):
        if not (logy and h["y"] <= 0):
            color, ls = looks[i % len(looks)]
            ax.axhline(h["y"], color=color, linestyle=ls, linewidth=1, label=h.get("label") or None)
    if cats:
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=30 if max(len(c) for c in cats) > 6 else 0, ha="right")
    elif logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    for axis, is_log in ((ax.xaxis, logx and not cats), (ax.yaxis, logy)):
        if is_log:
            _log_ticks(axis)
    ax.set_title(fig["title"], fontsize=10)
    ax.set_xlabel(fig.get("xlabel", ""))
    ax.set_ylabel(fig.get("ylabel", ""))
    ax.grid(True, which="major", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="best")
    if not finite_xy:
        ax.text(0.5, 0.5, "no drawable point (see the report)", ha="center", va="center", transform=ax.transAxes)
