r"""The noise protocol: how a stochastic estimator receives its noise, so the toolkit can hand it given draws.

Optional and small. An estimator that follows it can be run on **tabulated** noise:
the exact expectation over every sign pattern (:func:`~verify.estimators.enumerate.enumerate_expectation`,
claim ``uoro.exact-expectation``), the formula conformance with Algorithm 1 under a
fixed ν (claim ``uoro.algorithm-1-conformance``) and the device-parity runs with
identical draws. An estimator without it gets the statistical claims only; the
report says which claims could not run and why (SKIPPED, "no noise hook").

The hook (:class:`NoiseHook`) is three methods and one attribute:

``noise``
    a :class:`NoiseSource`: where ν comes from, e.g. ``Rademacher()`` (the default law
    of Algorithm 1, independent random signs). ``noise.support`` is the tuple of values
    of a discrete, equiprobable, independent-coordinate law (``(-1.0, 1.0)``), or
    ``None`` for a continuous one (which cannot be enumerated).
``noise_shape(problem) -> tuple[int, ...]``
    the shape of **one draw for one sample**: ``(n,)`` for a rank-1 UORO on an
    unbatched problem, ``(r, *B, n)`` for the toolkit's UORO (r pairs, batch shape B),
    ``(r,)`` for preactivation UORO (one sign per pair).
``noise_draws(steps) -> int``
    how many draws the run makes in steps 1..``steps`` (UORO: ``steps``; UORO-T with
    blocks of T: ``steps // T``).
``with_noise(noise) -> estimator``
    the same estimator, drawing from ``noise`` (a copy: estimators are values).

Inside ``step`` the estimator draws **through** its source, with the 0-based number
of the draw in the run and the previous draw::

    nu = self.noise.draw(rng, (M, *self.noise_shape(problem)), problem.dtype, problem.device,
                         index, previous)   # index = t - 1 for one draw per step; previous: zeros before the first

and uses no other randomness (no ``torch.randn`` of its own, no random start, no numpy
global RNG): :func:`enumerate_expectation` runs the estimator twice with different
generators and refuses to call a result exact when they disagree.

A table of draws is a tensor of shape ``(draws, M, *noise_shape)``: ``table[i]`` is
draw number ``i`` (0-based) for all M samples; :class:`Tabulated` serves it, and
:func:`tabulated` builds the estimator that reads it.

**Algorithm 1's factors** (optional, for the formula conformance): an estimator may
expose ``uoro_factors(problem, state) -> (s_tilde, theta_tilde)`` with shapes
``(M, r, *B, n)`` and ``(M, r, p)`` (or state fields named ``s_tilde`` and
``theta_tilde`` of shapes ``(M, [r,] n)``, ``(M, [r,] p)``). Without them only g̃ is
compared (normalizer bugs still show from the third step).

**Influence estimate** (optional): ``influence_estimate(problem, state)`` returns the
estimate of :math:`\partial s_t/\partial\theta` held in the state after step t,
shape ``(M, *B, n, p)``, columns in θ's flat layout (:attr:`Problem.layout`); the
readout's columns are zero (s_t does not depend on them). Without it the claims
test gradients only and say so.
"""

from __future__ import annotations

import math
import random
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.uoro import Gaussian, IIDNoise, NoiseSource, Rademacher, Tabulated, WrappedNoise
from verify.model.problem import Problem

__all__ = [
    "Gaussian",
    "IIDNoise",
    "NoiseHook",
    "NoiseSource",
    "Rademacher",
    "Tabulated",
    "WrappedNoise",
    "check_leak",
    "factors",
    "has_noise_hook",
    "require_noise_hook",
    "tabulated",
]


@runtime_checkable
class NoiseHook(Protocol):
    """An estimator that receives its noise through ``noise`` (see the module docstring)."""

    @property
    def noise(self) -> NoiseSource: ...

    def noise_shape(self, problem: Problem) -> tuple[int, ...]: ...

    def noise_draws(self, steps: int) -> int: ...

    def with_noise(self, noise: NoiseSource) -> Any: ...


def has_noise_hook(estimator: object) -> bool:
    """Whether ``estimator`` follows the noise protocol (the three methods and a ``noise`` source)."""
    return all(
        callable(getattr(estimator, m, None)) for m in ("noise_shape", "noise_draws", "with_noise")
    ) and isinstance(getattr(estimator, "noise", None), NoiseSource)


def require_noise_hook(estimator: object, claim: str) -> NoiseHook:
    """``estimator`` as a :class:`NoiseHook`, or :class:`~verify.errors.NotApplicable` naming what is missing.

    An estimator that declares ``random_start = True`` (random s̃₀, θ̃₀: a legitimate variant, unbiased where
    E[s̃₀ θ̃₀ᵀ] = 0 -- Tallec & Ollivier 2017, App. A) is NotApplicable too: given tabulated ν its results are not
    the ones Algorithm 1 determines, so the claims that need tabulated noise cannot judge it.
    """
    name = getattr(estimator, "name", type(estimator).__name__)
    if getattr(estimator, "random_start", False):
        raise NotApplicable(
            claim,
            f"{name} declares random_start = True (a random s~_0, theta~_0: a variant, unbiased where "
            "E[s~_0 theta~_0^T] = 0): under tabulated noise its results are not determined by the table, so this "
            "claim cannot run; the statistical claims still do",
        )
    if has_noise_hook(estimator):
        return estimator  # type: ignore[return-value]
    missing = [m for m in ("noise_shape", "noise_draws", "with_noise") if not callable(getattr(estimator, m, None))]
    if not isinstance(getattr(estimator, "noise", None), NoiseSource):
        missing.insert(0, "noise (a NoiseSource)")
    raise NotApplicable(
        claim,
        f"{name} has no noise hook (missing: {', '.join(missing)}): tabulated draws cannot be handed to it, so this "
        "claim cannot run; the statistical claims still do (see verify.estimators.noise)",
    )


def tabulated(estimator: Any, table: torch.Tensor) -> Any:
    """``estimator`` drawing from ``table`` (``(draws, M, *noise_shape)``), keeping its law's support."""
    hook = require_noise_hook(estimator, "tabulated noise")
    return hook.with_noise(hook.noise.tabulated(table))


def factors(estimator: Any, problem: Problem, state: Any, samples: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Algorithm 1's (s̃, θ̃) held in ``state`` as ``(M, r, n)``, ``(M, r, p)`` (unbatched problems), or None.

    From ``estimator.uoro_factors(problem, state)`` or the state fields ``s_tilde`` /
    ``theta_tilde``; ``None`` when the estimator exposes neither.
    """
    fn = getattr(estimator, "uoro_factors", None)
    if callable(fn):
        s_t, th_t = fn(problem, state)
    else:
        s_t, th_t = getattr(state, "s_tilde", None), getattr(state, "theta_tilde", None)
        if not (isinstance(s_t, torch.Tensor) and isinstance(th_t, torch.Tensor)):
            return None
    n, p = problem.n * math.prod(problem.batch_shape), problem.p
    # θ̃ over the cell's (recurrent) parameters only -- Tallec & Ollivier 2017, Alg. 1's own form, where the
    # readout's gradient is exact and its columns of θ̃ are zero -- is padded with those zeros here
    p_cell = sum(e.size for e in problem.layout.entries if e.name.startswith("cell."))
    r = s_t.numel() // (samples * n) if n and samples else 0
    if s_t.numel() % (samples * n) == 0 and r and th_t.numel() == samples * r * p_cell and p_cell < p:
        th = th_t.reshape(samples, r, p_cell)
        return s_t.reshape(samples, r, n), torch.cat([th, th.new_zeros(samples, r, p - p_cell)], dim=-1)
    if s_t.numel() % (samples * n) or th_t.numel() != samples * r * p:
        raise InvalidArgument(
            "s_tilde/theta_tilde",
            f"shapes {tuple(s_t.shape)}, {tuple(th_t.shape)}",
            f"expected (M, [r,] n) and (M, [r,] p) with M={samples}, n={n}, p={p}: theta~ spans theta in its "
            f"layout ({', '.join(e.name for e in problem.layout.entries)}), or the cell's parameters only "
            f"(p_cell={p_cell}: the readout's zero columns are added)",
        )
    return s_t.reshape(samples, r, n), th_t.reshape(samples, r, p)


def check_leak(
    estimator: Any, problem: Problem, theta: torch.Tensor, table: torch.Tensor, steps: int, *, what: str
) -> None:
    """Refuse an estimator that draws randomness outside its noise hook (two generators must agree).

    Runs ``estimator`` on (up to 64 samples of) ``table`` twice, with the generator it is
    given and the global ones (torch, numpy, ``random``) seeded differently in the two
    runs (and restored afterwards); any difference in the estimates raises
    :class:`~verify.errors.InvalidArgument` naming the first step that differs: the
    result would depend on draws the table does not control, and calling it exact
    would be wrong.
    """
    m = min(int(table.shape[1]), 64)
    sub = table[:, :m]
    runs = []
    # the global RNGs are seeded on purpose: a leak through them must show as a difference
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    try:
        for seed in (0, 1):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(12345 + seed)
                np.random.seed(12345 + seed)  # noqa: NPY002
                random.seed(12345 + seed)
                est = tabulated(estimator, sub)
                rng = torch.Generator(device="cpu").manual_seed(seed)
                state = est.init(problem, theta, rng, samples=m)
                out = []
                for t in range(1, steps + 1):
                    state, g = est.step(problem, theta, state, t, rng)
                    out.append(torch.as_tensor(g).detach().clone())
            runs.append(out)
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)
    for t, (a, b) in enumerate(zip(*runs, strict=True), start=1):
        if not torch.equal(a, b):
            name = getattr(estimator, "name", type(estimator).__name__)
            diff = float((a - b).abs().max())
            raise InvalidArgument(
                f"{name} (noise hook)",
                f"two runs on the same tabulated noise with different generators differ at t={t} "
                f"(max |diff| {diff:.3g})",
                f"the estimator draws randomness outside its noise hook (a random start, its own torch.randn or numpy "
                f"draw, ...); {what} would not be exact. Draw every random quantity through self.noise.draw(...)",
            )
