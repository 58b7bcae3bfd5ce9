"""UORO family: exact unbiasedness by enumeration (≤ 1e-12), conformance to Algorithm 1, vectorization.

* the expectation over all Rademacher patterns of s̃⊗θ̃ and g̃ equals the float64
  references (UORO Prop. 1) for UORO, rank r, UORO-T and preactivation UORO;
* with tabulated noise, the implementation equals an independent, literal
  transcription of Algorithm 1 (explicit Jacobians, one sample at a time);
* M samples in one vectorized pass equal M separate single-sample runs.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import grad, jacrev

from tests.conftest import examples
from tests.estimators.helpers import small_problem
from verify.errors import InvalidArgument
from verify.estimators import UORO, PreactivationUORO, Tabulated, enumerate_expectation, run_estimator
from verify.estimators.enumerate import sign_patterns
from verify.estimators.online import rollout
from verify.impl.mutants.estimators import get as get_mutant
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.testing.strategies import CELL_KINDS, random_problem

TOL = 1e-12


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    return float(torch.linalg.vector_norm(a - b)) / den if den > 0 else float(torch.linalg.vector_norm(a))


def enum_errors(est, P, th, limit: int = 256) -> tuple[float, float]:
    per = 1
    for s in est.noise_shape(P):
        per *= s
    steps = max(t for t in range(1, P.T + 1) if 2 ** (est.noise_draws(t) * per) <= limit)
    E = enumerate_expectation(est, P, th, steps=steps, max_patterns=limit)
    I_ref = influence_matrices(P, th)
    I_at = torch.stack([I_ref[s - 1] if s else torch.zeros_like(I_ref[0]) for s in E.influence_steps])
    return rel(E.gradients, per_step_gradients(P, th)[:steps]), rel(E.influence, I_at)


@settings(max_examples=examples(25))
@given(
    kind=st.sampled_from(CELL_KINDS),
    loss=st.sampled_from(("squared-error", "cross-entropy")),
    rank=st.integers(1, 2),
    block=st.integers(1, 3),
    batch=st.sampled_from(((), (2,))),
    seed=st.integers(0, 2**31 - 1),
)
def test_enumerated_uoro_is_exact(
    kind: str, loss: str, rank: int, block: int, batch: tuple[int, ...], seed: int
) -> None:
    n = 1 if kind == "lstm" else 2
    P, th = random_problem(
        kind, n=n, d=1, T=4, k=2, loss=loss, batch=batch, generator=torch.Generator().manual_seed(seed)
    )
    est = UORO(rank=rank, block=block)
    e_g, e_i = enum_errors(est, P, th)
    assert e_g <= TOL and e_i <= TOL


@settings(max_examples=examples(12))
@given(
    kind=st.sampled_from(("elman-tanh", "elman-relu")),
    rank=st.integers(1, 2),
    batch=st.sampled_from(((), (2,))),
    seed=st.integers(0, 2**31 - 1),
)
def test_enumerated_preactivation_uoro_is_exact(kind: str, rank: int, batch: tuple[int, ...], seed: int) -> None:
    P, th = random_problem(kind, n=3, d=2, T=4, k=2, batch=batch, generator=torch.Generator().manual_seed(seed))
    e_g, e_i = enum_errors(PreactivationUORO(rank=rank), P, th)
    assert e_g <= TOL and e_i <= TOL


# ------------------------------------------------------------------ conformance
def algorithm1(P, th, nus, block: int = 1, eps: float = 1e-7):
    """A literal transcription of Algorithm 1 (UORO-T: F^T over `block` steps), one sample, rank len(nus[0]).

    Explicit Jacobians (jacrev), explicit matrix-vector products; nus[i][j] is the ν of
    reduction i for pair j, shape (*B, n).
    """
    r = len(nus[0])
    N = P.n * max(1, int(torch.tensor(P.batch_shape).prod()) if P.batch_shape else 1)
    st_ = [torch.zeros(N, dtype=P.dtype) for _ in range(r)]
    tt = [torch.zeros(P.p, dtype=P.dtype) for _ in range(r)]
    s_block, out = P.s0.clone(), []
    for t in range(1, P.T + 1):
        t0 = ((t - 1) // block) * block

        def loss(th_, sb, t=t, t0=t0):
            return P.step_loss(th_, rollout(P, th_, sb, t0, t), P.targets[t - 1])

        dth, ds = grad(loss, argnums=(0, 1))(th, s_block)
        g = dth + sum((ds.reshape(-1) @ st_[j]) * tt[j] for j in range(r)) / r
        out.append(g)
        if t - t0 == block:

            def F(th_, sb, t=t, t0=t0):
                return rollout(P, th_, sb, t0, t).reshape(-1)

            Jth, Js = jacrev(F, argnums=(0, 1))(th, s_block)
            Js = Js.reshape(N, N)
            for j in range(r):
                nu = nus[t // block - 1][j].reshape(-1)
                s_fwd = Js @ st_[j]
                dthg = nu @ Jth
                rho0 = torch.sqrt(tt[j].norm() / (s_fwd.norm() + eps)) + eps
                rho1 = torch.sqrt(dthg.norm() / (nu.norm() + eps)) + eps
                st_[j] = rho0 * s_fwd + rho1 * nu
                tt[j] = tt[j] / rho0 + dthg / rho1
            s_block = rollout(P, th, s_block, t0, t)
    return torch.stack(out), st_, tt


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize(("rank", "block"), [(1, 1), (2, 1), (1, 2), (2, 3)])
def test_uoro_conforms_to_algorithm_1(kind: str, rank: int, block: int) -> None:
    P, th = small_problem(kind, batch=(2,) if kind == "gru" else (), T=7, seed=5)
    gen = torch.Generator().manual_seed(9)
    draws = P.T // block
    table = (2 * torch.randint(0, 2, (draws, 1, rank, *P.batch_shape, P.n), generator=gen) - 1).double()
    est = UORO(rank=rank, block=block, noise=Tabulated(table))
    rng = torch.Generator()
    state = est.init(P, th, rng)
    G = []
    for t in range(1, P.T + 1):
        state, g = est.step(P, th, state, t, rng)
        G.append(g[0])
    nus = [[table[i, 0, j] for j in range(rank)] for i in range(draws)]
    G_ref, st_ref, tt_ref = algorithm1(P, th, nus, block)
    assert rel(torch.stack(G), G_ref) <= 1e-12
    for j in range(rank):
        assert rel(state.s_tilde[0, j].reshape(-1), st_ref[j]) <= 1e-12
        assert rel(state.theta_tilde[0, j], tt_ref[j]) <= 1e-12


def test_samples_are_vectorized_and_independent() -> None:
    """M samples in one pass = M single-sample runs fed the same rows of noise."""
    P, th = small_problem("lstm", batch=(2,), T=5)
    M = 4
    gen = torch.Generator().manual_seed(2)
    table = (2 * torch.randint(0, 2, (P.T, M, 2, *P.batch_shape, P.n), generator=gen) - 1).double()
    G = run_estimator(UORO(rank=2, noise=Tabulated(table)), P, th, torch.Generator(), samples=M)
    for m in range(M):
        Gm = run_estimator(UORO(rank=2, noise=Tabulated(table[:, m : m + 1])), P, th, torch.Generator())
        assert rel(G[:, m], Gm[:, 0]) <= 1e-13


def test_rademacher_draws_are_signs_and_reproducible() -> None:
    P, th = small_problem()
    est = UORO(rank=3)
    s1 = est.init(P, th, torch.Generator())
    a, _ = est.step(P, th, s1, 1, torch.Generator().manual_seed(7))
    b, _ = est.step(P, th, s1, 1, torch.Generator().manual_seed(7))
    assert torch.equal(a.nu, b.nu) and set(a.nu.unique().tolist()) == {-1.0, 1.0}


def test_uoro_t_at_full_length_is_bptt() -> None:
    """UORO-T with T ≥ sequence length never reduces: every estimate is exact (§3, 'last T steps exact')."""
    P, th = small_problem("gru", T=6)
    G = run_estimator(UORO(block=6), P, th, torch.Generator(), samples=3)
    assert rel(G[:, 2], per_step_gradients(P, th)) <= 1e-13


def test_enumeration_uses_the_estimators_own_noise_law() -> None:
    P, th = small_problem(n=2, d=1, T=3)
    zero_one = get_mutant("uoro.noise-zero-one").part()
    e_g, e_i = enum_errors(zero_one, P, th)
    assert e_g > 1e-3 and e_i > 1e-3
    with pytest.raises(InvalidArgument, match="continuous"):
        enumerate_expectation(get_mutant("uoro.noise-gaussian-variance").part(), P, th)


def test_sign_patterns() -> None:
    pats = sign_patterns((-1.0, 1.0), 3)
    assert pats.shape == (8, 3) and len({tuple(r) for r in pats.tolist()}) == 8
    assert torch.equal(pats.mean(0), torch.zeros(3))
