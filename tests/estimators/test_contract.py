"""The shared contract suite: every estimator of the toolkit follows :mod:`verify.estimators.base`.

Shapes (M, p), dtype preserved (float32 and float64), purity (same inputs and
generator state give identical outputs; inputs not mutated), state size bounded
in t, leading sample dimension on every state tensor, batched problems (*B),
device-agnostic (CPU here; the CUDA variant is skipped with a reason without a GPU).
"""

from __future__ import annotations

import pytest
import torch

from tests.estimators.helpers import ESTIMATORS, small_problem
from verify.estimators import OnlineEstimator, check_contract, run_estimator
from verify.estimators.online import ContractViolation

CASES = [
    (est, kind, batch, dtype)
    for est, cells in ESTIMATORS
    for kind in ("elman-tanh", "lstm", "gru")
    for batch in ((), (2,))
    for dtype in (torch.float64, torch.float32)
    if cells is None or kind in cells
    if not (kind == "lstm" and batch and dtype is torch.float32)  # keep the grid small
]


def _id(case: tuple[object, ...]) -> str:
    est, kind, batch, dtype = case
    return f"{est.name}-{kind}-B{list(batch)}-{str(dtype).replace('torch.', '')}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_contract(case: tuple[OnlineEstimator, str, tuple[int, ...], torch.dtype]) -> None:
    est, kind, batch, dtype = case
    P, th = small_problem(kind, batch=batch, T=4)
    P, th = P.to(dtype), th.to(dtype)
    assert isinstance(est, OnlineEstimator)
    check_contract(est, P, th, samples=3)
    G = run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=2)
    assert G.shape == (P.T, 2, P.p) and G.dtype == dtype


@pytest.mark.parametrize("est", [e for e, _ in ESTIMATORS], ids=lambda e: e.name)
def test_state_size_constant_over_long_runs(est: OnlineEstimator) -> None:
    P, th = small_problem("elman-tanh", T=30)
    rng = torch.Generator().manual_seed(0)
    state = est.init(P, th, rng, samples=2)
    sizes = set()
    for t in range(1, P.T + 1):
        state, _ = est.step(P, th, state, t, rng)
        sizes.add(sum(x.numel() for x in state))
    assert len(sizes) == 1


def test_check_contract_catches_a_growing_state() -> None:
    class Growing:
        name = "growing"

        def init(self, problem, theta, rng, *, samples=1):
            from typing import NamedTuple

            class S(NamedTuple):
                hist: torch.Tensor

            self.S = S
            return S(torch.zeros(samples, 1, dtype=problem.dtype))

        def step(self, problem, theta, state, t, rng):
            h = torch.cat([state.hist, torch.zeros(state.hist.shape[0], 1, dtype=problem.dtype)], 1)
            return self.S(h), torch.zeros(h.shape[0], problem.p, dtype=problem.dtype)

    P, th = small_problem()
    with pytest.raises(ContractViolation, match="grows"):
        check_contract(Growing(), P, th)


def test_check_contract_catches_impurity() -> None:
    from verify.estimators import UORO

    class Impure(UORO):
        def step(self, problem, theta, state, t, rng):
            state, g = super().step(problem, theta, state, t, rng)
            return state, g + torch.rand(g.shape, dtype=g.dtype)  # global RNG: not reproducible

    P, th = small_problem()
    with pytest.raises(ContractViolation, match="pure"):
        check_contract(Impure(), P, th)


def test_check_contract_catches_wrong_shape_and_dtype() -> None:
    from verify.estimators import RTRL

    class Wrong(RTRL):
        def step(self, problem, theta, state, t, rng):
            state, g = super().step(problem, theta, state, t, rng)
            return state, g.float()

    P, th = small_problem()
    with pytest.raises(ContractViolation, match=r"dtype|float32"):
        check_contract(Wrong(), P, th)

    class NoSamples(RTRL):
        def step(self, problem, theta, state, t, rng):
            state, g = super().step(problem, theta, state, t, rng)
            return state, g[0]

    with pytest.raises(ContractViolation, match="shape"):
        check_contract(NoSamples(), P, th)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("est", [e for e, _ in ESTIMATORS], ids=lambda e: e.name)
def test_contract_on_cuda(est: OnlineEstimator) -> None:  # pragma: no cover - needs a GPU
    P, th = small_problem("elman-tanh", batch=(2,), T=4)
    P, th = P.to(device="cuda"), th.to("cuda")
    check_contract(est, P, th, samples=3)
    G_cpu = run_estimator(est, *small_problem("elman-tanh", batch=(2,), T=4), torch.Generator().manual_seed(1))
    G_gpu = run_estimator(est, P, th, torch.Generator().manual_seed(1))
    assert torch.allclose(G_gpu.cpu(), G_cpu, rtol=1e-10, atol=1e-12)  # same draws (CPU generator), float64


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize(
    "est", [e for e, _ in ESTIMATORS if type(e).__name__ in ("RFLO", "EProp")], ids=lambda e: e.name
)
def test_contract_on_leaky_rate_units(est: OnlineEstimator, dtype: torch.dtype) -> None:
    """The local rules' own cell (Murray 2019's leaky rate units) under the same contract (RFLO and e-prop are
    defined there; the other estimators refuse it or do not list it)."""
    from verify.model.builders import leaky_problem

    P, th = leaky_problem(n=3, d=2, T=4, generator=torch.Generator().manual_seed(0))
    P, th = P.to(dtype), th.to(dtype)
    check_contract(est, P, th, samples=3)
    G = run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=2)
    assert G.shape == (P.T, 2, P.p) and G.dtype == dtype
