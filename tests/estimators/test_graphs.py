"""CUDA-graph replay of RTRL's step (:mod:`verify.estimators.graphs`): silently off without CUDA, equal with it."""

from __future__ import annotations

import pytest
import torch

from verify.estimators import RTRL, TBPTT
from verify.estimators.graphs import GraphedStep
from verify.testing.strategies import random_problem


def _problem(device: str = "cpu"):
    P, th = random_problem("gru", n=4, d=2, T=6, k=2, generator=torch.Generator().manual_seed(0))
    return P.to(device=device), th.to(device)


def test_off_without_cuda_and_equal_to_the_step() -> None:
    P, th = _problem()
    gs = GraphedStep(RTRL(), P, th)
    assert not gs.enabled and gs.reason
    est, g = RTRL(), torch.Generator()
    a = b = est.init(P, th, g)
    for t in range(1, P.T + 1):
        a, ea = gs.step(P, th, a, t, g)
        b, eb = est.step(P, th, b, t, g)
        assert torch.equal(ea, eb) and torch.equal(a.influence, b.influence)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_graph_replay_equals_eager_on_cuda() -> None:
    P, th = _problem("cuda")
    assert not GraphedStep(TBPTT(2), P, th).enabled  # RTRL only
    gs = GraphedStep(RTRL(), P, th)
    assert gs.enabled, gs.reason
    est, g = RTRL(), torch.Generator(device="cuda")
    a = b = est.init(P, th, g)
    for t in range(1, P.T + 1):
        th_t = th + 0.01 * t  # the online mode changes θ every step
        a, ea = gs.step(P, th_t, a, t, g)
        b, eb = est.step(P, th_t, b, t, g)
        assert torch.allclose(ea, eb, rtol=1e-12, atol=1e-14)
        assert torch.allclose(a.influence, b.influence, rtol=1e-12, atol=1e-14)
