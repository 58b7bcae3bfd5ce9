r"""What ``device.gpu-unbiasedness`` computes: UORO's unbiasedness at a size a CPU cannot afford.

Tallec & Ollivier (arXiv:1702.05043) Prop. 1, :math:`E\tilde g_t = \partial\ell_t/\partial\theta`
for UORO (their Algorithm 1) at frozen θ, on Elman-tanh at state size n (256 on a GPU), tested
on K random orthonormal directions by the sequential test of :mod:`verify.stats.unbiased`.

The estimator is an argument: the check passes the implementation under test (``uoro.uoro``), its
negative control a catalog mutant. The toolkit's :class:`~verify.estimators.UORO` draws vectorized
from the fused sampler of :mod:`verify.estimators.fused` on the device, in float32 with the rounding
accounted where sound (:mod:`verify.gpu.float32_sampling`); any other estimator (a user's, a
subclass) runs through its own ``init``/``step`` on the device, in chunks, in float64 unless float32
is asked for. An estimator that runs on the CPU but fails on the device (numpy code, tensors created
on the CPU) raises :class:`~verify.errors.NotApplicable` naming the device and the error: the claim
is SKIPPED with that reason, it does not crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from verify.errors import NotApplicable
from verify.estimators.base import OnlineEstimator
from verify.estimators.fused import default_chunk, fused_sampler, supports
from verify.estimators.uoro import UORO, event_floor_of
from verify.gpu.float32_sampling import rounded, run_with_precision
from verify.hardware import describe_device
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.oracles.bptt import bptt_gradient, per_step_gradients
from verify.stats.unbiased import TestOptions, UnbiasednessResult

__all__ = [
    "ScaleRun",
    "ScaleSetup",
    "fused_projection_sampler",
    "gpu_scale_unbiasedness",
    "scale_problem",
    "uoro_projection_sampler",
]

Sampler = Callable[[int, torch.Generator], list[torch.Tensor]]


@dataclass(frozen=True)
class ScaleSetup:
    """Where and how big: device, state size n, T, the draw budget, δ, K directions, chunk, α, β, precision.

    ``chunk`` None: 65536 draws per chunk on CUDA, 4096 elsewhere. ``precision`` as in
    :mod:`verify.gpu.float32_sampling` (``"auto"``, ``"float64"``, ``"float32"``).
    """

    device: torch.device
    n: int
    T: int
    max_samples: int
    delta: float
    directions: int
    chunk: int | None = None
    alpha: float = 1e-3
    beta: float = 1e-3
    precision: str = "auto"


@dataclass(frozen=True)
class ScaleRun:
    """A GPU-scale unbiasedness run: the result, its sizes and its speed."""

    result: UnbiasednessResult
    n: int
    p: int
    T: int
    directions: int
    chunk: int
    samples_per_second: float
    device: str
    sampling: dict[str, Any] = field(default_factory=dict)


def uoro_projection_sampler(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    Q: torch.Tensor,
    device: torch.device,
    chunk: int | None = None,
) -> Sampler:
    r"""Sampler for :func:`~verify.stats.unbiased.sequential_test`: m runs of any online estimator on ``device``.

    The estimator's own ``init``/``step`` (the estimator contract, :mod:`verify.estimators.base`), ``chunk``
    samples per vectorized pass (None: all m at once). Returns the projections :math:`Q^\top\tilde g_T` and
    :math:`Q^\top\sum_t\tilde g_t` (m, K) on the CPU in float64 (the statistics engine's scatter matrices are
    K×K, not p×p). The problem, θ and Q are moved to ``device`` (Q in the problem's dtype); the noise comes
    from a generator on ``device`` seeded from the engine's CPU generator, so runs are reproducible.
    """
    P, th = problem.to(device=device), theta.to(device)
    Qd = Q.to(device=device, dtype=P.dtype)

    def run(m: int, rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        state = estimator.init(P, th, rng, samples=m)
        total = torch.zeros(m, P.p, dtype=P.dtype, device=device)
        last = total
        for t in range(1, P.T + 1):
            state, g = estimator.step(P, th, state, t, rng)
            total = total + g
            last = g
        return last @ Qd, total @ Qd

    def sampler(m: int, gen: torch.Generator) -> list[torch.Tensor]:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        rng = torch.Generator(device=device).manual_seed(seed)
        size = chunk or m
        parts = [run(min(size, m - a), rng) for a in range(0, m, size)]
        return [torch.cat([x[i] for x in parts]).to(device="cpu", dtype=torch.float64) for i in (0, 1)]

    return sampler


def scale_problem(n: int, T: int, device: torch.device, gen: torch.Generator) -> tuple[Problem, torch.Tensor]:
    """The claim's problem: Elman-tanh, state size n, d = 8, k = 4, float64 on ``device``."""
    P, th = random_problem("elman-tanh", n=n, d=8, T=T, k=4, generator=gen)
    return P.to(torch.float64, device), th.to(device)


def fused_projection_sampler(
    estimator: UORO, problem: Problem, theta: torch.Tensor, Q: torch.Tensor, device: torch.device
) -> Sampler:
    r"""Like :func:`uoro_projection_sampler` with the fused sampler of :mod:`verify.estimators.fused`.

    :math:`Q^\top\tilde g_T` and :math:`Q^\top\sum_t\tilde g_t` (m, K) straight from θ̃'s factors (the
    (m, p) estimates are never formed), in the problem's dtype on ``device``; the noise comes from
    a generator on ``device`` seeded from the engine's CPU generator (the same seed gives the same
    ν in float32 and float64: the paired pilot of :mod:`verify.gpu.float32_sampling` relies on it).
    """
    P = problem.to(device=device)
    smp, _ = fused_sampler(
        estimator, P, theta.to(device), steps=(P.T,), quantities=("gradient", "total"), project=Q.to(device)
    )

    def sampler(m: int, gen: torch.Generator) -> list[torch.Tensor]:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        rng = torch.Generator(device=device).manual_seed(seed)
        return [x.to(device="cpu", dtype=torch.float64) for x in smp(m, rng)]

    return sampler


def _truths_and_samplers(
    P: Problem, th: torch.Tensor, q: torch.Tensor, prec: str, est: OnlineEstimator, device: torch.device, chunk: int
) -> tuple[list[torch.Tensor], Callable[[torch.dtype], Sampler]]:
    r"""The float64 truths :math:`Q^\top g` on the problem the draws see, and ``make(dtype)`` -> the sampler
    (fused for the toolkit's UORO, else the estimator's own steps, ``chunk`` samples per pass)."""
    P_cpu, th_cpu = P.to(torch.float64, "cpu"), th.cpu()
    P32, th32, P64, th64 = rounded(P_cpu, th_cpu)
    if prec == "float64":
        P64, th64 = P_cpu, th_cpu
    truths = [per_step_gradients(P64, th64)[-1] @ q, bptt_gradient(P64, th64) @ q]
    fused = supports(est, P_cpu) is None

    def make(dtype: torch.dtype) -> Sampler:
        Pd, thd = (P32, th32) if dtype == torch.float32 else (P64, th64)
        if fused:
            assert isinstance(est, UORO)  # supports() says yes to the toolkit's UORO only
            return fused_projection_sampler(est, Pd, thd, q.to(dtype), device)
        return uoro_projection_sampler(est, Pd, thd, q, device, chunk)

    return truths, make


def _probe(est: OnlineEstimator, P: Problem, th: torch.Tensor, q: torch.Tensor, device: torch.device) -> None:
    """Two draws on ``device``; where they fail there but run on the CPU, :class:`NotApplicable` naming both.

    An estimator that fails on the CPU as well is broken, not device-bound: its error propagates.
    """
    gen = torch.Generator().manual_seed(0)
    try:
        uoro_projection_sampler(est, P, th, q, device)(2, gen)
        return
    except Exception as exc:  # a user's code may raise anything on a device (numpy conversion, mixed devices ...)
        if device.type == "cpu":
            raise
        err = exc
    uoro_projection_sampler(est, P, th, q, torch.device("cpu"))(2, gen)
    name = getattr(est, "name", None) or type(est).__name__
    raise NotApplicable(
        "device.gpu-unbiasedness",
        f"the estimator under test ({name}) runs on the CPU but not on {device}: {type(err).__name__}: {err}",
    )


def gpu_scale_unbiasedness(estimator: OnlineEstimator, generator: torch.Generator, setup: ScaleSetup) -> ScaleRun:
    r"""``estimator``'s unbiasedness (UORO, Algorithm 1) on Elman-tanh at state size n, vectorized on ``setup.device``.

    Tallec & Ollivier Prop. 1: :math:`E\tilde g_t = \partial\ell_t/\partial\theta`.
    Tested on K random orthonormal directions Q (drawn before the data) of the
    last step's estimate and of the total :math:`\sum_t\tilde g_t`:
    :math:`E[Q^\top\tilde g] = Q^\top g`, sequentially (anytime-valid) up to
    ``max_samples`` draws. A PASS certifies :math:`\|Q^\top(E\tilde g - g)\| <
    \delta\|Q^\top g\|` at 1 − β for both quantities; FAIL has false-fail rate ≤ α.
    ``estimator`` is the implementation under test or, for the negative control, a mutant.

    The toolkit's UORO draws from the fused sampler (issue 15) with ``precision`` as in
    :mod:`verify.gpu.float32_sampling`: ``"auto"`` draws in float32 on CUDA with the rounding
    accounted (the truth is float64 on the float32-rounded problem; the allowance shrinks δ),
    float64 elsewhere or where the allowance would exceed a tenth of δ. Any other estimator runs its
    own steps (chunks sized like the fused sampler's for 16 p-vectors per sample), in float64 under
    ``"auto"``; first two probe draws: :class:`NotApplicable` when it runs on the CPU but not on the device.
    """
    device, n, T, max_samples = setup.device, setup.n, setup.T, setup.max_samples
    P, th = scale_problem(n, T, device, generator)
    p = P.p
    q = torch.linalg.qr(torch.randn(p, setup.directions, generator=generator, dtype=torch.float64))[0]
    fused = supports(estimator, P) is None
    if not fused:
        _probe(estimator, P, th, q, device)
    auto = "float32" if device.type == "cuda" and fused else "float64"
    prec = setup.precision if setup.precision != "auto" else auto
    chunk = setup.chunk
    if chunk is None:
        chunk = 65536 if device.type == "cuda" else 4096
    step_chunk = chunk if fused else min(chunk, default_chunk(16 * p * 8, chunk, device))
    truths, make = _truths_and_samplers(P, th, q, prec, estimator, device, step_chunk)
    # the estimator's declaration (UORO: Algorithm 1's, verify.estimators.uoro.event_floor_of)
    floor = event_floor_of(estimator)
    opts = TestOptions(alpha=setup.alpha, beta=setup.beta, delta=setup.delta, event_floor=floor)
    t0 = time.perf_counter()
    out = run_with_precision(
        make,
        truths,
        [f"Q^T dl_{T}/dtheta", "Q^T dL/dtheta"],
        options=opts,
        generator=generator,
        max_samples=max_samples,
        precision=prec,
        first=min(max_samples, max(2000, chunk)),
        growth=1.3,
        min_step=chunk,
        chunk=chunk,
    )
    wall = time.perf_counter() - t0
    res = out.result
    path = "fused" if fused else f"the estimator's own steps, {step_chunk} samples per pass"
    return ScaleRun(
        res,
        n,
        p,
        T,
        setup.directions,
        chunk,
        res.samples_used / max(wall, 1e-9),
        describe_device(device),
        {**out.to_data(), "path": path},
    )
