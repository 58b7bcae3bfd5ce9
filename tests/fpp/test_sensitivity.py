"""FPP's sweeps over T, N and lambda (§5 Fig. 3(a), App. C Fig. 5 and 6): the designs state their settings, the
comparison rules keep their stated false-FAIL rate, and the judges FAIL unless every criterion holds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from verify.checks.fpp_sensitivity import DELTA, below, judge_fig3a, judge_fig5, judge_fig6, similar
from verify.fpp.reproduction import APP_D_LRS, Reproduction
from verify.fpp.sensitivity import FIG5_PAPER, FIG6_PAPER, fig3a_design, fig5_designs, fig6_designs
from verify.run.sweep.definitions import SweepOptions, get_definition
from verify.verdict import Verdict


def test_the_designs_state_the_paper_settings() -> None:
    rep = fig3a_design("paper")
    assert rep.env == "cycleworld" and rep.common["p"] == 10 and rep.common["measure"] == "accuracy"
    assert rep.steps == 5000 and rep.runs == 30 and rep.lrs == APP_D_LRS and rep.common["buffer_size"] == 100
    assert {m for m, _ in rep.learners} == {"fpp", "tbptt", "tbptt-no-overlap"}
    assert sorted({T for _, T in rep.learners}) == [1, 3, 5, 7, 10]
    grid, reps = fig5_designs("paper")
    assert grid is FIG5_PAPER and grid.Ns == (100, 1000, 10_000) and grid.Ts == (1, 5, 10, 15, 50)
    assert [r.common["buffer_size"] for r in reps] == [100, 1000, 10_000]
    assert all(r.steps == 10_000 and r.runs == 30 and r.lrs == APP_D_LRS and r.common["hidden"] == 32 for r in reps)
    grid_full, full = fig5_designs("full")
    assert all(r.lrs == (3e-4, 1e-3) and r.runs == 10 and r.steps == 10_000 for r in full)  # reduced
    assert grid_full.Ns == (100, 1000) and grid_full.N_reported == ()
    assert fig6_designs("full")[0].lams == (0.1, 1.0, 10.0)
    grid6, reps6 = fig6_designs("paper")
    assert grid6 is FIG6_PAPER and [r.common["lam"] for r in reps6] == [0.1, 1.0, 10.0, 100.0]
    for name, cells in (("fpp-fig3a", 17), ("fpp-fig5", 17), ("fpp-fig6", 15)):
        plan = get_definition(name).build(SweepOptions(scale="paper"))
        assert len(plan.cells) == cells and len({c.key for c in plan.cells}) == cells


def test_below_and_similar_decide_three_ways() -> None:
    rng = np.random.default_rng(0)
    base = list(rng.normal(0.6, 0.05, 30))
    tight = list(rng.normal(0.0, 0.001, 30))
    wide = list(rng.normal(0.0, 0.05, 30))
    shift = lambda d, x: [b + d + e for b, e in zip(base, x, strict=True)]  # noqa: E731
    assert below(shift(0.0, tight), base, 0.01, 0.01)["status"] == "not reproduced"  # no advantage, resolved
    assert below(shift(0.05, tight), base, 0.01, 0.01)["status"] == "contradicted"
    assert below(shift(0.0, wide), base, 0.01, 0.01)["status"] == "not resolved"
    assert below(shift(-0.05, tight), base, 0.01, 0.01)["p_value"] < 1e-10  # Holm marks it reproduced
    assert similar(shift(0.0, tight), base, 0.01, 0.01)["status"] == "reproduced"
    assert similar(shift(0.05, tight), base, 0.01, 0.01)["status"] == "not reproduced"
    assert similar(shift(-0.05, tight), base, 0.01, 0.01)["status"] == "not reproduced"
    assert similar(shift(0.0, wide), base, 0.01, 0.01)["status"] == "not resolved"


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("kind", ["below", "similar"])
def test_the_false_fail_rate_is_at_most_alpha_at_the_margin(kind: str) -> None:
    """At the margin of the paper's statement (advantage exactly delta; difference exactly delta), m comparisons at
    the Bonferroni level alpha/m FAIL the family with probability at most alpha = 0.05 (union bound)."""
    rng = np.random.default_rng(1)
    m, n, reps, delta = 4, 30, 1000, 0.1
    level = 0.05 / m
    effect = -delta if kind == "below" else delta
    fn = below if kind == "below" else similar
    fails = 0
    for _ in range(reps):
        b = rng.normal(0.5, 0.2, (m, n))
        a = b + effect + rng.normal(0.0, 0.3, (m, n))
        fails += any(fn(list(a[j]), list(b[j]), delta, level)["status"] in ("not reproduced", "contradicted")
                     for j in range(m))  # fmt: skip
    rate = fails / reps
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps), rate
    assert rate > 0.02  # the bound is nearly attained: m one-sided tests at the margin


def _values(reps: list[Reproduction], level: dict[str, float], noise: dict[str, float] | None = None) -> dict[Any, Any]:
    """Synthetic block values: each learner's runs at ``level[rep name: method/T]`` or ``level[method/T]`` (or
    ``default``), with a shared paired pattern and ``noise[...]`` an independent one."""
    out = {}
    for rep in reps:
        for key, blocks in {**rep.learner_blocks(), **rep.control_blocks()}.items():
            full = f"{rep.name}: {key}"
            base = level.get(full, level.get(key, level.get("default", 0.5)))
            amp = (noise or {}).get(full, (noise or {}).get(key, 0.0))
            runs = [base + 0.01 * math.sin(3.0 * r + 1.0) + amp * math.cos(7.3 * r + len(key)) for r in range(rep.runs)]
            for b in blocks:
                out[b] = {"lrs": list(b.lrs), "online": [runs for _ in b.lrs], "final": [runs for _ in b.lrs],
                          "curve": [{"step": [1.0], "mean": [base]} for _ in b.lrs], "finite": True}  # fmt: skip
    return out


@pytest.mark.parametrize("case", ["reproduced", "tbptt-better", "unresolved", "nothing-learned", "control-learns"])
def test_fig3a_judge_fails_unless_every_criterion_holds(case: str) -> None:
    rep = fig3a_design("full")
    lev = {"default": 0.3, "fpp/T=1": 0.9, "tbptt/T=1": 0.92, "tbptt-no-overlap/T=1": 0.9}
    lev.update({f"{m}/T={T}": 0.6 for m in ("tbptt", "tbptt-no-overlap") for T in (3, 5, 7, 10)})
    lev.update({k: 1.5 for k, *_ in rep.controls})
    noise: dict[str, float] = {}
    if case == "tbptt-better":
        lev["tbptt/T=5"] = 0.2
    elif case == "unresolved":
        noise["tbptt-no-overlap/T=7"] = 0.5
        lev["tbptt-no-overlap/T=7"] = 0.35
    elif case == "nothing-learned":
        lev["tbptt/T=10"] = 1.1
    elif case == "control-learns":
        lev[rep.controls[1][0]] = 0.3
    res = judge_fig3a(rep, _values([rep], lev, noise), seed=0)
    want = {"reproduced": Verdict.PASS, "unresolved": Verdict.INCONCLUSIVE}.get(case, Verdict.FAIL)
    assert res.verdict is want, (res.verdict, res.reason)
    assert bool(res.findings) is (case == "tbptt-better")
    assert res.data["reduced"] is True and "REDUCED" in res.summary


@pytest.mark.parametrize("case", ["reproduced", "T10-worse", "small-T-fine", "N-sensitive", "nothing-learned"])
def test_fig5_judge_fails_unless_every_criterion_holds(case: str) -> None:
    grid, reps = fig5_designs("full")
    lev: dict[str, float] = {"default": 0.60, "fpp/T=1": 0.66}
    lev.update({f"fpp.fig5 N=100: {k}": (0.70 if "frozen" in k else 0.665) for k, *_ in reps[0].controls})
    if case == "T10-worse":
        lev["fpp.fig5 N=1000: fpp/T=10"] = 0.65
    elif case == "small-T-fine":
        lev["fpp/T=1"] = 0.60
    elif case == "N-sensitive":
        lev["fpp.fig5 N=1000: fpp/T=15"] = 0.64
    elif case == "nothing-learned":
        lev["default"] = 0.664
    res = judge_fig5(grid, reps, _values(reps, lev), seed=0)
    assert (res.verdict is Verdict.PASS) is (case == "reproduced"), (res.verdict, res.reason)
    # a learner that learns nothing is "similar" to the shuffled-input control: that control flags it too
    assert [c.ok for c in res.controls] == [True, True, case != "nothing-learned"]
    if case == "nothing-learned":
        assert "premise" in (res.reason or "")
    assert not res.data["not_judged"] and not res.data["reported"]  # full: N = 10 000 not run
    paper_grid, paper_reps = fig5_designs("paper")
    res = judge_fig5(paper_grid, paper_reps, _values(paper_reps, lev), seed=0)
    assert res.data["not_judged"] and len(res.data["reported"]) == len(paper_grid.Ts)


@pytest.mark.parametrize("case", ["reproduced", "lambda-no-effect", "nothing-learned", "control-learns"])
def test_fig6_judge_fails_unless_every_criterion_holds(case: str) -> None:
    grid, reps = fig6_designs("full")
    lev: dict[str, float] = {"default": 0.60, "fpp/T=1": 0.66, "fpp/T=5": 0.65}
    lev.update({f"fpp.fig6 lambda=10: fpp/T={T}": 0.62 for T in (1, 5)})
    for r in reps:
        lev.update({f"{r.name}: {k}": 0.70 for k, *_ in r.controls})
    if case == "lambda-no-effect":
        lev["fpp.fig6 lambda=10: fpp/T=5"] = 0.65
    elif case == "nothing-learned":
        lev["fpp/T=15"] = 0.65
    elif case == "control-learns":
        lev["fpp.fig6 lambda=10: FPP without state update, gradient zeroed (learns nothing), lambda = 10, T = 1"] = 0.6
    res = judge_fig6(grid, reps, _values(reps, lev), seed=0)
    assert (res.verdict is Verdict.PASS) is (case == "reproduced"), (res.verdict, res.reason)
    assert bool(res.findings) is (case == "lambda-no-effect")
    assert all(c.ok for c in res.controls) is (case != "control-learns")


def test_a_failed_block_fails_the_sweep() -> None:
    grid, reps = fig6_designs("ci")
    values = _values(reps, {"default": 0.5})
    lost = reps[0].all_blocks()[0]
    del values[lost]
    res = judge_fig6(grid, reps, values, seed=0, errors={lost: "Traceback: boom"})
    assert res.verdict is Verdict.FAIL and "boom" in (res.reason or "")
    assert DELTA == {"cycleworld": 0.1, "stochasticworld": 0.01}
