"""Marschall et al. 2020's Mimic task (``marschall-mimic``): the generator, the baselines, the runs, the judge.

Tolerances: the labels against an independent numpy recursion of the target to 1e-12 (float64 round-off of a few
hundred tanh steps); a baseline that must vanish (a target with no recurrence: the output is a function of x_t) to
1e-20 (sums of squares of round-off); the mean baseline of that target against the closed form over the four input
patterns to 3 % (a 20 000-step estimate: the patterns' frequencies vary by about 1.4 %, their effect on a variance a
few per cent at most).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from verify.checks.marschall_mimic import judge_mimic_sweep
from verify.errors import InvalidArgument
from verify.rtrl.marschall_add import CONTROLS, LEARNERS
from verify.rtrl.marschall_mimic import (
    BASELINE_NAMES,
    SIZES,
    MimicScale,
    mimic_baselines,
    mimic_task,
    run_cell,
    target_theta,
)
from verify.run.sweep.definitions import SweepOptions, get_definition
from verify.verdict import Verdict

_SMALL = MimicScale(5, 1, 30, (0.05,), 40, 3)


def _unpack(sc: MimicScale, theta: torch.Tensor) -> tuple[np.ndarray, ...]:
    """θ's blocks in the problem's layout order (cell W, U, b; readout V, c), read independently as numpy."""
    th = theta.numpy()
    n, d, k = sc.n, sc.d, sc.n_out
    sizes = [n * n, n * d, n, k * n, k]
    parts, at = [], 0
    for s in sizes:
        parts.append(th[at : at + s])
        at += s
    W, U, b, V, c = parts
    return W.reshape(n, n), U.reshape(n, d), b, V.reshape(k, n), c


def test_labels_are_the_target_networks_outputs() -> None:
    sc = _SMALL
    rng = np.random.default_rng(3)
    theta = target_theta(sc, rng)
    X, Y = mimic_task(300, sc, theta, np.random.default_rng(5))
    assert set(np.unique(X.numpy())) <= {0.0, 1.0} and X.shape == (300, sc.d) and Y.shape == (300, sc.n_out)
    W, U, b, V, c = _unpack(sc, theta)
    h = np.zeros(sc.n)
    for t in range(300):
        h = np.tanh(W @ h + U @ X[t].numpy() + b)
        assert np.allclose(Y[t].numpy(), V @ h + c, rtol=0, atol=1e-12), t


def test_inputs_are_bernoulli_with_the_stated_probability() -> None:
    sc = MimicScale(4, 1, 10, (0.1,), p_input=0.25, d=3)
    X, _ = mimic_task(40_000, sc, target_theta(sc, np.random.default_rng(0)), np.random.default_rng(1))
    p = float(X.mean())
    assert abs(p - 0.25) < 6 * math.sqrt(0.25 * 0.75 / X.numel())  # 6 standard errors


def test_baselines_of_a_memoryless_target() -> None:
    """With W* = 0 the output is a function of x_t: input-only and memory-1 vanish; mean is the closed form."""
    sc = MimicScale(4, 1, 10, (0.1,))
    theta = target_theta(sc, np.random.default_rng(2)).clone()
    theta[: sc.n * sc.n] = 0.0
    b = mimic_baselines(sc, theta, np.random.default_rng(4), steps=20_000)
    assert b["input-only"] < 1e-20 and b["memory-1"] < 1e-20
    _, U, bb, V, c = _unpack(sc, theta)
    ys = np.array([V @ np.tanh(U @ np.array([x0, x1]) + bb) + c for x0 in (0, 1) for x1 in (0, 1)])
    exact = 0.5 * float(((ys - ys.mean(0)) ** 2).sum(1).mean())
    assert b["mean"] == pytest.approx(exact, rel=0.03)


def test_baselines_are_ordered_for_a_recurrent_target() -> None:
    sc = SIZES["full"]
    rng = np.random.default_rng(8)
    b = mimic_baselines(sc, target_theta(sc, rng), rng, steps=20_000)
    assert list(b) == list(BASELINE_NAMES)
    assert b["mean"] > b["input-only"] > b["memory-1"] > 0.0  # the past matters beyond the last two inputs


def test_mimic_task_names_bad_arguments() -> None:
    sc = _SMALL
    theta = target_theta(sc, np.random.default_rng(0))
    with pytest.raises(InvalidArgument, match="steps"):
        mimic_task(0, sc, theta, np.random.default_rng(0))
    with pytest.raises(InvalidArgument, match="theta_star"):
        mimic_task(10, sc, theta[:-1], np.random.default_rng(0))


def test_run_cell_shapes_and_controls() -> None:
    out = run_cell(_SMALL, 0, 0.05)
    assert set(out["learners"]) == set(LEARNERS + CONTROLS)
    assert set(out["baselines"]) == set(BASELINE_NAMES)
    frozen = out["learners"]["frozen"]
    assert len(set(frozen["curve"])) == 1 and frozen["final"] == frozen["curve"][0]
    assert out["curve_steps"] == [0, 10, 20, 30]
    for k, v in out["learners"].items():
        assert len(v["curve"]) == 4, k
        assert (v["alignment"] is None) == (k in ("rtrl", "frozen", "readout-only")), k
    again = run_cell(_SMALL, 0, 0.05, learners=("rtrl", "uoro"))
    assert again["learners"]["uoro"]["curve"] == out["learners"]["uoro"]["curve"]
    with pytest.raises(InvalidArgument, match="learners"):
        run_cell(_SMALL, 0, 0.05, learners=("bptt",))
    with pytest.raises(InvalidArgument, match="lr"):
        run_cell(_SMALL, 0, math.nan)
    with pytest.raises(InvalidArgument, match="scale"):
        run_cell("huge", 0, 0.1)


_SC = MimicScale(4, 5, 10, (0.01, 0.03))
_MEM1 = [0.06, 0.05, 0.07, 0.06, 0.05]


def _values(finals: dict[str, list[float]]) -> dict[tuple[int, float], dict[str, object]]:
    out: dict[tuple[int, float], dict[str, object]] = {}
    for r in range(_SC.realizations):
        for lr in _SC.lrs:
            learners = {
                k: {"final": v[r] + (0.0 if lr == _SC.lrs[0] else 0.01), "curve": [0.3, v[r]],
                    "alignment": None if k in ("rtrl", *CONTROLS) else 0.5}
                for k, v in finals.items()
            }  # fmt: skip
            base = {"mean": 0.25, "input-only": 0.12, "memory-1": _MEM1[r]}
            out[(r, lr)] = {"curve_steps": [0, 10], "learners": learners, "baselines": base}
    return out


def _finals(rtrl: list[float], readout: float = 0.06, frozen: float = 0.29) -> dict[str, list[float]]:
    return {**{k: [0.04] * 5 for k in LEARNERS}, "rtrl": rtrl, "frozen": [frozen] * 5, "readout-only": [readout] * 5}


def test_judge_passes_when_rtrl_beats_memory1_and_the_reservoir() -> None:
    res = judge_mimic_sweep("x", "full", _SC, _values(_finals([0.02] * 5)), {})
    assert res.verdict is Verdict.PASS, res.reason
    assert len(res.controls) == 2 and all(c.ok for c in res.controls)
    assert res.data["lr"]["rtrl"] == 0.01 and res.data["not_judged"][0].startswith("the paper's sizes")


def test_judge_compares_each_realization_with_its_own_baseline() -> None:
    # below the median memory-1 baseline (0.06) everywhere, but above realization 1's (0.05): 4/5 is not enough
    res = judge_mimic_sweep("x", "full", _SC, _values(_finals([0.02, 0.055, 0.02, 0.02, 0.02], readout=0.2)), {})
    assert res.verdict is Verdict.FAIL and "T0" in (res.reason or "")


def test_judge_fails_when_the_reservoir_does_as_well() -> None:
    res = judge_mimic_sweep("x", "full", _SC, _values(_finals([0.02] * 5, readout=0.01)), {})
    assert res.verdict is Verdict.FAIL and "T1" in (res.reason or "")


def test_judge_fails_when_the_frozen_control_passes() -> None:
    res = judge_mimic_sweep("x", "full", _SC, _values(_finals([0.02] * 5, frozen=0.001)), {})
    assert res.verdict is Verdict.FAIL and "control" in (res.reason or "")


def test_judge_fails_on_missing_cells_and_without_the_control() -> None:
    vals = _values(_finals([0.02] * 5))
    del vals[(0, 0.01)]
    assert judge_mimic_sweep("x", "full", _SC, vals, {}).verdict is Verdict.FAIL
    no_frozen = _finals([0.02] * 5)
    del no_frozen["frozen"]
    res = judge_mimic_sweep("x", "full", _SC, _values(no_frozen), {})
    assert res.verdict is Verdict.FAIL and "frozen control was not run" in (res.reason or "")


def test_sweep_definition() -> None:
    d = get_definition("marschall-mimic")
    plan = d.build(SweepOptions(scale="full"))
    sc = SIZES["full"]
    assert len(plan.cells) == sc.realizations * len(sc.lrs) == 10
    assert plan.settings["target_gain"] == sc.target_gain
    assert {c.task for c in plan.cells} == {"rtrl.marschall-mimic-run"}
    assert len(d.build(SweepOptions(scale="paper")).cells) == 27
    with pytest.raises(InvalidArgument, match="--scale"):
        d.build(SweepOptions(scale="huge"))
