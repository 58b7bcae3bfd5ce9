"""The figure convention: validation, adapters and PNG rendering."""

from __future__ import annotations

import pytest

from verify.errors import InvalidArgument
from verify.report.figures import claim_figures, controls_table, normalize_figure, render_png

PNG = b"\x89PNG\r\n\x1a\n"


def _line(**kw: object) -> dict[str, object]:
    fig: dict[str, object] = {
        "kind": "line",
        "title": "truncation error vs k",
        "x": [1, 2, 3, 4],
        "series": [
            {"label": "measured", "y": [0.3, 0.1, 0.02, 0.0]},
            {"label": "bound", "y": [0.5, 0.2, 0.05, 0.01], "style": "dashed"},
        ],
        "xlabel": "k",
        "ylabel": "error",
        "logy": True,
    }
    fig.update(kw)
    return fig


@pytest.mark.parametrize(
    "spec",
    [
        _line(),
        {
            "kind": "scatter",
            "title": "s",
            "series": [{"label": "a", "x": [1e-14, 2e-14], "y": [1e-16, "nan"]}],
            "logx": True,
            "logy": True,
            "diagonal": True,
            "hlines": [{"y": 1e-12, "label": "target"}],
        },
        {
            "kind": "bar",
            "title": "variance vs rank",
            "x": ["r=1", "r=2", "r=4"],
            "series": [{"label": "var", "y": [4.0, 2.1, 0.9], "yerr": [0.2, 0.1, 0.05]}],
        },
        {
            "kind": "errorbar",
            "title": "bias CI",
            "x": [1, 2, 3],
            "series": [
                {"label": "bias", "y": [0.0, 0.01, -0.01], "ylow": [-0.02, -0.01, -0.03], "yhigh": [0.02, 0.03, 0.01]}
            ],
            "hlines": [{"y": 0.0}],
        },
        {  # several series on a categorical axis: side by side within each category
            "kind": "errorbar",
            "title": "rates per cell",
            "series": [
                {"label": m, "x": ["a", "b"], "y": [0.1, 0.2], "ylow": [0.1, 0.2], "yhigh": [0.3, 0.4]}
                for m in ("fixed", "planned", "sequential")
            ],
        },
    ],
)
def test_every_plot_kind_renders_a_png(spec: dict[str, object]) -> None:
    fig = normalize_figure(spec)
    png = render_png(fig)
    assert png.startswith(PNG) and len(png) > 2000


def test_normalize_keeps_the_data_json_clean() -> None:
    fig = normalize_figure(_line(x=[1, 2, 3, float("inf")]))
    assert fig["x"][-1] == "inf"  # strict JSON, no Infinity literal
    assert fig["series"][1]["style"] == "dashed" and fig["logy"] is True and fig["logx"] is False


@pytest.mark.parametrize(
    "spec, needle",
    [
        ({"kind": "pie", "title": "t"}, "kind"),
        ({"kind": "line", "series": [{"y": [1]}], "x": [1]}, "title"),
        (_line(x=[1, 2]), "values"),
        ({"kind": "line", "title": "t", "series": [{"label": "a", "y": [1, 2]}]}, "x values"),
        ({"kind": "line", "title": "t", "x": [1], "series": []}, "series"),
        ({"kind": "errorbar", "title": "t", "x": [1], "series": [{"y": [1], "ylow": [0]}]}, "yhigh"),
        ({"kind": "table", "title": "t", "columns": ["a", "b"], "rows": [[1]]}, "columns"),
        ({"kind": "line", "title": "t", "x": [1], "series": [{"y": [{"nested": 1}]}]}, "numbers"),
    ],
)
def test_bad_specs_are_refused_with_the_reason(spec: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidArgument, match=needle):
        normalize_figure(spec)


def test_explicit_figures_take_precedence_and_bad_ones_are_reported() -> None:
    data = {"figures": [_line(), {"kind": "line"}], "comparisons": [{"error": 1e-16, "budget": 1e-14}]}
    figs, problems = claim_figures("x.y", data)
    assert [f["title"] for f in figs] == ["truncation error vs k"]
    assert len(problems) == 1 and "figure 2" in problems[0]


def test_comparisons_adapter_draws_error_vs_budget_with_zeros_labelled() -> None:
    rows = [
        {"problem": "p1", "comparison": "adjoint vs BPTT", "error": 1e-16, "budget": 3e-14, "target": 1e-12},
        {"problem": "p2", "comparison": "adjoint vs BPTT", "error": 0.0, "budget": 2e-14, "target": 1e-12},
    ]
    (fig,), problems = claim_figures("reference.adjoint", {"comparisons": rows})
    assert not problems and fig["kind"] == "scatter" and fig["diagonal"] and fig["logx"] and fig["logy"]
    labels = [s["label"] for s in fig["series"]]
    assert labels[0] == "adjoint vs BPTT" and "exactly 0" in labels[1]
    assert fig["hlines"][0]["y"] == 1e-12
    assert render_png(fig).startswith(PNG)


def test_controls_table_collects_controls_and_mutants() -> None:
    recs = [
        {"id": "a.b", "controls": [{"name": "mutant m", "expected": "FAIL", "observed": "FAIL"}], "data": {}},
        {"id": "c.d", "controls": [], "data": {"mutants": [{"mutant": "m2", "observed": "PASS"}]}},
    ]
    table = controls_table(recs)
    assert table is not None
    assert [r[4] for r in table["rows"]] == ["yes", "NO"] and "1 of 2" in table["caption"]
    assert controls_table([{"id": "x.y", "controls": []}]) is None


def test_a_series_on_the_same_points_as_another_stays_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41: e-prop and SnAp-1 coincide on an Elman cell, and the later line hid the first."""
    from verify.report import figures

    calls: list[tuple[int, str, bool]] = []
    draw = figures._draw_series

    def spy(ax, kind, si, n, x, y, err, label, style, *, hollow=False):  # type: ignore[no-untyped-def]
        calls.append((si, label, hollow))
        draw(ax, kind, si, n, x, y, err, label, style, hollow=hollow)

    monkeypatch.setattr(figures, "_draw_series", spy)
    y = [0.1, 0.3, 0.35]
    spec = {
        "kind": "line",
        "title": "normalized bias",
        "x": [4, 6, 8],
        "series": [
            {"label": "SnAp-1", "y": y, "ylow": [v - 0.05 for v in y], "yhigh": [v + 0.05 for v in y]},
            {"label": "RFLO", "y": [0.3, 0.39, 0.37], "ylow": [0.2] * 3, "yhigh": [0.5] * 3},
            {"label": "e-prop", "y": [v * (1 + 1e-15) for v in y], "ylow": [0.0] * 3, "yhigh": [0.5] * 3},
            {"label": "SnAp-2", "y": [0.1, 0.3, 0.36]},  # one point apart: its own series
        ],
    }
    png = render_png(normalize_figure(spec))
    assert png.startswith(PNG)
    assert calls == [
        (0, "SnAp-1", False),
        (1, "RFLO", False),
        (2, "e-prop (same points as SnAp-1)", True),
        (3, "SnAp-2", False),
    ]
    assert len(set(figures.MARKERS)) == len(figures.MARKERS) >= 4  # each of the first series its own shape
