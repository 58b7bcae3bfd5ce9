"""The §5 reproductions: the batched engine equals the generic one, and the judges can FAIL.

A reproduction check must FAIL when its premise (the learners learned) fails, when
a negative control passes, and when the paper's comparison is not reproduced; it
PASSes only when every pre-stated criterion holds.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from verify.checks.fpp_cycleworld import judge_cycleworld
from verify.checks.fpp_reproduction import judge_stochasticworld, judge_updates
from verify.errors import InvalidArgument
from verify.fpp.batched import run_online_batched
from verify.fpp.envs import cycle_world, stochastic_world
from verify.fpp.online import OnlineConfig, run_online
from verify.fpp.reproduction import (
    Block,
    Reproduction,
    block_model,
    block_theta0,
    cycleworld_designs,
    run_block,
    stochasticworld_design,
    summarize,
    updates_designs,
)
from verify.verdict import Verdict


@pytest.mark.parametrize("env", ["cycleworld", "stochasticworld"])
def test_batched_engine_equals_the_generic_learners(env: str) -> None:
    """Every method, M and B > 1, both state optimisers: the same losses as verify.fpp.online.run_online.

    SGD states and parameters agree to 1e-12. RMSprop on the states starts each fresh slot's accumulator at 0,
    so its first step is g / (0.1 |g|): a component of g at round-off level becomes a step of 10 lr in its sign,
    and the two engines' round-off differences (different summation orders) are amplified; they still agree
    to 1e-7 over 40 steps.
    """
    b = Block(env, "fpp", 3, (0.01,), 40, 3, hidden=5, p=4, lags=(2, 4))
    model = block_model(b)
    g = torch.Generator().manual_seed(0)
    if env == "cycleworld":
        s = cycle_world(4, 40, 3, g)
        x, y = s.inputs, s.targets
    else:
        s = stochastic_world(40, 3, g, lags=(2, 4))
        x, y = s.inputs, torch.nn.functional.one_hot(s.targets, 2).double()
    th = block_theta0(b, model, g)
    lrs = torch.tensor([0.01, 0.03, 0.003], dtype=torch.float64)
    for method in ("fpp", "fpp-no-state-update", "tbptt"):
        for cfg, tol in (
            (OnlineConfig(T=3, buffer_size=8, state_optimizer="sgd", state_lr=0.1), 1e-12),
            (OnlineConfig(T=2, buffer_size=10, updates=2, batch=3, lam=0.7), 1e-7),
            (OnlineConfig(T=3, buffer_size=8), 1e-7),
        ):
            a = run_online(method, model, cfg, x, y, th, lrs, torch.Generator().manual_seed(5))
            c = run_online_batched(method, model, cfg, x, y, th, lrs, torch.Generator().manual_seed(5))
            assert float((a - c).abs().max()) <= tol, (method, cfg)


def test_no_overlap_tbptt_updates_every_T_steps_on_the_mean_loss() -> None:
    """With T = steps - 1 ... the first update happens at step T; before it the weights are the initial ones."""
    b = Block("cycleworld", "tbptt-no-overlap", 4, (0.05,), 12, 2, hidden=3, p=4)
    model = block_model(b)
    g = torch.Generator().manual_seed(1)
    s = cycle_world(4, 12, 2, g)
    th = block_theta0(b, model, g)
    lrs = torch.full((2,), 0.05, dtype=torch.float64)
    no = run_online_batched("tbptt-no-overlap", model, OnlineConfig(T=4, buffer_size=8), s.inputs, s.targets, th,
                            lrs, g)  # fmt: skip
    frozen = run_online_batched("tbptt-no-overlap", model, OnlineConfig(T=4, buffer_size=8), s.inputs, s.targets,
                                th, lrs, g, theta_grad=torch.zeros_like)  # fmt: skip
    assert torch.equal(no[:, :5], frozen[:, :5])  # steps 0..4: no update yet (the first is after step 4)
    assert not torch.equal(no[:, 5:], frozen[:, 5:])


def test_block_rejects_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="env"):
        Block("mazeworld", "fpp", 2, (0.1,), 10, 2)
    with pytest.raises(InvalidArgument, match="method"):
        Block("cycleworld", "bptt", 2, (0.1,), 10, 2)
    with pytest.raises(InvalidArgument, match="lrs"):
        Block("cycleworld", "fpp", 2, (), 10, 2)
    with pytest.raises(InvalidArgument, match="mutant"):
        Block("cycleworld", "fpp", 2, (0.1,), 10, 2, mutant="nope")
    with pytest.raises(InvalidArgument, match="init"):
        Block("cycleworld", "fpp", 2, (0.1,), 10, 2, init="he")
    b = Block("stochasticworld", "tbptt", 2, (0.1, 0.01), 10, 2, lags=(2, 4))
    assert Block.from_params(b.params()) == b


def test_blocks_are_paired_across_learners_and_learning_rates() -> None:
    """Same seed: the same streams and initial weights whatever the method, T or lr (paired runs)."""
    a = run_block(Block("cycleworld", "tbptt", 2, (1e-9,), 30, 3, hidden=3, p=4, mutant="fpp.learner-frozen"))
    b = run_block(Block("cycleworld", "tbptt", 4, (0.5, 1e-9), 30, 3, hidden=3, p=4, mutant="fpp.learner-frozen"))
    assert a["online"][0] == b["online"][1] == b["online"][0]  # frozen: only the shared init and stream matter


def _fake_values(rep: Reproduction, level: dict[str, float], spread: float = 0.01) -> dict[Any, dict[str, Any]]:
    """Synthetic block values: each learner's runs at ``level[method/T]`` (+ a paired run effect)."""
    out = {}
    for key, blocks in {**rep.learner_blocks(), **rep.control_blocks()}.items():
        for b in blocks:
            base = level.get(key, level.get("default", 0.5))
            runs = [base + spread * math.sin(3.0 * r + 1.0) for r in range(rep.runs)]
            out[b] = {"lrs": list(b.lrs), "online": [runs for _ in b.lrs], "final": [runs for _ in b.lrs],
                      "curve": [{"step": [1.0], "mean": [base]} for _ in b.lrs], "finite": True}  # fmt: skip
    return out


def _full_like_sw() -> Reproduction:
    rep = stochasticworld_design("full")
    return Reproduction(rep.name, "full", rep.env, rep.learners, (1e-3,), 100, 10, controls=rep.controls,
                        common=dict(rep.common))  # fmt: skip


@pytest.mark.parametrize(
    "case",
    ["reproduced", "not-reproduced", "nothing-learned", "only-recurrent-memory", "control-learns",
     "shuffled-control-learns", "control-at-k1-level"],
)  # fmt: skip
def test_stochasticworld_judge_fails_unless_every_criterion_holds(case: str) -> None:
    rep = _full_like_sw()
    frozen = "FPP, gradient zeroed (fpp.learner-frozen), T = 40"
    shuffled = "T-BPTT, T = 40, observations shuffled in time (fpp.learner-shuffled-inputs)"
    assert [c[0] for c in rep.controls] == [frozen, shuffled]  # the k = 1 control is gone
    lev = {"fpp/T=20": 0.55, "tbptt/T=20": 0.60, "fpp/T=40": 0.52, "tbptt/T=40": 0.55, frozen: 0.70,
           shuffled: 0.665}  # fmt: skip
    if case == "not-reproduced":
        lev["fpp/T=20"] = 0.62
    elif case == "nothing-learned":
        lev.update({k: 0.672 for k in ("fpp/T=20", "tbptt/T=20", "fpp/T=40", "tbptt/T=40")})
    elif case == "only-recurrent-memory":  # below the memoryless 0.6616, above the lag-30-only 0.6277: not learned
        lev["tbptt/T=40"] = 0.645
    elif case == "control-learns":
        lev[frozen] = 0.55
    elif case == "shuffled-control-learns":
        lev[shuffled] = 0.60
    elif case == "control-at-k1-level":  # the old k = 1 control's full-size level (0.655) is no success
        lev[shuffled] = 0.655
    res = judge_stochasticworld(rep, _fake_values(rep, lev), seed=0)
    passes = case in ("reproduced", "control-at-k1-level")
    assert (res.verdict is Verdict.PASS) is passes, (res.verdict, res.reason)
    assert res.threshold == pytest.approx(0.6277, abs=5e-5) and "0.4545 is reachable" in res.summary
    if case == "not-reproduced":
        assert any("not reproduced at T = 20" in f for f in res.findings)
    if case in ("nothing-learned", "only-recurrent-memory"):
        assert "S1 premise" in (res.reason or "")
    if case == "shuffled-control-learns":
        assert [c.ok for c in res.controls] == [True, False]
    if case == "control-learns":
        assert not all(c.ok for c in res.controls)


@pytest.mark.parametrize("case", ["reproduced", "not-reproduced", "nothing-learned"])
def test_cycleworld_judge_fails_unless_every_criterion_holds(case: str) -> None:
    reps = [
        Reproduction(r.name, "full", r.env, r.learners, (1e-2,), 100, 10, controls=r.controls, common=dict(r.common))
        for r in cycleworld_designs("paper")[:2]
    ]
    values: dict[Any, dict[str, Any]] = {}
    for r in reps:
        p = r.common["p"]
        lev = {f"fpp/T={p // 2}": 0.3, f"tbptt/T={p // 2}": 0.6, f"fpp/T={p}": 0.2, f"tbptt/T={p}": 0.2,
               "default": 3.0}  # fmt: skip
        if case == "not-reproduced":
            lev[f"fpp/T={p // 2}"] = 0.65
        if case == "nothing-learned":
            lev[f"tbptt/T={p}"] = 1.2
        values.update(_fake_values(r, lev))
    res = judge_cycleworld(reps, values, seed=0)
    assert (res.verdict is Verdict.PASS) is (case == "reproduced"), (res.verdict, res.reason)
    assert bool(res.findings) is (case == "not-reproduced")


def test_a_failed_block_fails_the_reproduction_with_its_traceback() -> None:
    rep = _full_like_sw()
    values = _fake_values(rep, {"default": 0.5})
    lost = rep.all_blocks()[0]
    del values[lost]
    res = judge_stochasticworld(rep, values, seed=0, errors={lost: "Traceback: boom"})
    assert res.verdict is Verdict.FAIL and "boom" in (res.reason or "")


def test_the_designs_state_the_paper_settings() -> None:
    sw = stochasticworld_design("paper")
    assert sw.steps == 10_000 and sw.runs == 30 and sw.common["hidden"] == 32 and len(sw.lrs) == 6
    assert {T for _, T in sw.learners} == {10, 15, 20, 30, 40}
    assert {m for m, _ in sw.learners} == {"fpp", "tbptt", "tbptt-no-overlap"}
    cw = cycleworld_designs("paper")
    assert all(r.steps == 5000 and r.runs == 30 and r.common["hidden"] == 4 for r in cw)
    split = stochasticworld_design("paper", split_lrs=True)
    assert len(split.all_blocks()) == 6 * len(sw.all_blocks())
    assert summarize(sw, {})["learners"]["fpp/T=10"] is None  # missing blocks: no summary


@pytest.mark.parametrize("case", ["reproduced", "no-state-update-as-good", "nothing-learned"])
def test_updates_judge_fails_unless_every_criterion_holds(case: str) -> None:
    reps = [
        Reproduction(r.name, "full", r.env, r.learners, (1e-2,), 100, 10, controls=r.controls, common=dict(r.common))
        for r in updates_designs("full")
    ]
    values: dict[Any, dict[str, Any]] = {}
    for r in reps:
        M, B = r.common["updates"], r.common["batch"]
        fpp = 0.6 if (M, B) == (1, 1) else 0.3
        nsu = 0.5 if case == "reproduced" or case == "nothing-learned" else 0.3
        lev = {"fpp/T=1": fpp, "fpp-no-state-update/T=1": nsu, "default": 1.5}
        if case == "nothing-learned" and (M, B) != (1, 1):
            lev["fpp/T=1"] = 1.1
        values.update(_fake_values(r, lev))
    res = judge_updates(reps, values, seed=0)
    assert (res.verdict is Verdict.PASS) is (case == "reproduced"), (res.verdict, res.reason)
    if case == "no-state-update-as-good":
        assert any("FPP < FPP w/o state update" in f for f in res.findings)
