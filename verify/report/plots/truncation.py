"""Figures of the truncation claims (Miller & Hardt, "Stable Recurrent Models"): bounds, rates, Prop. 2–4, Fig. 1(a).

Every builder takes plain values (lists, dicts of the checks' ``data``) and returns figure
specs of the report convention (:mod:`verify.figure_spec`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from verify.report.plots import Figure

__all__ = [
    "bound_figure",
    "certificate_table",
    "figure1a_figure",
    "gradient_bound_figures",
    "prop2_figure",
    "prop3_figure",
    "prop4_figures",
    "rate_figures",
    "state_bound_figures",
    "tbptt_bound_figures",
    "tightness_figure",
]


class _Prop2Sizes(Protocol):
    """What the Prop. 2 figure reads of the setup: the number of runs and of steps."""

    @property
    def runs(self) -> int: ...

    @property
    def N(self) -> int: ...


def _fig(kind: str, title: str, x: Sequence[Any] | None, series: list[dict[str, Any]], **kw: Any) -> Figure:
    """A figure spec of the report convention (:mod:`verify.report.figures`)."""
    spec: dict[str, Any] = {"kind": kind, "title": title, "series": series, **kw}
    if x is not None:
        spec["x"] = list(x)
    return spec


def bound_figure(
    title: str,
    series: Mapping[str, Sequence[float]],
    ylabel: str,
    extra: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    **kw: Any,
) -> Figure:
    """Measured error and explicit bound against k on a log axis.

    ``series``: the ``ks``, ``errors`` and ``bounds`` of one bound series (its ``as_dict()``);
    ``extra``: other bounds of the same errors, label → series.
    """
    curves = [
        {"label": "measured", "y": list(series["errors"]), "style": "markers"},
        {"label": "explicit bound", "y": list(series["bounds"]), "style": "dashed"},
    ]
    for label, e in (extra or {}).items():
        curves.append({"label": label, "y": list(e["bounds"]), "style": "dashed"})
    return _fig("line", title, series["ks"], curves, xlabel="k", logy=True, ylabel=ylabel, **kw)


def tightness_figure(title: str, rows: Sequence[Mapping[str, Any]], name: str) -> Figure:
    """Measured/bound (worst k) of bound ``name`` against λ per model kind; ``rows``: the instances' summary rows."""
    series = []
    for kind in ("linear", "elman-tanh"):
        sel = [r for r in rows if r["kind"] == kind]
        series.append({"label": kind, "x": [r["lam"] for r in sel], "y": [r[f"{name}_tightness"] for r in sel]})
    return _fig(
        "scatter",
        title,
        None,
        series,
        xlabel="lambda",
        ylabel="measured / bound (worst k)",
        logy=True,
        hlines=[{"y": 1.0, "label": "bound"}],
    )


def state_bound_figures(rows: Sequence[Mapping[str, Any]], series: Mapping[str, Any]) -> list[Figure]:
    """Lemma 1: tightness on the random instances (their summary rows), the bound on the extremal system at λ = 0.6."""
    return [
        tightness_figure("Lemma 1: tightness on random contractive instances", rows, "state"),
        bound_figure("Lemma 1 on the extremal scalar system (lambda = 0.6)", series, "max_t ||h_t - h_t^k||"),
    ]


def gradient_bound_figures(rows: Sequence[Mapping[str, Any]], series: Mapping[str, Mapping[str, Any]]) -> list[Figure]:
    """Lemma 2 (truncated model): tightness on the random instances; on the extremal system at λ = 0.3,
    the corrected bound, γkλ^k and the bound as printed.

    ``series``: the ``as_dict()`` of the ``model``, ``model:gamma`` and ``model:printed-proof`` series.
    """
    extra = {"gamma k lambda^k": series["model:gamma"], "as printed (k lambda^k)": series["model:printed-proof"]}
    return [
        tightness_figure("Lemma 2 (truncated model): tightness on random contractive instances", rows, "model"),
        bound_figure(
            "Lemma 2 on the extremal scalar system (lambda = 0.3): corrected vs printed",
            series["model"],
            "||grad p_T - grad p_T^k||",
            extra,
            caption="the printed bound lies below the measured error: the erratum in (b), (c)",
        ),
    ]


def tbptt_bound_figures(rows: Sequence[Mapping[str, Any]], series: Mapping[str, Any]) -> list[Figure]:
    """Truncated BPTT: tightness on the random instances (their summary rows), the bound on the extremal system."""
    return [
        tightness_figure("truncated BPTT: tightness on random contractive instances", rows, "tbptt"),
        bound_figure("truncated BPTT on the extremal scalar system (lambda = 0.6)", series, "||grad p_T - g^k_T||"),
    ]


def rate_figures(rows: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """Lemma 2's rate: each fitted slope of log(e_k/k) with its 99% CI against log λ, truncated model and TBPTT."""
    return [
        _fig(
            "errorbar",
            f"fitted slope of log(e_k/k) (99% CI) against log lambda, {series}",
            None,
            [
                {
                    "label": series,
                    "x": [r["log_lam"] for r in rows if r["series"] == series],
                    "y": [r["slope"] for r in rows if r["series"] == series],
                    "ylow": [r["ci"][0] for r in rows if r["series"] == series],
                    "yhigh": [r["ci"][1] for r in rows if r["series"] == series],
                }
            ],
            xlabel="log lambda",
            ylabel="slope",
            diagonal=True,
            caption="the claim holds where the interval reaches down to the diagonal slope = log lambda",
        )
        for series in ("model", "tbptt")
    ]


def _drawable(values: Sequence[float], limit: float = 1e30) -> list[float | None]:
    """Values for a log-axis figure: vacuous ones (> ``limit`` or non-finite) become null (left out, counted)."""
    return [v if math.isfinite(v) and v <= limit else None for v in values]


def _prop2_measured(r: Mapping[str, Any], floor: float) -> tuple[list[dict[str, Any]], list[str]]:
    """The mean δ_t of each schedule; one that is 0 at every step is drawn at ``floor`` and named."""
    measured: list[dict[str, Any]] = []
    zero: list[str] = []
    for sched in r["schedules"]:
        ys = list(r["schedules"][sched]["mean_delta"])
        if ys and all(v == 0.0 for v in ys):
            zero.append(sched)
            measured.append({"label": f"delta_t, {sched}: 0 at every step (drawn at {floor:.0e})",
                             "y": [floor] * len(ys), "style": "markers"})  # fmt: skip
        else:
            measured.append({"label": f"delta_t, {sched}", "y": ys})
    return measured, zero


def prop2_figure(kind: str, r: Mapping[str, Any], setup: _Prop2Sizes) -> Figure:
    """δ_t against Prop. 2's bound on a log axis; δ_t that is exactly 0 at every step is drawn, and said to be 0.

    δ_t = 0 throughout (tanh saturates: the truncation changes the gradient by less than one
    ulp of the weights) cannot sit on a log axis; it is drawn at a floor a decade below the
    smallest drawn bound value and labelled, instead of vanishing from the figure. The bound
    with the sympy constants (10^(10^9) for tanh) is stated in the caption, not drawn; so is how saturated
    a tanh instance is (``r["instance"]``, :func:`~verify.truncation.prop2.prop2_experiment`).
    ``r``: one model kind's Prop. 2 record (schedules α/t, α/√t, constant, in that order).
    """
    sharp = _drawable(r["schedules"]["alpha/t"]["mean_bound_sharp"])
    printed = _drawable(r["schedules"]["alpha/t"]["mean_bound_printed"])
    bounds: list[dict[str, Any]] = [
        {"label": "Prop. 2 bound, alpha/t (measured constants, sum form)", "y": sharp, "style": "dashed"},
        {"label": "Prop. 2 bound as printed (measured constants)", "y": printed, "style": "dashed"},
    ]
    positive = [v for v in sharp + printed if v is not None and v > 0]
    floor = 10.0 ** math.floor(math.log10(min(positive)) - 1) if positive else 1e-20
    measured, zero = _prop2_measured(r, floor)
    caption = (
        f"with the sympy constants the bound is 10^{r['log10_explicit_prop2']:.3g} (vacuous, not drawn); "
        "bound values above 1e30 are not drawn"
    )
    if zero:
        caption += (
            f"; delta_t is exactly 0 at every step for {', '.join(zero)} (the truncation changes the gradient by "
            "less than one ulp of the weights): drawn at the floor, below every bound"
        )
    inst = r.get("instance")
    if inst is not None and kind != "linear":
        sd = inst["input_sd"]
        drawn = "App. A.5's instance" if sd is None else f"App. A.5's draws with U rescaled (input drive s.d. {sd:g})"
        state = "saturated" if inst["saturated"] else "not saturated"
        caption += (
            f"; {drawn}: pre-activation s.d. {inst['preactivation_sd']:.2g}, mean tanh' "
            f"{inst['mean_derivative']:.2g} ({state})"
        )
    return _fig(
        "line",
        f"Prop. 2 ({kind}): ||w_recurr - w_trunc|| during training (mean of {setup.runs} runs)",
        list(range(1, setup.N + 1)),
        measured + bounds,
        xlabel="step t",
        ylabel="||w_recurr - w_trunc||_F",
        logy=True,
        caption=caption,
    )


def prop3_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Prop. 3: |y_t − y^k_t| against t for each k (rows: k, t, error) on a log axis."""
    return _fig(
        "line",
        "Prop. 3: truncation error of the unstable system a = 2",
        None,
        [{"label": f"k = {r['k']}", "x": r["t"], "y": r["error"]} for r in rows],
        xlabel="t",
        ylabel="|y_t - y_t^k|",
        logy=True,
        caption="= 2^(t-1) for every k: no truncation length helps",
    )


def prop4_figures(
    log_a: Sequence[float], log_grad: Sequence[float], projected: Sequence[float], every: int
) -> list[Figure]:
    """Prop. 4: log10 |a_i| and log10 |∇| of the diverging descent; ``projected``: every ``every``-th projected a_i."""
    return [
        _fig(
            "line",
            "Prop. 4: gradient descent from a = 1.5 with steps 1/i",
            list(range(len(log_a))),
            [
                {"label": "log10 |a_i|", "y": list(log_a)},
                {"label": "log10 |grad p_T(a_i)|", "x": list(range(len(log_grad))), "y": list(log_grad)},
            ],
            xlabel="iteration i",
            ylabel="log10",
            caption="float64 overflows after two steps; computed in mpmath",
        ),
        _fig(
            "line",
            "Prop. 4: the same descent projected onto the stable set [-0.9, 0.9]",
            [every * i for i in range(len(projected))],
            [{"label": "a_i", "y": list(projected)}],
            xlabel="iteration i",
            ylabel="a",
        ),
    ]


def certificate_table(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """The contraction certificates: decision, λ, norm, witness, iterations and verdict per instance."""
    return {
        "kind": "table",
        "title": "contraction certificates",
        "columns": ["instance", "decision", "lambda", "norm", "witness", "r (l2 steps)", "ok"],
        "rows": [
            [
                r["instance"],
                r["decision"],
                r.get("lam", ""),
                r.get("norm", ""),
                r.get("witness", ""),
                r.get("iterations", ""),
                "yes" if r["ok"] else "NO",
            ]
            for r in rows
        ],
    }


def figure1a_figure(kind: str, runs: int, lam: float, ks: Sequence[int], record: Mapping[str, Any]) -> Figure:
    """Fig. 1(a): the mean gradient truncation error against k, the fitted c kλ^k and the mean explicit bound."""
    return _fig(
        "line",
        f"Fig. 1(a), {kind}: gradient truncation error vs k (mean of {runs} runs, lambda = {lam})",
        ks,
        [
            {"label": "mean ||grad p_T - grad p_T^k||", "y": record["mean_error"], "style": "markers"},
            {"label": f"c k lambda^k (c fitted = {record['amplitude']:.3g})", "y": record["fitted_k_lam_k"]},
            {"label": "explicit Lemma 2 bound (mean)", "y": record["mean_bound"], "style": "dashed"},
        ],
        xlabel="k",
        ylabel="||grad_w p_T - grad_w p_T^k||",
        logy=True,
    )
