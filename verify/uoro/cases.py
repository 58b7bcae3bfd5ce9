"""The fixture problems of the UORO checks (Tallec & Ollivier 2017, Prop. 1 and Algorithm 1; Cooijmans & Martens
2019) and their float64 references, cached.

A :class:`Case` is one random problem of :func:`verify.model.builders.random_problem` (d = 2 inputs, k = 2
outputs) drawn from the stream (seed, salt) -- the stream ``RunConfig(seed=seed).generator(salt)`` returns. The
problems, their references (:func:`verify.estimators.sampling.reference_truths`) and Algorithm 1's Jacobians
(:func:`verify.oracles.algorithm1.step_jacobians`) are cached: the kill table runs the same fixtures once per
mutant.
"""

from __future__ import annotations

import functools

import torch

from verify._validate import SEED_MULTIPLIER
from verify.estimators.sampling import reference_truths
from verify.model.builders import LabeledProblem, random_problem
from verify.oracles.algorithm1 import StepJacobians, step_jacobians

__all__ = ["Case", "jacobians", "problem_case", "stream", "truths"]


#: one UORO fixture problem: its label (kind, n, T, input scale), the problem and θ
Case = LabeledProblem


def stream(seed: int, salt: int) -> torch.Generator:
    """The generator of (seed, salt): the one ``RunConfig(seed=seed).generator(salt)`` returns."""
    return torch.Generator().manual_seed(seed * SEED_MULTIPLIER + salt)


def problem_case(kind: str, n: int, T: int, seed: int, salt: int, input_scale: float = 1.0) -> Case:
    """The fixture problem of ``kind`` (state size n, T steps) drawn from stream (seed, salt), inputs × ``input_scale``.

    Cached: the same arguments give the same :class:`Case` (and so the same cached references).
    """
    return _cached_case(kind, n, T, seed, salt, input_scale)


@functools.lru_cache(maxsize=64)
def _cached_case(kind: str, n: int, T: int, seed: int, salt: int, input_scale: float) -> Case:
    P, th = random_problem(kind, n=n, d=2, T=T, k=2, generator=stream(seed, salt))
    if input_scale != 1.0:
        P = P.with_sequence(P.inputs * input_scale, P.targets)
    return Case(f"{kind}(n={n}, T={T}{'' if input_scale == 1.0 else f', x*{input_scale:g}'})", P, th)


@functools.lru_cache(maxsize=64)
def truths(case: Case, steps: tuple[int, ...], quantities: tuple[str, ...]) -> list[torch.Tensor]:
    """The float64 references of ``quantities`` at ``steps`` (:func:`~verify.estimators.sampling.reference_truths`)."""
    return reference_truths(case.problem, case.theta, steps, quantities)


@functools.lru_cache(maxsize=64)
def jacobians(case: Case) -> StepJacobians:
    """Algorithm 1's dense per-step Jacobians of ``case`` (:func:`~verify.oracles.algorithm1.step_jacobians`)."""
    return step_jacobians(case.problem, case.theta)
