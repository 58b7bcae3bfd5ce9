r"""CUDA-graph replay of a deterministic estimator's step: batch-1 online runs without per-kernel dispatch.

An online RTRL step at n = 64 runs about thirty small kernels around one O(n²p) product; on a GPU
their launch cost dominates the step (issue 15: 4.4 ms per step, 0.027 ms of work). :class:`GraphedStep`
captures one fast-path step (:mod:`verify.estimators.kernels`: no autograd, no host
synchronisation) as a CUDA graph on static buffers and replays it: the step's inputs (θ, the state,
:math:`x_t, \hat y_t`) are copied into the buffers, the graph is replayed, the outputs are cloned
out (so the step stays pure: nothing the caller holds is overwritten).

Where it cannot run -- no CUDA, a CPU problem, an estimator that is not deterministic RTRL on a
recognized cell, or a capture that fails -- it is silently off: ``step`` is then the estimator's
own ``step`` (``enabled`` says which). Equality with the eager step is tested on CUDA
(``tests/estimators/test_graphs.py``; skipped with the reason elsewhere).
"""

from __future__ import annotations

from typing import Any

import torch

from verify.estimators import kernels
from verify.estimators.online import expand_samples
from verify.estimators.rtrl import RTRL, RTRLState
from verify.model.problem import Problem

__all__ = ["GraphedStep"]


class GraphedStep:
    """``step(problem, θ, state, t, rng)`` of ``estimator`` replayed from a CUDA graph where possible."""

    def __init__(self, estimator: Any, problem: Problem, theta: torch.Tensor, *, samples: int = 1) -> None:
        self.estimator, self.problem, self.samples = estimator, problem, samples
        self.enabled = False
        self.reason = ""
        if not torch.cuda.is_available() or problem.device.type != "cuda":
            self.reason = "no CUDA device (or a CPU problem): eager steps"
            return
        if type(estimator) is not RTRL or not kernels.use_fast(estimator.path, problem, estimator.name):
            self.reason = "graphs are captured for RTRL on its fast path only: eager steps"
            return
        try:
            self._capture(theta)
            self.enabled = True
        except Exception as exc:  # capture is an optimisation: any failure means eager steps
            self.reason = f"capture failed ({type(exc).__name__}: {exc}): eager steps"

    def _capture(self, theta: torch.Tensor) -> None:
        P = self.problem
        B, n, p = P.batch_shape, P.n, P.p
        self.x = P.inputs[0].clone()
        self.y = P.targets[0].clone()
        self.one = Problem(P.cell, P.readout, P.loss, self.x.unsqueeze(0), self.y.unsqueeze(0), P.s0.clone())
        self.theta = theta.detach().clone()
        self.s = torch.zeros(*B, n, dtype=P.dtype, device=P.device)
        self.J = torch.zeros(*B, n, p, dtype=P.dtype, device=P.device)
        state = RTRLState(expand_samples(self.s, self.samples), expand_samples(self.J, self.samples))
        rng = torch.Generator(device=P.device)
        stream = torch.cuda.Stream(device=P.device)  # type: ignore[no-untyped-call]
        stream.wait_stream(torch.cuda.current_stream(P.device))
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm-up outside the graph (allocator, kernels' lazy initialisation)
                self.estimator.step(self.one, self.theta, state, 1, rng)
        torch.cuda.current_stream(P.device).wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out_state, self.out_g = self.estimator.step(self.one, self.theta, state, 1, rng)

    def step(
        self, problem: Problem, theta: torch.Tensor, state: Any, t: int, rng: torch.Generator
    ) -> tuple[Any, torch.Tensor]:
        if not self.enabled or problem is not self.problem:
            return self.estimator.step(problem, theta, state, t, rng)  # type: ignore[no-any-return]
        self.theta.copy_(theta)
        self.x.copy_(problem.inputs[t - 1])
        self.y.copy_(problem.targets[t - 1])
        self.s.copy_(state.s[0])
        self.J.copy_(state.influence[0])
        self.graph.replay()
        M = state.s.shape[0]
        new = RTRLState(
            expand_samples(self.out_state.s[0].clone(), M), expand_samples(self.out_state.influence[0].clone(), M)
        )
        return new, expand_samples(self.out_g[0].clone(), M)
