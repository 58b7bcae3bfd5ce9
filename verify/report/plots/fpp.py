"""Figures of the FPP claims (Liu et al., fixed point propagation): stationarity, KKT recovery, §5 reproductions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.report.plots import Figure, finite, fmt3

__all__ = ["cycleworld_figures", "kkt_figures", "stationarity_figures", "stochasticworld_figures", "updates_figures"]


def stationarity_figures(data: Mapping[str, Any]) -> list[Figure]:
    r"""FPP Thm 1 (corrected): :math:`E\|G(x_R)\|^2` against N per batch size, and the variance floor against m.

    First figure: the measured decay for full batch (σ = 0) and each m with its CI, the
    full-batch bound 16DΔ/(3N) and the batch-1 bound 16DΔ/(3N) + 14σ²/(3m) dashed.
    Second: the second-half level of each m against 14σ²/(3m), the bound's variance term.
    """
    cfgs = list(data.get("configs") or [])
    if not cfgs:
        return []
    series = _decay_series(cfgs)
    gd = cfgs[0].get("last_decade_slope") or {}
    b1 = cfgs[1].get("last_decade_slope") if len(cfgs) > 1 else None
    cap = (
        f"E||G(x_R)||^2 over {cfgs[-1].get('replicates', 1)} replicates (95% CI) against the number of SGD steps N; "
        f"last-decade slopes: full batch {fmt3(gd.get('slope'))}"
        + (f", m = {cfgs[1]['batch']} {fmt3(b1.get('slope'))}" if b1 else "")
        + " (O(1/N) is slope -1; a flatter slope at small m is the variance floor the printed Thm 1 omits)"
    )
    figs: list[Figure] = [
        {
            "kind": "line",
            "title": "FPP Thm 1: E||G(x_R)||^2 vs N (projected SGD on a fixed buffer)",
            "series": series,
            "xlabel": "SGD steps N",
            "ylabel": "E ||G(x_R)||^2",
            "logx": True,
            "logy": True,
            "caption": cap,
        }
    ]
    sgd = [c for c in cfgs if c["batch"] != "full" and c.get("floor")]
    if len(sgd) >= 2:
        figs.append(_floor_figure(sgd, finite(data.get("sigma2")), finite(data.get("B"))))
    return figs


def _decay_series(cfgs: list[Any]) -> list[dict[str, Any]]:
    """E||G(x_R)||^2 against N per configuration (CI where replicated), then the full-batch and batch-1 bounds."""
    series: list[dict[str, Any]] = []
    for c in cfgs:
        label = "full batch (sigma = 0)" if c["batch"] == "full" else f"batch m = {c['batch']}"
        s: dict[str, Any] = {"label": label, "x": list(c["N"]), "y": list(c["mean"])}
        if c.get("replicates", 1) > 1 or c["batch"] != "full":
            s["ylow"], s["yhigh"] = list(c["ci_lo"]), list(c["ci_hi"])
        series.append(s)
    series.append(
        {
            "label": "bound, full batch: 16 D Delta/(3N)",
            "x": list(cfgs[0]["N"]),
            "y": list(cfgs[0]["bound"]),
            "style": "dashed",
        }
    )
    if len(cfgs) > 1:
        series.append(
            {
                "label": f"bound, m = {cfgs[1]['batch']}: + 14 sigma^2/(3m)",
                "x": list(cfgs[1]["N"]),
                "y": list(cfgs[1]["bound"]),
                "style": "dashed",
            }
        )
    return series


def _floor_figure(sgd: list[Any], sigma2: float | None, B: float | None) -> Figure:
    """The second-half level per batch size m against the variance term 14σ²/(3m) and a slope −1 guide."""
    ms = [int(c["batch"]) for c in sgd]
    floor = {
        "label": "second-half level (95% CI)",
        "x": ms,
        "y": [c["floor"]["mean"] for c in sgd],
        "ylow": [c["floor"]["ci_lo"] for c in sgd],
        "yhigh": [c["floor"]["ci_hi"] for c in sgd],
    }
    fseries: list[dict[str, Any]] = [floor]
    if sigma2 is not None and B is not None:
        fseries.append(
            {
                "label": "variance term 14 sigma^2/(3m)",
                "x": ms,
                "y": [B * sigma2 / m for m in ms],
                "style": "dashed",
            }
        )
    first = finite(sgd[0]["floor"]["mean"])
    if first is not None and first > 0:
        fseries.append(
            {
                "label": "slope -1 (1/m) through m = " + str(ms[0]),
                "x": ms,
                "y": [first * ms[0] / m for m in ms],
                "style": "dashed",
            }
        )
    return {
        "kind": "line",
        "title": "FPP Thm 1: the variance floor falls with the batch size m",
        "series": fseries,
        "xlabel": "batch size m",
        "ylabel": "E ||G(x_R)||^2, second half of the run",
        "logx": True,
        "logy": True,
        "caption": "the level E||G||^2 settles at for constant step, per batch size, against the variance "
        "term of the corrected bound",
    }


def kkt_figures(data: Mapping[str, Any]) -> list[Figure]:
    r"""FPP Thm 2: along λ_k the residual, the RNN gradient, the multiplier error and the distance to the limit.

    Each should fall like 1/λ (Thm 2 with App. B.2 Lemma 1, Prop. 3); the dashed line has
    slope −1 through the residual's first point.
    """
    rows = [r for r in data.get("rows") or [] if isinstance(r, Mapping)]
    if not rows:
        return []
    lams = [r["lam"] for r in rows]
    names = (
        ("residual", "constraint residual ||s - s_hat||"),
        ("rnn_grad_norm", "RNN gradient ||grad E|| at (W, beta, s0)"),
        ("multiplier_error", "multiplier error vs Lemma 1 (later losses / n)"),
        ("distance", "distance to the path's limit"),
    )
    series = [{"label": label, "x": lams, "y": [r.get(key) for r in rows]} for key, label in names]
    r0 = finite(rows[0].get("residual"))
    if r0 is not None and r0 > 0:
        series.append(  # a decade above the residual, which follows it exactly
            {
                "label": "slope -1 (O(1/lambda))",
                "x": lams,
                "y": [10 * r0 * lams[0] / lam for lam in lams],
                "style": "dashed",
            }
        )
    fits = ", ".join(
        f"{name} {fmt3((data.get(key) or {}).get('slope'))}"
        for key, name in (("residual_fit", "residual"), ("multiplier_fit", "multiplier"), ("rnn_grad_fit", "gradient"))
    )
    return [
        {
            "kind": "line",
            "title": "FPP Thm 2: KKT recovery along the penalty path",
            "series": series,
            "xlabel": "penalty lambda",
            "ylabel": "norm",
            "logx": True,
            "logy": True,
            "caption": f"fitted log-log slopes: {fits} (PASS needs <= -0.9 for residual and multiplier)",
        }
    ]


#: a control curve that rises above this many times the learners' largest value (or the reference lines') would
#: flatten every learner's curve to the bottom of a shared axis: it is drawn on its own axis instead (issue 41: a
#: sign-flipped control reached ~7 000 against learners below 1)
CONTROL_SCALE = 10.0


def _learner_figures(
    learners: Mapping[str, Any], controls: Mapping[str, Any], *, key: str, ylabel: str, title: str,
    hlines: list[dict[str, Any]], caption: str,
) -> list[Figure]:  # fmt: skip
    """Learning curves (each learner at its chosen lr; controls dashed), the per-learner CI bars, and the controls
    whose scale would hide the learners on an axis of their own (:data:`CONTROL_SCALE`)."""
    curves: list[dict[str, Any]] = []
    for name, r in {**learners, **controls}.items():
        c = r.get("curve") if isinstance(r, Mapping) else None
        if c and all(finite(v) is not None for v in c["mean"]):
            style = "dashed" if name in controls else "solid"
            curves.append({"label": f"{name} (lr {r['lr']:g})", "x": list(c["step"]), "y": list(c["mean"]),
                           "style": style})  # fmt: skip
    ref = [abs(v) for s in curves if s["style"] == "solid" for v in s["y"]] + [abs(h["y"]) for h in hlines]
    top = max(ref, default=0.0)
    apart = [s for s in curves if s["style"] == "dashed" and top > 0 and max(map(abs, s["y"])) > CONTROL_SCALE * top]
    curves = [s for s in curves if s not in apart]
    figs: list[Figure] = []
    if curves:
        note = ""
        if apart:
            peak = max(abs(v) for s in apart for v in s["y"])
            note = (f"; not drawn here, so that the learners keep their scale: {len(apart)} control(s) reaching "
                    f"{peak:.3g} (> {CONTROL_SCALE:g} x the largest value here, {top:.3g}), on their own axis in "
                    "the figure 'negative controls (own scale)'")  # fmt: skip
        figs.append({"kind": "line", "title": f"{title}: learning curves", "series": curves, "xlabel": "online step",
                     "ylabel": ylabel, "hlines": hlines, "caption": caption + note})  # fmt: skip
    names = [k for k, r in learners.items() if isinstance(r, Mapping)]
    if names:
        series = []
        for what in ("online", "final"):
            series.append({
                "label": f"{what} ({'mean over all steps' if what == 'online' else 'last fifth of the steps'}, "
                "95% CI over runs)",
                "y": [learners[k][f"{what}_mean"] for k in names],
                "ylow": [learners[k][f"{what}_ci"][0] for k in names],
                "yhigh": [learners[k][f"{what}_ci"][1] for k in names],
            })  # fmt: skip
        cap = "each learner at the learning rate with its lowest mean online loss (App. D)"
        figs.append({"kind": "errorbar", "title": f"{title}: {key} per learner (chosen lr)", "x": names,
                     "series": series, "ylabel": ylabel, "hlines": hlines, "caption": cap})  # fmt: skip
    if apart:
        positive = all(v > 0 for s in apart for v in s["y"])
        figs.append({"kind": "line", "title": f"{title}: negative controls (own scale)",
                     "series": apart, "xlabel": "online step", "ylabel": ylabel,
                     "hlines": hlines, "logy": positive,
                     "caption": f"the controls that rise above {CONTROL_SCALE:g} x the learners' largest value "
                     f"({top:.3g}), drawn apart so that the learning curves keep their scale"
                     + ("; log scale" if positive else "") + ". A broken learner through the same harness must be "
                     "caught: these are the curves it drew"})  # fmt: skip
    return figs


def cycleworld_figures(data: Mapping[str, Any]) -> list[Figure]:
    """FPP §5, Fig. 2: CycleWorld learning curves (error ratio to predict-zero) and the ratio per learner, per p."""
    figs: list[Figure] = []
    for d in data.get("per_p") or []:
        runs, steps = d["design"]["runs"], d["design"]["steps"]
        acc = d.get("measure") == "accuracy"
        figs += _learner_figures(
            d.get("learners") or {}, d.get("controls") or {}, key="error ratio",
            ylabel="error rate / predict-zero error rate" if acc else "squared error / predict-zero error",
            title=f"CycleWorld p = {d['p']}" + (" (the paper's measure: accuracy)" if acc else ""),
            hlines=[{"y": 1.0, "label": "predict zero"}],
            caption=f"mean over {runs} runs x {steps} steps of the per-step "
            + ("argmax error (cross-entropy training on one-hot targets) / (1/p)" if acc else "loss / (1/(2p))")
            + ", in windows of steps; "
            "dashed: the negative controls (broken learners through the same harness). The paper: FPP at T = p/2 "
            "below T-BPTT at T = p/2 (Fig. 2)",
        )  # fmt: skip
    return figs


def stochasticworld_figures(data: Mapping[str, Any]) -> list[Figure]:
    """FPP §5, Fig. 3(b): Stochastic World learning curves and per-learner CE against the Bayes levels."""
    refs = data.get("references") or {}
    names = {"none": "no memory", "lag30": "o_(t-30) only ('learned' below)", "lag15": "o_(t-15) remembered",
             "both": "both lags (Bayes)"}  # fmt: skip
    hlines = [{"y": refs[k], "label": f"{names[k]} {refs[k]:.3f}"} for k in names if finite(refs.get(k)) is not None]
    design = data.get("design") or {}
    return _learner_figures(
        data.get("learners") or {}, data.get("controls") or {}, key="cross-entropy", ylabel="cross-entropy (nats)",
        title="Stochastic World", hlines=hlines,
        caption=f"mean over {design.get('runs')} runs x {design.get('steps')} steps, in windows of steps; the lines "
        "are the Bayes cross-entropies of Table 1's information sets (the paper: 0.66 / 0.51 / 0.46); dashed: the "
        "negative controls" + (f"; {data['context']}" if data.get("context") else ""),
    )  # fmt: skip


def updates_figures(data: Mapping[str, Any]) -> list[Figure]:
    """FPP §5, Fig. 4: online loss of FPP (solid) and FPP without state update (dashed) per (env, M, B) and T."""
    configs = data.get("configs") or {}
    series: list[dict[str, Any]] = []
    names = list(configs)
    learners = sorted({k for c in configs.values() if c for k in (c.get("learners") or {})})
    for key in learners:
        ys, lo, hi = [], [], []
        for n in names:
            s = (configs[n].get("learners") or {}).get(key)
            ys.append(s["online_mean"] if s else None)
            lo.append(s["online_ci"][0] if s else None)
            hi.append(s["online_ci"][1] if s else None)
        if all(finite(v) is not None for v in (*ys, *lo, *hi)):
            series.append({"label": key, "y": ys, "ylow": lo, "yhigh": hi})
    if not series:
        return []
    return [
        {
            "kind": "errorbar",
            "title": "Fig. 4: online loss per (environment, M, B)",
            "x": names,
            "series": series,
            "ylabel": "online loss (CycleWorld: ratio to predict-zero; Stochastic World: nats)",
            "caption": "mean over runs with 95% CIs, each learner at its best learning rate; the paper: more "
            "updates and larger mini-batches help, and FPP profits more than FPP without state update",
        }
    ]
