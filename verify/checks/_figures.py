"""Figure specs for the report, built from the data the checks already return (internal).

Each function takes a check's ``data`` (or the tensors it measured) and returns figure specs
of the report convention (:mod:`verify.report.figures`); the check puts them under
``data["figures"]``. Nothing here decides a verdict: the figures show what the checks
compared, with the theory's bound or rate beside the measurement.

Every claim carries a figure where a picture says more than a number; the claims in
:data:`WITHOUT_FIGURE` deliberately do not, with the reason (a test holds every other
claim's check to producing one). ``device.cuda-parity`` and ``device.gpu-unbiasedness``
draw theirs when they run on CUDA; SKIPPED, they have nothing to draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

__all__ = [
    "WITHOUT_FIGURE",
    "cycleworld_figures",
    "influence_balancing_figures",
    "kkt_figures",
    "online_convergence_figures",
    "preactivation_variance_figure",
    "stationarity_figures",
    "stochasticworld_figures",
    "updates_figures",
]

Figure = dict[str, Any]

#: claims whose report section has no figure, and why: a picture would not say more than the number
WITHOUT_FIGURE: dict[str, str] = {
    "fpp.gradient-eq7": "a deterministic equality to round-off: the worst relative error of 190 per-sample "
    "gradients against 1e-12 (and the sign mutant's error) is the whole result",
    "fpp.lemma3-unbiased": "an exact finite-sum expectation compared to round-off: one worst relative error "
    "against 1e-12, plus a sampler coverage test",
    "fpp.prop2-kkt-equivalence": "numeric KKT mismatches at round-off (~1e-16) and sympy identities that are 0 or "
    "not: nothing varies along an axis",
    "uoro.exact-expectation": "exact enumeration over every sign pattern: one relative error against its "
    "round-off budget per case",
    "uoro.algorithm-1-conformance": "formula conformance under tabulated noise (equal to 1e-12) and a noise-law "
    "test: pass/fail numbers, all in the data",
    "uoro.mutants-caught": "a kill table: it is the report's 'Negative controls' table (every mutant, expected "
    "and observed verdict)",
}


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# ------------------------------------------------------------------------ FPP
def stationarity_figures(data: Mapping[str, Any]) -> list[Figure]:
    r"""FPP Thm 1 (corrected): :math:`E\|G(x_R)\|^2` against N per batch size, and the variance floor against m.

    First figure: the measured decay for full batch (σ = 0) and each m with its CI, the
    full-batch bound 16DΔ/(3N) and the batch-1 bound 16DΔ/(3N) + 14σ²/(3m) dashed.
    Second: the second-half level of each m against 14σ²/(3m), the bound's variance term.
    """
    cfgs = list(data.get("configs") or [])
    if not cfgs:
        return []
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
    gd = cfgs[0].get("last_decade_slope") or {}
    b1 = cfgs[1].get("last_decade_slope") if len(cfgs) > 1 else None
    cap = (
        f"E||G(x_R)||^2 over {cfgs[-1].get('replicates', 1)} replicates (95% CI) against the number of SGD steps N; "
        f"last-decade slopes: full batch {_fmt(gd.get('slope'))}"
        + (f", m = {cfgs[1]['batch']} {_fmt(b1.get('slope'))}" if b1 else "")
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
    sigma2, B = _finite(data.get("sigma2")), _finite(data.get("B"))
    if len(sgd) >= 2:
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
        first = _finite(sgd[0]["floor"]["mean"])
        if first is not None and first > 0:
            fseries.append(
                {
                    "label": "slope -1 (1/m) through m = " + str(ms[0]),
                    "x": ms,
                    "y": [first * ms[0] / m for m in ms],
                    "style": "dashed",
                }
            )
        figs.append(
            {
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
        )
    return figs


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
    r0 = _finite(rows[0].get("residual"))
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
        f"{name} {_fmt((data.get(key) or {}).get('slope'))}"
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


def _learner_figures(
    learners: Mapping[str, Any], controls: Mapping[str, Any], *, key: str, ylabel: str, title: str,
    hlines: list[dict[str, Any]], caption: str,
) -> list[Figure]:  # fmt: skip
    """Learning curves (each learner at its chosen lr; controls dashed) and the per-learner CI bars."""
    curves = []
    for name, r in {**learners, **controls}.items():
        c = r.get("curve") if isinstance(r, Mapping) else None
        if c and all(_finite(v) is not None for v in c["mean"]):
            curves.append({"label": f"{name} (lr {r['lr']:g})", "x": list(c["step"]), "y": list(c["mean"]),
                           "style": "dashed" if name in controls else "solid"})  # fmt: skip
    figs: list[Figure] = []
    if curves:
        figs.append({"kind": "line", "title": f"{title}: learning curves", "series": curves, "xlabel": "online step",
                     "ylabel": ylabel, "hlines": hlines, "caption": caption})  # fmt: skip
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
    return figs


def cycleworld_figures(data: Mapping[str, Any]) -> list[Figure]:
    """FPP §5, Fig. 2: CycleWorld learning curves (error ratio to predict-zero) and the ratio per learner, per p."""
    figs: list[Figure] = []
    for d in data.get("per_p") or []:
        runs, steps = d["design"]["runs"], d["design"]["steps"]
        figs += _learner_figures(
            d.get("learners") or {}, d.get("controls") or {}, key="error ratio",
            ylabel="squared error / predict-zero error", title=f"CycleWorld p = {d['p']}",
            hlines=[{"y": 1.0, "label": "predict zero"}],
            caption=f"mean over {runs} runs x {steps} steps of the per-step loss / (1/(2p)), in windows of steps; "
            "dashed: the negative controls (broken learners through the same harness). The paper: FPP at T = p/2 "
            "below T-BPTT at T = p/2 (Fig. 2)",
        )  # fmt: skip
    return figs


def stochasticworld_figures(data: Mapping[str, Any]) -> list[Figure]:
    """FPP §5, Fig. 3(b): Stochastic World learning curves and per-learner CE against the Bayes levels."""
    refs = data.get("references") or {}
    names = {"none": "no memory", "lag15": "o_(t-15) remembered", "both": "both lags (Bayes)"}
    hlines = [{"y": refs[k], "label": f"{names[k]} {refs[k]:.3f}"} for k in names if _finite(refs.get(k)) is not None]
    design = data.get("design") or {}
    return _learner_figures(
        data.get("learners") or {}, data.get("controls") or {}, key="cross-entropy", ylabel="cross-entropy (nats)",
        title="Stochastic World", hlines=hlines,
        caption=f"mean over {design.get('runs')} runs x {design.get('steps')} steps, in windows of steps; the lines "
        "are the Bayes cross-entropies of Table 1's information sets (the paper: 0.66 / 0.51 / 0.46); dashed: the "
        "negative controls",
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
        if all(_finite(v) is not None for v in (*ys, *lo, *hi)):
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


# ----------------------------------------------------------------------- RTRL
def online_convergence_figures(runs: Mapping[str, Any], steps: int) -> list[Figure]:
    r"""RTRL convergence paper §7.1-7.2 (rebuilt): stationarity δ and the loss along online training.

    δ = ∇L̄ᵀ G⁺ ∇L̄ (Gauss–Newton metric) is what the check compares at the last iterate; the
    control (no ∂F/∂θ term) shows what a broken RTRL does on the same data.
    """
    nat: list[dict[str, Any]] = []
    loss: list[dict[str, Any]] = []
    for label, out in runs.items():
        for who in ("rtrl", "control", *sorted(k for k in out if str(k).startswith("tbptt"))):
            r = out.get(who)
            if not isinstance(r, Mapping) or "steps" not in r:
                continue
            name = f"{label} {who if who != 'control' else 'control (no dF/dtheta)'}"
            style = "dashed" if who == "control" else ("markers" if who.startswith("tbptt") else "solid")
            if not who.startswith("tbptt"):  # TBPTT's delta is not evaluated (nan)
                nat.append({"label": name, "x": list(r["steps"]), "y": list(r["natural"]), "style": style})
            loss.append({"label": name, "x": list(r["steps"]), "y": list(r["loss"]), "style": style})
    if not nat:
        return []
    return [
        {
            "kind": "line",
            "title": "online RTRL: stationarity in the Gauss-Newton metric",
            "series": nat,
            "xlabel": "online step t",
            "ylabel": "delta = grad L^T G^+ grad L (long-run loss)",
            "logy": True,
            "caption": f"{steps} online Robbins-Monro steps; PASS needs delta(theta_0)/delta(theta_T) >= the stated "
            "factor on every run; the control (only the readout learns) must not reach it",
        },
        {
            "kind": "line",
            "title": "online RTRL: long-run loss along training",
            "series": loss,
            "xlabel": "online step t",
            "ylabel": "long-run loss (fresh sequences)",
            "logy": True,
            "caption": "TBPTT(k) is evaluated at the first and last step only (report data)",
        },
    ]


def influence_balancing_figures(data: Mapping[str, Any]) -> list[Figure]:
    """Tallec & Ollivier §4: truncated BPTT's equilibrium derivative against k, and RTRL's exact 4p - 2n."""
    sweep = [r for r in data.get("tbptt_sweep") or [] if isinstance(r, Mapping)]
    rows = [r for r in data.get("rtrl") or [] if isinstance(r, Mapping)]
    if not sweep or not rows:
        return []
    exact = rows[0]
    ks = [r["k"] for r in sweep]
    first = data.get("first_k_with_right_sign")
    return [
        {
            "kind": "line",
            "title": f"influence balancing (n = {exact['n']}, p = {exact['p']}): ds^1/dtheta seen by TBPTT(k)",
            "x": ks,
            "series": [
                {"label": "online TBPTT(k), measured", "y": [r["tbptt_derivative"] for r in sweep], "style": "markers"},
                {"label": "derived sum_(j<k) (A^j c)_1", "y": [r["derived"] for r in sweep], "style": "dashed"},
            ],
            "xlabel": "truncation k",
            "ylabel": "equilibrium ds^1/dtheta",
            "hlines": [
                {"y": float(exact["closed_form"]), "label": f"RTRL = 4p - 2n = {exact['closed_form']:g}"},
                {"y": 0.0, "label": "0"},
            ],
            "caption": f"TBPTT has the wrong sign for k < {first} (the paper's negative result for truncations "
            "well below n); RTRL's value equals the closed form",
        }
    ]


# ----------------------------------------------------------------------- UORO
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


def _fmt(v: Any) -> str:
    f = _finite(v)
    return "—" if f is None else f"{f:.3f}"
