"""The broken learners of the §5 controls (verify.fpp.broken_learners): the shuffled-inputs learner cannot learn.

Issue 24: T-BPTT with k = 1 was the Stochastic World control and learned through the recurrence (0.655 at full
size, below the memoryless 0.6616), so the control could succeed. Its replacement is fed each run's observations
shuffled in time; these tests measure what that leaves to learn and rerun it through the ci-scale harness.
"""

from __future__ import annotations

import math

import pytest
import torch

from verify.checks.fpp_reproduction import judge_stochasticworld
from verify.errors import InvalidArgument
from verify.fpp.broken_learners import BROKEN_LEARNERS, shuffled_inputs, stream_mutant
from verify.fpp.envs import stochastic_world, stochastic_world_reference_losses
from verify.fpp.reproduction import Block, run_blocks, stochasticworld_design
from verify.verdict import Verdict

SHUFFLED = "fpp.learner-shuffled-inputs"


def _plugin_ce(y: torch.Tensor, *features: torch.Tensor) -> float:
    """Plug-in conditional entropy (nats) of the binary ``y`` given the binary ``features`` (flattened)."""
    key = torch.zeros_like(y)
    for f in features:
        key = 2 * key + f.long()
    h = 0.0
    for k in key.unique():
        sel = y[key == k].double()
        q, w = float(sel.mean()), sel.numel() / y.numel()
        h += w * -sum(v * math.log(v) for v in (q, 1 - q) if v > 0)
    return h


def test_shuffled_inputs_permute_each_run_in_time_and_are_reproducible() -> None:
    x = torch.randint(0, 2, (3, 50, 1), generator=torch.Generator().manual_seed(1)).double()
    a = shuffled_inputs(x, torch.Generator().manual_seed(5))
    b = shuffled_inputs(x, torch.Generator().manual_seed(5))
    assert torch.equal(a, b) and a.shape == x.shape
    for r in range(3):  # each run: the same observations, in another order
        assert torch.equal(a[r].sort(0).values, x[r].sort(0).values)
    assert not torch.equal(a, x)
    assert stream_mutant(SHUFFLED) is shuffled_inputs and SHUFFLED in BROKEN_LEARNERS
    with pytest.raises(InvalidArgument, match="mutant"):
        stream_mutant("fpp.learner-frozen")  # a gradient mutant, not a stream one
    with pytest.raises(InvalidArgument, match="mutant"):
        Block("stochasticworld", "tbptt", 5, (1e-3,), 10, 2, mutant="fpp.no-such-learner")


def test_shuffling_leaves_nothing_below_the_memoryless_level() -> None:
    """The Bayes levels the control can reach: with the lags intact o_(t-15), o_(t-30) give the optimum 0.4545 and
    o_(t-30) alone 0.6277; in the shuffled stream the same positions (and any single lag) give the memoryless
    0.6616 -- up to the plug-in estimate's sampling error (4 cells, 200 000 targets: about 1e-5 nats of bias)."""
    refs = stochastic_world_reference_losses()
    assert refs["lag30"] == pytest.approx(0.6277, abs=1e-4) and refs["none"] == pytest.approx(0.6616, abs=1e-4)
    s = stochastic_world(50_000, 4, torch.Generator().manual_seed(3))
    x, y = s.inputs[..., 0], s.targets
    t = slice(30, None)  # targets whose lags are inside the stream

    def lag(v: torch.Tensor, k: int) -> torch.Tensor:
        return v[:, 30 - k : v.shape[1] - k]

    assert _plugin_ce(y[:, t], lag(x, 15), lag(x, 30)) == pytest.approx(refs["both"], abs=0.005)
    assert _plugin_ce(y[:, t], lag(x, 30)) == pytest.approx(refs["lag30"], abs=0.005)
    xs = shuffled_inputs(s.inputs, torch.Generator().manual_seed(4))[..., 0]
    for feats in ((15, 30), (15,), (30,), (1,)):
        h = _plugin_ce(y[:, t], *(lag(xs, k) for k in feats))
        assert h == pytest.approx(refs["none"], abs=0.005), (feats, h)
        assert h > refs["lag30"] + 0.02


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_shuffled_control_fails_on_the_ci_harness_and_the_learners_pass(seed: int) -> None:
    """The ci-scale design, run in-process: T-BPTT fed shuffled observations does not get below the lag-30-only
    level (its control FAILs as it must), while FPP and T-BPTT on the intact stream do (the verdict is PASS)."""
    rep = stochasticworld_design("ci", seed)
    values = run_blocks(rep.all_blocks())
    res = judge_stochasticworld(rep, values, seed=seed)
    assert res.verdict is Verdict.PASS, (res.reason, res.summary)
    (ctrl,) = [c for c in res.controls if SHUFFLED in c.name]
    assert ctrl.observed == "FAIL" and ctrl.ok, ctrl.detail
    summ = res.data["controls"][next(k for k in res.data["controls"] if SHUFFLED in k)]
    assert summ["final_ci"][1] >= res.data["references"]["lag30"] < summ["final_mean"], summ["final_ci"]
