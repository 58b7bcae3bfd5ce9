"""The figures the checks attach for the report (verify.report.plots), on data of the checks' shapes.

Each builder must give specs of the report convention that draw something; the per-claim
tests (tests/fpp, tests/estimators, tests/stats, tests/truncation) check that the checks attach
them. A claim without a figure must be listed, with the reason, in WITHOUT_FIGURE.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from theory.catalog import all_claims
from verify.report.figures import claim_figures, figure_empty_reason, normalize_figure, render_png
from verify.report.plots import WITHOUT_FIGURE
from verify.report.plots.fpp import cycleworld_figures, kkt_figures, stationarity_figures, stochasticworld_figures
from verify.report.plots.rtrl import influence_balancing_figures, online_convergence_figures
from verify.report.plots.truncation import prop2_figure
from verify.report.plots.uoro import preactivation_variance_figure
from verify.truncation.prop2 import Prop2Setup

ROOT = Path(__file__).resolve().parents[2]


def _ok(figs: list[dict], n: int) -> list[dict]:
    assert len(figs) == n
    out = []
    for f in figs:
        spec = normalize_figure(f)
        assert figure_empty_reason(spec) is None, spec["title"]
        out.append(spec)
    return out


def _labels(fig: dict) -> list[str]:
    return [s["label"] for s in fig["series"]]


def test_without_figure_lists_real_claims_with_reasons() -> None:
    claims = all_claims()
    assert set(WITHOUT_FIGURE) <= set(claims)
    assert all(len(why) > 20 for why in WITHOUT_FIGURE.values())
    required = {
        "fpp.stationarity",
        "fpp.kkt-recovery",
        "fpp.cycleworld-reproduction",
        "fpp.stochasticworld-reproduction",
        "rtrl.online-convergence",
        "uoro.preactivation",
    }
    assert not required & set(WITHOUT_FIGURE)


def test_without_figure_is_what_the_committed_report_drew() -> None:
    """Issue 41: WITHOUT_FIGURE (and the docs generated from it) said uoro.mutants-caught has no figure; the
    published report drew its operating characteristic. Every claim the committed full report ran draws at least
    one figure (a table counts) exactly when it is not listed."""
    doc = json.loads((ROOT / "reports" / "latest" / "results.json").read_text(encoding="utf-8"))
    ran = {c["id"]: c for c in doc["claims"] if c["verdict"] != "SKIPPED"}
    assert len(ran) > 30 and set(WITHOUT_FIGURE) <= set(ran), sorted(set(WITHOUT_FIGURE) - set(ran))
    wrong = {
        cid: len(c.get("figures") or []) for cid, c in ran.items() if bool(c.get("figures")) == (cid in WITHOUT_FIGURE)
    }
    assert not wrong, wrong


def _stationarity_data() -> dict:
    N = [32, 64, 128, 256]

    def cfg(batch, mean, bound, floor):
        return {
            "batch": batch,
            "replicates": 1 if batch == "full" else 12,
            "N": N,
            "mean": mean,
            "ci_lo": [m * 0.9 for m in mean],
            "ci_hi": [m * 1.1 for m in mean],
            "bound": bound,
            "last_decade_slope": {"slope": -0.9},
            "floor": {"mean": floor, "ci_lo": floor * 0.9, "ci_hi": floor * 1.1},
        }

    return {
        "sigma2": 6.6,
        "B": 14 / 3,
        "configs": [
            cfg("full", [0.2, 0.1, 0.05, 0.025], [0.6, 0.3, 0.15, 0.075], 1e-3),
            cfg(1, [0.6, 0.45, 0.35, 0.3], [31.6, 31.3, 31.2, 31.1], 0.06),
            cfg(4, [0.3, 0.2, 0.12, 0.08], [8.3, 8.0, 7.9, 7.8], 0.02),
            cfg(16, [0.22, 0.12, 0.07, 0.04], [2.5, 2.2, 2.1, 2.0], 0.005),
        ],
    }


def test_stationarity_figures_show_decay_bound_and_floor() -> None:
    decay, floor = _ok(stationarity_figures(_stationarity_data()), 2)
    assert decay["logx"] and decay["logy"]
    assert "bound, full batch: 16 D Delta/(3N)" in _labels(decay) and "batch m = 1" in _labels(decay)
    assert floor["series"][0]["x"] == [1, 4, 16]
    assert floor["series"][1]["y"][0] == 14 / 3 * 6.6  # the variance term 14 sigma^2/(3m) at m = 1
    assert stationarity_figures({}) == []


def test_kkt_figure_plots_every_quantity_against_lambda() -> None:
    lams = [10.0, 100.0, 1000.0]
    rows = [
        {"lam": lam, "residual": 1 / lam, "rnn_grad_norm": 2 / lam, "multiplier_error": 0.1 / lam, "distance": 3 / lam}
        for lam in lams
    ]
    (fig,) = _ok(kkt_figures({"rows": rows, "residual_fit": {"slope": -1.0}}), 1)
    assert len(fig["series"]) == 5 and all(s["x"] == lams for s in fig["series"])
    assert "residual -1.000" in fig["caption"]


def test_reproduction_figures_draw_learning_curves() -> None:
    curve = {"step": [1.5, 3.5], "mean": [0.9, 0.4]}

    def summ(m: float) -> dict[str, object]:
        return {"lr": 0.01, "online_mean": m, "online_ci": [m - 0.1, m + 0.1], "final_mean": m,
                "final_ci": [m - 0.1, m + 0.1], "curve": curve}  # fmt: skip

    cyc = {
        "per_p": [
            {
                "p": 4,
                "design": {"runs": 2, "steps": 4},
                "learners": {"fpp/T=2": summ(0.5), "tbptt/T=2": summ(0.4)},
                "controls": {"frozen": summ(2.0)},
            }
        ]
    }
    curves, ratios = _ok(cycleworld_figures(cyc), 2)
    assert _labels(curves) == ["fpp/T=2 (lr 0.01)", "tbptt/T=2 (lr 0.01)", "frozen (lr 0.01)"]
    assert curves["hlines"][0]["y"] == 1.0 and curves["series"][2]["style"] == "dashed"
    assert ratios["x"] == ["fpp/T=2", "tbptt/T=2"]
    sw = {
        "design": {"runs": 2, "steps": 4},
        "references": {"none": 0.66, "lag15": 0.52, "lag30": 0.63, "both": 0.45},
        "learners": {"fpp/T=4": summ(0.6)},
        "controls": {},
    }
    fig, bars = _ok(stochasticworld_figures(sw), 2)
    assert [h["y"] for h in fig["hlines"]] == [0.66, 0.63, 0.52, 0.45]  # 0.63: o_(t-30) only, the 'learned' level
    assert "learned" in fig["hlines"][1]["label"]
    sw["context"] = "the Bayes optimum 0.4545 is reachable ..."
    assert sw["context"] in _ok(stochasticworld_figures(sw), 2)[0]["caption"]
    assert bars["x"] == ["fpp/T=4"]


def test_a_control_far_above_the_learners_gets_its_own_axis() -> None:
    """Issue 41: a sign-flipped control reaching ~6 000 flattened every learning curve (ratios below 1.3) to 0."""
    steps = [50.0, 150.0, 250.0]

    def summ(curve: list[float]) -> dict[str, object]:
        m = curve[-1]
        return {"lr": 0.01, "online_mean": m, "online_ci": [m - 0.1, m + 0.1], "final_mean": m,
                "final_ci": [m - 0.1, m + 0.1], "curve": {"step": steps, "mean": curve}}  # fmt: skip

    cyc = {
        "per_p": [
            {
                "p": 8,
                "design": {"runs": 10, "steps": 300},
                "learners": {"fpp/T=4": summ([1.27, 0.8, 0.6]), "tbptt/T=4": summ([1.2, 0.7, 0.5])},
                "controls": {"sign-flip": summ([19.0, 900.0, 6110.0]), "frozen": summ([2.5, 2.5, 2.5])},
            }
        ]
    }
    curves, ratios, apart = _ok(cycleworld_figures(cyc), 3)
    # the learners keep their axis: everything drawn there is within 10x of their largest value
    assert _labels(curves) == ["fpp/T=4 (lr 0.01)", "tbptt/T=4 (lr 0.01)", "frozen (lr 0.01)"]
    assert max(v for s in curves["series"] for v in s["y"]) <= 10 * 1.27
    assert "1 control(s) reaching 6.11e+03" in curves["caption"] and "own scale" in curves["caption"]
    # the far control is drawn, on a log axis of its own, and says why
    assert apart["title"].endswith("negative controls (own scale)") and apart["logy"]
    assert _labels(apart) == ["sign-flip (lr 0.01)"] and apart["series"][0]["y"] == [19.0, 900.0, 6110.0]
    assert "drawn apart" in apart["caption"]
    assert ratios["x"] == ["fpp/T=4", "tbptt/T=4"]
    for fig in (curves, ratios, apart):
        assert render_png(fig).startswith(b"\x89PNG")


def test_curve_helper_bins_the_online_losses() -> None:
    from verify.fpp.reproduction import _curve

    L = torch.arange(12.0).reshape(2, 6)  # 2 runs x 6 steps; mean over runs: 3, 4, .., 8
    c = _curve(L, bins=3)
    assert c == {"step": [1.5, 3.5, 5.5], "mean": [3.5, 5.5, 7.5]}
    assert len(_curve(L, bins=60)["step"]) == 6  # never more bins than steps


def test_online_convergence_and_influence_balancing_figures() -> None:
    run = {"steps": [0, 500, 1000], "loss": [0.5, 0.1, 0.05], "natural": [0.9, 0.1, 0.02]}
    runs = {
        "linear/seed0": {
            "rtrl": run,
            "control": {**run, "natural": [0.9, 0.85, 0.8]},
            "tbptt(k=1)": {"steps": [0, 1000], "loss": [0.5, 0.06], "natural": [0.9, "nan"]},
        }
    }
    nat, loss = _ok(online_convergence_figures(runs, 1000), 2)
    assert len(nat["series"]) == 2 and len(loss["series"]) == 3  # TBPTT's delta is not evaluated
    sweep = [{"k": k, "tbptt_derivative": 10.0 - k, "derived": 10.0 - k} for k in range(1, 15)]
    (fig,) = _ok(
        influence_balancing_figures(
            {"rtrl": [{"n": 23, "p": 10, "closed_form": -6.0}], "tbptt_sweep": sweep, "first_k_with_right_sign": 11}
        ),
        1,
    )
    assert fig["hlines"][0]["y"] == -6.0 and "k < 11" in fig["caption"]


def test_preactivation_variance_figure() -> None:
    gen = torch.Generator().manual_seed(0)
    q_uoro = torch.rand(1000, generator=gen, dtype=torch.float64) * 10
    q_pre = q_uoro / 10
    (fig,) = _ok([preactivation_variance_figure(q_pre, q_uoro, 0.1, (0.09, 0.11), "elman-tanh(n=3)")], 1)
    assert fig["kind"] == "errorbar" and fig["logy"]
    y = fig["series"][0]["y"]
    assert abs(y[1] / y[0] - 0.1) < 1e-12
    assert render_png(fig).startswith(b"\x89PNG")


def test_prop2_figure_draws_all_zero_measurements_at_a_labelled_floor() -> None:
    """The published Prop. 2 (Elman-tanh) figure dropped its 600 measured points (all 0 on a log axis)."""
    N = 5
    bound = [1e-21 * (i + 1) for i in range(N)]
    sched = {
        "alpha/t": {"mean_delta": [0.0] * N, "mean_bound_sharp": bound, "mean_bound_printed": [float("inf")] * N},
        "alpha/sqrt(t)": {"mean_delta": [0.0] * N},
        "constant": {"mean_delta": [0.0] * N},
    }
    r = {"schedules": sched, "log10_explicit_prop2": 6.16e9}
    fig = normalize_figure(prop2_figure("elman-tanh", r, Prop2Setup(n=3, d=1, T=20, k=5, N=N, runs=2)))
    assert figure_empty_reason(fig) is None
    zero = [s for s in fig["series"] if "0 at every step" in s["label"]]
    assert len(zero) == 3 and all(v == 1e-22 for s in zero for v in s["y"])  # a decade below the smallest bound
    assert "10^6.16e+09" in fig["caption"] and "exactly 0 at every step" in fig["caption"]
    # a figure built only from data it cannot draw is described, not drawn
    empty = {"figures": [{"kind": "line", "title": "t", "x": [1], "series": [{"label": "a", "y": [0]}], "logy": True}]}
    assert claim_figures("x.y", empty)[0] == []
