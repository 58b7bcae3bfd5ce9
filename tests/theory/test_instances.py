"""theory.instances: activation constants and the RNN/LSTM constants against independent numerics.

Miller & Hardt §6.1-6.2, App. A.3.1 (constants of the linear system and tanh RNN),
Prop. 5 / Lemma 5 (LSTM). Each derived constant is checked by sampling: the
quantity it bounds is evaluated with torch at random (and adversarial) points of
the reachable set and must never exceed it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from torch.func import jacrev

from theory import instances as ti

GEN_SEED = 1234


def test_activation_constants_against_a_grid() -> None:
    x = np.linspace(-12, 12, 400001)
    t = np.tanh(x)
    d1, d2 = 1 - t**2, -2 * t * (1 - t**2)
    c = ti.activation_constants("tanh")
    assert c.lipschitz == 1 and c.smoothness == 4 * sp.sqrt(3) / 9
    assert c.L == pytest.approx(np.abs(d1).max(), abs=1e-12)
    assert c.L_prime == pytest.approx(np.abs(d2).max(), rel=1e-8)
    s = 1 / (1 + np.exp(-x))
    c = ti.activation_constants("sigmoid")
    assert c.lipschitz == sp.Rational(1, 4) and c.smoothness == sp.sqrt(3) / 18
    assert c.L == pytest.approx(np.abs(s * (1 - s)).max(), abs=1e-12)
    assert c.L_prime == pytest.approx(np.abs(s * (1 - s) * (1 - 2 * s)).max(), rel=1e-8)
    assert ti.activation_constants("identity").L_prime == 0
    with pytest.raises(ValueError, match="activation"):
        ti.activation_constants("relu")


def _instance(act: str, lam: float, n: int = 4, d: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(n, n, generator=g, dtype=torch.float64)
    W = lam * W / torch.linalg.matrix_norm(W, ord=2)
    U = torch.randn(n, d, generator=g, dtype=torch.float64)
    V = torch.randn(2, n, generator=g, dtype=torch.float64)
    resid = torch.randn(2, generator=g, dtype=torch.float64)
    Bx = 1.5
    rho = torch.tanh if act == "tanh" else (lambda a: a)
    return W, U, V, resid, Bx, rho, g


def _ball(g: torch.Generator, m: int, radius: float, dim: int) -> torch.Tensor:
    v = torch.randn(m, dim, generator=g, dtype=torch.float64)
    v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return v * radius * torch.rand(m, 1, generator=g, dtype=torch.float64) ** (1 / dim)


@pytest.mark.parametrize("act", ["tanh", "identity"])
@pytest.mark.parametrize("lam", [0.4, 0.9])
def test_rnn_constants_bound_sampled_quantities(act: str, lam: float) -> None:
    W, U, V, resid, Bx, rho, g = _instance(act, lam)
    n, d = U.shape
    nU, nV = float(torch.linalg.matrix_norm(U, ord=2)), float(torch.linalg.matrix_norm(V, ord=2))
    c = ti.rnn_constants(lam, nU, Bx, nV, float(torch.linalg.vector_norm(resid)), act)
    Bh = c.L_x * c.B_x / (1 - c.lam)
    assert c.lam == pytest.approx(lam) and c.L_x == pytest.approx(nU)

    def phi(w: torch.Tensor, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        Wm, Um = w[: n * n].reshape(n, n), w[n * n :].reshape(n, d)
        return rho(Wm @ h + Um @ x)

    w0 = torch.cat([W.reshape(-1), U.reshape(-1)])
    m = 12
    H = _ball(g, m, Bh, n)
    X = _ball(g, m, Bx, d)
    worst = {k: 0.0 for k in ("L_w", "hh", "wh", "hw", "ww", "L_p", "beta_p")}
    for i in range(m):
        h, h2, x = H[i], H[(i + 1) % m], X[i]
        Jw = jacrev(phi, argnums=0)(w0, h, x)
        Jh = jacrev(phi, argnums=1)(w0, h, x)
        Jw2 = jacrev(phi, argnums=0)(w0, h2, x)
        Jh2 = jacrev(phi, argnums=1)(w0, h2, x)
        dh = float(torch.linalg.vector_norm(h - h2))
        worst["L_w"] = max(worst["L_w"], float(torch.linalg.matrix_norm(Jw, ord=2)) / c.L_w)
        worst["hh"] = max(worst["hh"], float(torch.linalg.matrix_norm(Jh - Jh2, ord=2)) / dh / max(c.beta_hh, 1e-300))
        worst["wh"] = max(worst["wh"], float(torch.linalg.matrix_norm(Jw - Jw2, ord=2)) / dh / c.beta_wh)
        # a second weight vector on Omega (||W'|| <= lam, ||U'|| <= ||U||)
        W2 = torch.randn(n, n, generator=g, dtype=torch.float64)
        W2 = lam * W2 / torch.linalg.matrix_norm(W2, ord=2)
        U2 = torch.randn(n, d, generator=g, dtype=torch.float64)
        U2 = nU * U2 / torch.linalg.matrix_norm(U2, ord=2)
        w2 = torch.cat([W2.reshape(-1), U2.reshape(-1)])
        dw = float(torch.linalg.vector_norm(w0 - w2))
        Jh_w2 = jacrev(phi, argnums=1)(w2, h, x)
        Jw_w2 = jacrev(phi, argnums=0)(w2, h, x)
        worst["hw"] = max(worst["hw"], float(torch.linalg.matrix_norm(Jh - Jh_w2, ord=2)) / dw / c.beta_hw)
        if c.beta_ww > 0:
            worst["ww"] = max(worst["ww"], float(torch.linalg.matrix_norm(Jw - Jw_w2, ord=2)) / dw / c.beta_ww)
        else:
            assert float(torch.linalg.matrix_norm(Jw - Jw_w2, ord=2)) < 1e-12
        gp = V.T @ (V @ h - resid)  # grad of 1/2 ||V h - resid||^2 (c - y = -resid)
        worst["L_p"] = max(worst["L_p"], float(torch.linalg.vector_norm(gp)) / c.L_p)
        gp2 = V.T @ (V @ h2 - resid)
        worst["beta_p"] = max(worst["beta_p"], float(torch.linalg.vector_norm(gp - gp2)) / dh / c.beta_p)
    if act == "identity":
        assert c.beta_hh == 0 and c.beta_ww == 0 and c.beta_wh == 1 and c.beta_hw == 1
        worst.pop("hh")
    for name, val in worst.items():
        assert val <= 1 + 1e-9, (name, val)
    # the Lipschitz-in-w bound is attained by the linear system at the top of the ball
    if act == "identity":
        h = Bh * torch.ones(n, dtype=torch.float64) / math.sqrt(n)
        x = Bx * torch.ones(d, dtype=torch.float64) / math.sqrt(d)
        assert float(torch.linalg.matrix_norm(jacrev(phi, argnums=0)(w0, h, x), ord=2)) == pytest.approx(c.L_w)


def test_trainable_subsets_and_refusal() -> None:
    c_all = ti.rnn_constants(0.5, 2.0, 1.0, 1.0, 0.0, "tanh", ("W", "U"))
    c_w = ti.rnn_constants(0.5, 2.0, 1.0, 1.0, 0.0, "tanh", ("W",))
    c_u = ti.rnn_constants(0.5, 2.0, 1.0, 1.0, 0.0, "tanh", ("U",))
    Bh = 2.0 / 0.5
    assert c_all.L_w == pytest.approx(math.sqrt(Bh**2 + 1))
    assert c_w.L_w == pytest.approx(Bh) and c_u.L_w == pytest.approx(1.0)
    assert c_u.beta_wh == pytest.approx(float(ti.activation_constants("tanh").smoothness) * 0.5 * 1.0)
    with pytest.raises(ValueError, match="not contractive"):
        ti.rnn_constants(1.0, 1.0, 1.0, 1.0, 0.0, "identity")
    with pytest.raises(ValueError, match="trainable"):
        ti.rnn_constants(0.5, 1.0, 1.0, 1.0, 0.0, "identity", ("V",))
    Lp, bp = ti.loss_constants(2.0, 0.5, 3.0)
    assert Lp == pytest.approx(2.0 * (2.0 * 3.0 + 0.5)) and bp == 4.0


def _lstm_step(W, U, b, s, x):
    H = W.shape[1]
    c, h = s[..., :H], s[..., H:]
    pre = h @ W.T + x @ U.T + b
    f, i, o, z = pre.chunk(4, dim=-1)
    f, i, o, z = torch.sigmoid(f), torch.sigmoid(i), torch.sigmoid(o), torch.tanh(z)
    c2 = i * z + f * c
    return torch.cat([c2, o * torch.tanh(c2)], -1)


def test_lstm_condition_contracts_in_linf_on_the_reachable_set() -> None:
    g = torch.Generator().manual_seed(GEN_SEED)
    H, d, T = 4, 3, 400
    W = 0.04 * torch.randn(4 * H, H, generator=g, dtype=torch.float64)
    U = 0.3 * torch.randn(4 * H, d, generator=g, dtype=torch.float64)
    b = torch.cat([torch.full((H,), -3.0), torch.zeros(3 * H)]).double()
    X = torch.randn(T, d, generator=g, dtype=torch.float64)
    Wf, Wi, Wo, Wz = W.chunk(4, 0)
    Uf, bf = U.chunk(4, 0)[0], b.chunk(4)[0]
    f_inf = float(torch.sigmoid(((Wf.abs().sum(1)) + (X @ Uf.T + bf).max(0).values).max()))

    def inf(M: torch.Tensor) -> float:
        return float(M.abs().sum(1).max())

    cond = ti.lstm_condition(inf(Wi), inf(Wf), inf(Wo), inf(Wz), f_inf, 0.0, dim=2 * H)
    assert cond.proof_condition and cond.lam_inf < 1
    # Lemma 5: the cell state stays below 1/(1 - ||f||) along a long trajectory
    s = torch.zeros(2 * H, dtype=torch.float64)
    for t in range(T):
        s = _lstm_step(W, U, b, s, X[t])
        assert float(s[:H].abs().max()) <= cond.cell_bound
    # contraction in l_inf on sampled reachable pairs
    worst = 0.0
    for t in range(0, T, 4):
        c1 = cond.cell_bound * (2 * torch.rand(32, H, generator=g, dtype=torch.float64) - 1)
        h1 = 2 * torch.rand(32, H, generator=g, dtype=torch.float64) - 1
        s1 = torch.cat([c1, h1], -1)
        s2 = (s1 + 0.05 * torch.randn(32, 2 * H, generator=g, dtype=torch.float64)).clamp(-1, 1)
        s2[:, :H] = (s1[:, :H] + 0.05 * torch.randn(32, H, generator=g, dtype=torch.float64)).clamp(
            -cond.cell_bound, cond.cell_bound
        )
        num = (_lstm_step(W, U, b, s1, X[t]) - _lstm_step(W, U, b, s2, X[t])).abs().max(-1).values
        den = (s1 - s2).abs().max(-1).values
        worst = max(worst, float((num / den).max()))
    assert worst <= cond.lam_inf
    # iterations for l2 contraction
    r = cond.iterations
    assert math.sqrt(2 * H) * cond.lam_inf**r < 1 and (r == 1 or math.sqrt(2 * H) * cond.lam_inf ** (r - 1) >= 1)


def test_lstm_statement_implies_proof_condition() -> None:
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(20000):
        f = rng.uniform(0, 0.99)
        gap = 1 - f
        Wi, Wo = rng.uniform(0, gap), rng.uniform(0, gap)
        Wz, Wf = rng.uniform(0, gap / 4), rng.uniform(0, gap**2)
        cond = ti.lstm_condition(Wi, Wf, Wo, Wz, f)
        if cond.statement:
            hits += 1
            assert cond.proof_condition
    assert hits > 1000
    assert ti.lstm_cell_bound(0.5) == 2.0 and ti.lstm_cell_bound(0.5, 3.0) == 3.0
    with pytest.raises(ValueError):
        ti.lstm_cell_bound(1.0)
