"""Algorithm 1 (App. A), its baselines, and the §5 / App. D environments."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from scipy import stats

from verify.errors import InvalidArgument
from verify.fpp.envs import (
    STOCHASTIC_WORLD_TABLE,
    cycle_world,
    cycle_world_baseline,
    stochastic_world,
    stochastic_world_reference_losses,
)
from verify.fpp.online import (
    OnlineConfig,
    fpp_step,
    init_online_state,
    model_problem,
    run_online,
    tbptt_window_gradient,
)
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SquaredError
from verify.oracles.bptt import tbptt_gradient


def _model(k: int = 3):
    return model_problem(ElmanCell(k, 1, "tanh"), LinearReadout(k, 1), SquaredError())


def test_cycle_world_is_a_ring_whose_target_is_the_next_observation() -> None:
    s = cycle_world(5, 23, 3, torch.Generator().manual_seed(0))
    assert s.inputs.shape == (3, 23, 1) and s.targets.shape == (3, 23, 1)
    assert torch.equal(s.targets[:, :-1], s.inputs[:, 1:])
    for r in range(3):
        ones = torch.nonzero(s.inputs[r, :, 0]).flatten().tolist()
        assert all(b - a == 5 for a, b in itertools.pairwise(ones))
    assert cycle_world_baseline(5) == 0.1


def test_stochastic_world_reference_levels_match_the_paper() -> None:
    """§5: 0.66 (no memory), 'about 0.51' (o_{t-15}; exactly 0.519) and 0.46 (both lags; 0.454)."""
    ref = stochastic_world_reference_losses()
    assert round(ref["none"], 2) == 0.66 and round(ref["both"], 2) == 0.45 and abs(ref["both"] - 0.46) < 0.01
    assert abs(ref["lag15"] - 0.51) < 0.01
    assert ref["both"] < ref["lag15"] < ref["none"] and ref["lag30"] < ref["none"]
    # H(0.625) exactly
    assert math.isclose(ref["none"], -(0.625 * math.log(0.625) + 0.375 * math.log(0.375)), rel_tol=1e-15)


@pytest.mark.statistical
def test_stochastic_world_follows_table_1() -> None:
    """Conditional frequencies of y_t given (o_{t-15}, o_{t-30}) match Table 1.

    Two-sided binomial tests, Bonferroni over the 3 non-degenerate cells at family-wise false-fail rate 1e-4
    (fixed seed: deterministic in CI); the (1, 0) cell must be exactly 1.
    """
    s = stochastic_world(20000, 2, torch.Generator().manual_seed(1))
    x = s.inputs[..., 0].long()
    y = s.targets
    a = x[:, 15:-15]  # o_{t-15} for t = 30..
    b = x[:, :-30]  # o_{t-30}
    yt = y[:, 30:]
    for (i, j), prob in STOCHASTIC_WORLD_TABLE.items():
        sel = (a == i) & (b == j)
        k, n = int(yt[sel].sum()), int(sel.sum())
        if prob == 1.0:
            assert k == n
        else:
            assert stats.binomtest(k, n, prob).pvalue > 1e-4 / 3


def test_tbptt_window_gradient_equals_the_reference_truncated_bptt() -> None:
    """The online T-BPTT trainer's gradient = verify.oracles.bptt.tbptt_gradient(which='final') at frozen θ."""
    model = _model()
    g = torch.Generator().manual_seed(0)
    stream = cycle_world(4, 9, 1, g)
    P = model.with_sequence(stream.inputs[0], stream.targets[0], torch.zeros(3, dtype=torch.float64))
    theta = P.init_theta(g)
    S = P.rollout(theta)
    for T in (1, 3, 5):
        ref = tbptt_gradient(P, theta, T, which="final")
        got = tbptt_window_gradient(model, theta, S[-T - 1], P.inputs[-T:], P.targets[-1])
        assert torch.allclose(got, ref, rtol=1e-13, atol=1e-15)


def test_fpp_writes_states_back_and_the_baseline_does_not() -> None:
    model = _model()
    g = torch.Generator().manual_seed(2)
    cfg = OnlineConfig(T=2, buffer_size=6, updates=2, batch=3, lr=0.05)
    theta = model.init_theta(g)
    stream = cycle_world(3, 8, 1, g)
    st = init_online_state(model, cfg, theta)
    lr = torch.tensor(0.05, dtype=torch.float64)
    for t in range(5):
        st, _ = fpp_step(model, cfg, st, stream.inputs[0, t], stream.targets[0, t], None, lr)
    pos = torch.tensor([[4, 5, 5], [3, 4, 5]])
    new, loss = fpp_step(model, cfg, st, stream.inputs[0, 5], stream.targets[0, 5], pos, lr)
    changed = (new.states != torch.cat([st.states[1:], new.states[-1:]])).any(-1)
    assert set(torch.nonzero(changed).flatten().tolist()) <= {1, 2, 3, 4, 5} and bool(changed.any())
    assert not torch.equal(new.theta, st.theta)
    frozen, _ = fpp_step(model, cfg, st, stream.inputs[0, 5], stream.targets[0, 5], pos, lr, update_states=False)
    assert torch.equal(frozen.states[:-1], st.states[1:])
    assert not torch.equal(frozen.theta, st.theta)  # W and beta are still updated
    assert loss.shape == ()


def test_run_online_shapes_and_learning_on_cycle_world() -> None:
    """A short run: every method returns (R, steps) finite losses; FPP learns CycleWorld(3) below predict-zero."""
    model = _model(4)
    g = torch.Generator().manual_seed(0)
    R, steps, p = 3, 400, 3
    stream = cycle_world(p, steps, R, g)
    th0 = torch.stack([model.init_theta(g) for _ in range(R)])
    lrs = torch.full((R,), 0.03, dtype=torch.float64)
    for method in ("fpp", "fpp-no-state-update", "tbptt"):
        L = run_online(method, model, OnlineConfig(T=p, buffer_size=20), stream.inputs, stream.targets, th0, lrs, g)
        assert L.shape == (R, steps) and bool(torch.isfinite(L).all())
        if method == "fpp":
            assert float(L[:, -100:].mean()) / cycle_world_baseline(p) < 0.5


def test_online_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="buffer"):
        OnlineConfig(T=5, buffer_size=5)
    for key in ("lam", "lr"):
        with pytest.raises(InvalidArgument):
            OnlineConfig(**{key: 0.0})
    with pytest.raises(InvalidArgument):
        OnlineConfig(decay=1.0)
    model = _model()
    x = torch.zeros(2, 5, 1, dtype=torch.float64)
    with pytest.raises(InvalidArgument, match="method"):
        run_online("bptt", model, OnlineConfig(), x, x, torch.zeros(2, model.p), torch.ones(2), torch.Generator())
    with pytest.raises(InvalidArgument):
        run_online("fpp", model, OnlineConfig(), x, x, torch.zeros(3, model.p), torch.ones(2), torch.Generator())
