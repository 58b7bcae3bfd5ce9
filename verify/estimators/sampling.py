r"""Samplers over an online estimator: m independent runs → the quantities an unbiasedness test compares.

:func:`estimator_sampler` turns any estimator under the contract of
:mod:`verify.estimators.base` into a sampler ``(m, rng) -> [tensors]`` for
:mod:`verify.stats.unbiased`; :func:`reference_truths` gives the float64 BPTT
references (:mod:`verify.oracles.bptt`) of the same quantities -- the expectations
Tallec & Ollivier's Prop. 1 (arXiv:1702.05043) says an unbiased estimator has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator
from verify.model.problem import Problem
from verify.oracles.bptt import influence_matrices, per_step_gradients

__all__ = [
    "QUANTITIES",
    "InfluenceFn",
    "batch_size",
    "check_steps",
    "default_steps",
    "estimator_sampler",
    "reference_truths",
]


#: what :func:`assert_unbiased` can test
QUANTITIES = ("gradient", "total", "influence")


#: ``influence(problem, state) -> (M, *B, n, p)``: the estimator's estimate of ∂s_t/∂θ held in its state
InfluenceFn = Callable[[Problem, Any], torch.Tensor]


def default_steps(T: int) -> tuple[int, ...]:
    """The time steps tested by default: {2, ⌈T/2⌉, T} ∩ [1, T]."""
    return tuple(sorted({min(2, T), max(1, (T + 1) // 2), T}))


def check_steps(steps: Sequence[int] | None, T: int) -> tuple[int, ...]:
    if steps is None:
        return default_steps(T)
    out = tuple(steps)
    if not out or any(isinstance(t, bool) or not isinstance(t, int) or not (1 <= t <= T) for t in out):
        raise InvalidArgument("steps", out, f"need a non-empty sequence of time steps in [1, T={T}]")
    return tuple(sorted(set(out)))


def estimator_sampler(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    *,
    steps: Sequence[int],
    quantities: Sequence[str] = ("gradient", "total"),
    influence: InfluenceFn | None = None,
) -> tuple[Callable[[int, torch.Generator], list[torch.Tensor]], list[str]]:
    """A sampler for :mod:`verify.stats.unbiased`: m independent runs of ``estimator`` → the chosen quantities.

    Returns ``(sampler, names)``. ``sampler(m, rng)`` runs ``init``/``step`` with
    ``samples=m`` over t = 1..T (or up to max(steps) without ``"total"``) and returns
    one (m, ·) tensor per name, in the order of ``names``: the gradient estimates
    at ``steps``, the total :math:`\\sum_t\\tilde g_t`, the influence estimates at
    ``steps`` (flattened). Estimates of the wrong shape or with NaN/inf raise
    :class:`InvalidArgument`.
    """
    influence = _influence_of(estimator, quantities, influence)
    T, p, n = problem.T, problem.p, problem.n
    ts = tuple(steps)
    last = T if "total" in quantities else max(ts)
    names = _names(ts, quantities)
    label = getattr(estimator, "name", type(estimator).__name__)

    def sampler(m: int, rng: torch.Generator) -> list[torch.Tensor]:
        state = estimator.init(problem, theta, rng, samples=m)
        grads: dict[int, torch.Tensor] = {}
        infl: dict[int, torch.Tensor] = {}
        total: torch.Tensor | None = None
        for t in range(1, last + 1):
            state, g = estimator.step(problem, theta, state, t, rng)
            _check_estimate(label, g, m, p, t)
            total = g if total is None else total + g
            if t in ts:
                grads[t] = g
                if influence is not None and "influence" in quantities:
                    est = influence(problem, state)
                    if est.shape[0] != m or est[0].numel() != n * p * max(1, batch_size(problem)):
                        raise InvalidArgument(
                            f"{label} influence estimate", f"shape {tuple(est.shape)}", f"expected ({m}, *B, {n}, {p})"
                        )
                    infl[t] = est.reshape(m, -1)
        out: list[torch.Tensor] = []
        if "gradient" in quantities:
            out += [grads[t] for t in ts]
        if "total" in quantities:
            assert total is not None
            out.append(total)
        if "influence" in quantities:
            out += [infl[t] for t in ts]
        return out

    return sampler, names


def _influence_of(
    estimator: OnlineEstimator, quantities: Sequence[str], influence: InfluenceFn | None
) -> InfluenceFn | None:
    """The quantities checked, and the influence estimate (``influence=`` or the estimator's own) where asked for."""
    for q in quantities:
        if q not in QUANTITIES:
            raise InvalidArgument("quantity", q, f"must be one of {QUANTITIES}")
    if "influence" in quantities and influence is None:
        influence = getattr(estimator, "influence_estimate", None)
        if influence is None:
            raise InvalidArgument(
                "influence",
                None,
                f"{getattr(estimator, 'name', 'estimator')} has no influence_estimate(problem, state); pass "
                "influence=lambda problem, state: <(M, n, p) estimate of ds_t/dtheta>",
            )
    return influence


def _names(ts: tuple[int, ...], quantities: Sequence[str]) -> list[str]:
    """The names of the sampler's outputs, in order: gradients at ``ts``, the total, influences at ``ts``."""
    names: list[str] = []
    if "gradient" in quantities:
        names += [f"dl_{t}/dtheta" for t in ts]
    if "total" in quantities:
        names.append("dL/dtheta")
    if "influence" in quantities:
        names += [f"ds_{t}/dtheta" for t in ts]
    return names


def _check_estimate(label: str, g: Any, m: int, p: int, t: int) -> None:
    """A step's estimate must be a finite (m, p) tensor."""
    if not isinstance(g, torch.Tensor) or tuple(g.shape) != (m, p):
        shape = tuple(g.shape) if isinstance(g, torch.Tensor) else type(g).__name__
        raise InvalidArgument(f"{label}.step(...) estimate", f"shape {shape} at t={t}", f"expected ({m}, {p})")
    if not bool(torch.isfinite(g).all()):
        raise InvalidArgument(f"{label}.step(...) estimate", f"non-finite values at t={t}", "must be finite")


def batch_size(problem: Problem) -> int:
    k = 1
    for b in problem.batch_shape:
        k *= b
    return k


def reference_truths(
    problem: Problem, theta: torch.Tensor, steps: Sequence[int], quantities: Sequence[str]
) -> list[torch.Tensor]:
    P64 = problem.to(dtype=torch.float64, device="cpu")
    th64 = theta.detach().to(dtype=torch.float64, device="cpu")
    G = per_step_gradients(P64, th64)
    out: list[torch.Tensor] = []
    if "gradient" in quantities:
        out += [G[t - 1] for t in steps]
    if "total" in quantities:
        out.append(G.sum(0))
    if "influence" in quantities:
        infl = influence_matrices(P64, th64)
        out += [infl[t - 1].reshape(-1) for t in steps]
    return out
