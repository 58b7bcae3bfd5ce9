"""Figures of the RTRL claims: online convergence and the influence-balancing experiment (§7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.report.plots import Figure

__all__ = ["influence_balancing_figures", "located_figure", "online_convergence_figures", "sec7_figures"]


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


def sec7_figures(title: str, curves: list[Mapping[str, Any]]) -> list[Figure]:
    """RTRL convergence paper §7.1-7.2 (rebuilt sweeps): median long-run loss along training, one figure per schedule.

    One series per (η₀, learner); RTRL solid, TBPTT(τ) dashed, the control (RTRL without dF/dtheta) markers.
    A point is missing where at least half the seeds had diverged.
    """
    figs: list[Figure] = []
    for schedule in sorted({str(c["schedule"]) for c in curves}):
        series = [
            {
                "label": f"{c['learner']} lr={c['lr']:g}",
                "x": list(c["steps"]),
                "y": list(c["median_loss"]),
                "style": "solid"
                if c["learner"] == "rtrl"
                else ("markers" if c["learner"] == "broken-rtrl" else "dashed"),
            }
            for c in curves
            if c["schedule"] == schedule
        ]
        figs.append(
            {
                "kind": "line",
                "title": f"{title}: long-run loss by learning-rate magnitude, schedule '{schedule}'",
                "series": series,
                "xlabel": "online step t (RMSprop updates)",
                "ylabel": "median over seeds of the long-run loss (fresh sequences)",
                "logy": True,
                "caption": "paper Fig. 1-8 (rebuilt): RTRL (solid) vs TBPTT(k) (dashed) per initial learning-rate "
                "magnitude; broken-rtrl (markers) is the negative control (no dF/dtheta: only the readout learns)",
            }
        )
    return figs


def located_figure(row: dict[str, Any]) -> dict[str, Any]:
    """Where a wrong gradient shows (:func:`verify.rtrl.exact.locate`): per parameter block, the relative error of
    the per-step gradient against t, with the budget as a line (errors of exactly 0 are not drawn on the log axis;
    the figure layer says how many)."""
    w = row["where"]
    T = len(next(iter(w["by_step"].values())))
    return {
        "kind": "line",
        "title": f"rtrl.exact: where the gradient leaves its budget ({row['problem']})",
        "x": list(range(1, T + 1)),
        "series": [{"label": name, "y": errs} for name, errs in w["by_step"].items()],
        "hlines": [{"y": w["budget"], "label": "budget"}],
        "xlabel": "step t",
        "ylabel": "error of dl_t/dtheta in the block / ||reference||",
        "logy": True,
        "caption": (
            f"first over the budget at t = {w['first_step']}, largest in {w['block']}: a block whose line rises "
            "from there is where the implementation differs."
        ),
    }
