"""Marschall et al. 2020's Add task (``marschall-add``): the generator, the baselines' derivation, the runs, the judge.

Tolerances: the baselines are checked against an independent brute-force minimisation to 1e-6 (the grid's resolution
bound below) and against a simulated predictor to 6 standard errors of a 200 000-step mean (false-FAIL rate < 1e-8);
the fast-path local traces equal the autograd ones to 1e-10 relative (float64 round-off of a few steps).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from verify.checks.marschall_add import judge_add_sweep, sign_test
from verify.errors import InvalidArgument
from verify.estimators import run_estimator
from verify.estimators.local import RFLO, EProp
from verify.model.builders import random_problem
from verify.rtrl.marschall_add import (
    CONTROLS,
    LEARNERS,
    SIZES,
    AddScale,
    add_baselines,
    add_task,
    binary_entropy,
    run_cell,
)
from verify.run.sweep.definitions import SweepOptions, get_definition
from verify.verdict import Verdict


def _p(x1: int, x2: int) -> float:
    return 0.5 + 0.5 * x1 - 0.25 * x2


def _best_loss(info: str) -> float:
    """Brute force: for each value of the remembered inputs, the q on a fine grid minimising the mean cross-entropy
    over the forgotten ones (independent of the module's closed form)."""
    qs = np.linspace(1e-6, 1 - 1e-6, 200_001)
    total = 0.0
    groups: dict[tuple[int, ...], list[float]] = {}
    for x1 in (0, 1):
        for x2 in (0, 1):
            key = {"mean": (), "t1-only": (x1,), "t2-only": (x2,), "both": (x1, x2)}[info]
            groups.setdefault(key, []).append(_p(x1, x2))
    for ps in groups.values():
        ce = np.mean([-(p * np.log(qs) + (1 - p) * np.log(1 - qs)) for p in ps], axis=0)
        total += float(ce.min()) * len(ps) / 4
    return total


@pytest.mark.parametrize("info", ["mean", "t1-only", "t2-only", "both"])
def test_baselines_match_brute_force(info: str) -> None:
    assert add_baselines()[info] == pytest.approx(_best_loss(info), abs=1e-6)


def test_baselines_are_pitis_numbers_and_ordered() -> None:
    b = add_baselines()
    # Pitis 2016 (r2rt.com, "Recurrent neural networks in TensorFlow I"): 0.66, 0.52, 0.45 nats
    assert [round(b[k], 2) for k in ("mean", "t1-only", "both")] == [0.66, 0.52, 0.45]
    assert b["both"] < b["t1-only"] < b["t2-only"] < b["mean"]


def test_simulated_predictors_reach_the_baselines() -> None:
    """The best predictor with each memory, run on the generated task (soft labels), scores its baseline."""
    steps, t1, t2 = 200_000, 3, 5
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2, steps + t2).astype(float)
    X, Y = add_task(steps, t1, t2, np.random.default_rng(7), soft=True)
    assert torch.equal(X[:, 0], torch.as_tensor(x[t2:]))  # the same draws: inputs t2.. are scored
    x1, x2 = x[t2 - t1 : t2 - t1 + steps], x[:steps]
    p = Y[:, 0].numpy()
    assert np.allclose(p, 0.5 + 0.5 * x1 - 0.25 * x2)
    preds = {"mean": np.full(steps, 5 / 8), "t1-only": 3 / 8 + 0.5 * x1, "t2-only": 0.75 - 0.25 * x2,
             "both": np.clip(p, 1e-12, 1 - 1e-12)}  # fmt: skip
    for k, q in preds.items():
        ce = -(p * np.log(q) + (1 - p) * np.log(1 - q))
        assert abs(ce.mean() - add_baselines()[k]) < 6 * ce.std() / math.sqrt(steps) + 1e-9, k


def test_bernoulli_labels_have_the_stated_probabilities() -> None:
    steps, t1, t2 = 100_000, 2, 4
    _, Y = add_task(steps, t1, t2, np.random.default_rng(3))
    assert set(torch.unique(Y).tolist()) <= {0.0, 1.0}
    assert torch.equal(Y[:, 0] + Y[:, 1], torch.ones(steps, dtype=torch.float64))
    # the label's mean is E[p] = 5/8; binomial standard error sqrt(p(1-p)/n) = 0.0015, 6 SE
    assert abs(float(Y[:, 0].mean()) - 5 / 8) < 6 * math.sqrt(5 / 8 * 3 / 8 / steps)


@pytest.mark.parametrize(
    ("kw", "name"),
    [({"t1": 0}, "t1"), ({"t2": 2}, "t2"), ({"t2": 1}, "t2"), ({"steps": 0}, "steps"), ({"t1": True}, "t1")],
)
def test_add_task_names_bad_arguments(kw: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"steps": 10, "t1": 2, "t2": 3, **kw}
    with pytest.raises(InvalidArgument, match=name):
        add_task(args["steps"], args["t1"], args["t2"], np.random.default_rng(0))  # type: ignore[arg-type]


def test_binary_entropy() -> None:
    assert binary_entropy(0.5) == pytest.approx(math.log(2))
    assert binary_entropy(1.0) == 0.0
    with pytest.raises(InvalidArgument, match="p"):
        binary_entropy(1.5)


@pytest.mark.parametrize("cls", [RFLO, EProp])
def test_local_traces_fast_path_equals_autograd(cls: type) -> None:
    prob, th = random_problem(
        "elman-tanh", n=4, d=2, T=6, k=2, loss="cross-entropy", generator=torch.Generator().manual_seed(1)
    )
    a = run_estimator(cls(), prob, th, torch.Generator().manual_seed(0))
    b = run_estimator(cls(path="auto"), prob, th, torch.Generator().manual_seed(0))
    assert float((a - b).norm() / a.norm()) < 1e-10
    with pytest.raises(InvalidArgument, match="path"):
        cls(path="quick")


def test_run_cell_shapes_and_controls() -> None:
    sc = AddScale(2, 3, 3, 1, 30, (0.05,), 40, 3)
    out = run_cell(sc, 0, 0.05)
    assert set(out["learners"]) == set(LEARNERS + CONTROLS)
    frozen = out["learners"]["frozen"]
    assert len(set(frozen["curve"])) == 1 and frozen["final"] == frozen["curve"][0]
    assert out["curve_steps"] == [0, 10, 20, 30]
    for k, v in out["learners"].items():
        assert len(v["curve"]) == 4, k
        assert (v["alignment"] is None) == (k in ("rtrl", "frozen", "readout-only")), k
    # deterministic: the same call gives the same numbers
    again = run_cell(sc, 0, 0.05, learners=("rtrl", "uoro"))
    assert again["learners"]["uoro"]["curve"] == out["learners"]["uoro"]["curve"]
    with pytest.raises(InvalidArgument, match="learners"):
        run_cell(sc, 0, 0.05, learners=("bptt",))
    with pytest.raises(InvalidArgument, match="lr"):
        run_cell(sc, 0, -1.0)
    with pytest.raises(InvalidArgument, match="scale"):
        run_cell("huge", 0, 0.1)


def _values(sc: AddScale, finals: dict[str, list[float]]) -> dict[tuple[int, float], dict[str, object]]:
    out: dict[tuple[int, float], dict[str, object]] = {}
    for r in range(sc.realizations):
        for lr in sc.lrs:
            learners = {
                k: {"final": v[r] + (0.0 if lr == sc.lrs[0] else 0.01), "curve": [0.7, v[r]],
                    "alignment": None if k in ("rtrl", *CONTROLS) else 0.5}
                for k, v in finals.items()
            }  # fmt: skip
            out[(r, lr)] = {"curve_steps": [0, 10], "learners": learners}
    return out


_SC = AddScale(2, 3, 4, 5, 10, (0.01, 0.03))


def _finals(rtrl: float, readout: float = 0.6) -> dict[str, list[float]]:
    base = {k: [0.6] * 5 for k in LEARNERS}
    return {**base, "rtrl": [rtrl] * 5, "frozen": [0.69] * 5, "readout-only": [readout] * 5}


def test_judge_passes_when_rtrl_learns_both_and_controls_fail() -> None:
    res = judge_add_sweep("x", "full", _SC, _values(_SC, _finals(0.47)), {})
    assert res.verdict is Verdict.PASS, res.reason
    assert all(c.ok for c in res.controls) and len(res.controls) == 3
    assert res.data["lr"]["rtrl"] == 0.01 and res.data["scale"] == "full"
    assert res.data["not_judged"][0].startswith("the paper's sizes")


def test_judge_fails_when_rtrl_learns_only_the_first() -> None:
    res = judge_add_sweep("x", "full", _SC, _values(_SC, _finals(0.55)), {})
    assert res.verdict is Verdict.FAIL and "T0" in (res.reason or "")


def test_judge_fails_when_a_control_reaches_the_t1_baseline() -> None:
    res = judge_add_sweep("x", "full", _SC, _values(_SC, _finals(0.47, readout=0.5)), {})
    assert res.verdict is Verdict.FAIL and "control" in (res.reason or "")


def test_judge_fails_on_missing_cells() -> None:
    vals = _values(_SC, _finals(0.47))
    del vals[(0, 0.01)]
    assert judge_add_sweep("x", "full", _SC, vals, {}).verdict is Verdict.FAIL


def test_sign_test() -> None:
    assert sign_test(5, 5) == 1 / 32 and sign_test(0, 5) == 1.0


def test_sweep_definition() -> None:
    d = get_definition("marschall-add")
    plan = d.build(SweepOptions(scale="full"))
    sc = SIZES["full"]
    assert len(plan.cells) == sc.realizations * len(sc.lrs)
    assert plan.settings["scale"] == "full"
    assert len(d.build(SweepOptions(scale="paper")).cells) == 27
    with pytest.raises(InvalidArgument, match="--scale"):
        d.build(SweepOptions(scale="huge"))


def test_eprop_equals_snap1_on_an_elman_network() -> None:
    """On s' = tanh(W s + U x + b) both keep exactly each unit's own derivative on its own row's parameters (SnAp-1's
    mask keeps row i's entries of unit i; e-prop's trace decays them by the diagonal of dF/ds): the same estimates,
    which is why the sweep's e-prop and SnAp-1 rows agree."""
    from verify.estimators.snap import SnAp

    prob, th = random_problem("elman-tanh", n=5, d=2, T=8, k=2, loss="cross-entropy",
                              generator=torch.Generator().manual_seed(4))  # fmt: skip
    a = run_estimator(EProp(path="auto"), prob, th, torch.Generator().manual_seed(0))
    b = run_estimator(SnAp(1), prob, th, torch.Generator().manual_seed(0))
    assert float((a - b).norm() / a.norm()) < 1e-10
