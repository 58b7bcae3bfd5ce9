r"""The exactness experiments of eq. (7) and Lemma 3: per-sample gradients and their expectation against autograd.

Paper: ``fpp-explicit-state-variables.md`` §3 (eq. (6), eq. (7)), §4.1 and App. B.1 (Lemma 3).
A suite of problems -- every cell x loss x T in {1, 2, 5}, on infeasible states
(:math:`s_i \ne \hat s_i`, so the λ terms matter) -- on which eq. (7) is compared with
reverse-mode autograd of :math:`L_i` for every sample i, and the exact average of eq. (7)
over :math:`k \sim \mathrm{uniform}\{T..n\}` with autograd of :math:`\nabla L`; the
sampler's draws are tallied against that law. Each function returns plain rows; the
tolerance and the verdict live in :mod:`verify.checks.fpp`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.func import jacrev

from verify.errors import NotApplicable
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    SampleGradFn,
    autograd_gradient,
    flatten_variables,
    index_distribution,
    minibatch_gradient,
    per_sample_gradients,
    relative_error,
    sample_losses,
)
from verify.model.builders import CELL_KINDS, LOSS_KINDS, random_problem
from verify.stats import dist

__all__ = [
    "T_VALUES",
    "SamplerFn",
    "SuiteSetup",
    "eq7_comparisons",
    "exactness_suite",
    "lemma3_comparisons",
    "per_sample_autograd",
]

T_VALUES = (1, 2, 5)
#: ``sampler(n, T, size, generator) -> indices i ~ uniform{T..n}`` (§4.1)
SamplerFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class SuiteSetup:
    """Sizes of the exactness suite: ``n`` hidden units, a buffer of ``buffer`` steps, penalty ``lam``."""

    n: int = 3
    buffer: int = 8
    lam: float = 0.7


def exactness_suite(setup: SuiteSetup, generator: torch.Generator) -> list[tuple[str, FPPObjective, FPPVariables]]:
    """Every cell x loss x T in {1, 2, 5}, on infeasible states (s_i != s_hat_i) so the lambda terms matter."""
    out = []
    for kind in CELL_KINDS:
        for loss in LOSS_KINDS:
            for T in T_VALUES:
                P, theta = random_problem(kind, n=setup.n, d=2, T=setup.buffer, k=2, loss=loss, generator=generator)
                obj = FPPObjective(P, T, setup.lam)
                v = obj.rollout_variables(theta)
                noise = 0.3 * torch.randn(v.states.shape, generator=generator, dtype=torch.float64)
                out.append((f"{kind}/{loss}/T={T}", obj, FPPVariables(v.theta, v.states + noise)))
    return out


def per_sample_autograd(obj: FPPObjective, v: FPPVariables) -> torch.Tensor:
    """Dense ∇L_i by reverse-mode autograd of the vector (L_T..L_n): shape (n−T+1, z)."""
    Jt, JS = jacrev(lambda th, S: sample_losses(obj, FPPVariables(th, S)), argnums=(0, 1))(v.theta, v.states)
    return torch.cat([Jt, JS.reshape(JS.shape[0], -1)], dim=-1)


def eq7_comparisons(setup: SuiteSetup, generator: torch.Generator, sample_grad: SampleGradFn) -> list[dict[str, Any]]:
    """Per problem of the suite: the worst relative error of eq. (7) (``sample_grad``) against autograd of L_i; a
    problem ``sample_grad`` declares it does not run (:class:`~verify.errors.NotApplicable`) is a row with
    ``left_out`` (the reason) instead."""
    rows: list[dict[str, Any]] = []
    for label, obj, v in exactness_suite(setup, generator):
        try:
            G7 = per_sample_gradients(obj, v, sample_grad)
        except NotApplicable as exc:  # a problem the implementation under test does not run: left out, with why
            rows.append({"problem": label, "left_out": exc.reason})
            continue
        GA = per_sample_autograd(obj, v)
        errs = torch.linalg.vector_norm(G7 - GA, dim=-1) / torch.linalg.vector_norm(GA, dim=-1).clamp_min(1e-300)
        rows.append({"problem": label, "samples": int(errs.numel()), "max_rel_error": float(errs.max())})
    return rows


def lemma3_comparisons(
    setup: SuiteSetup,
    suite_generator: torch.Generator,
    generator: torch.Generator,
    sample_grad: SampleGradFn,
    sampler: SamplerFn,
) -> list[dict[str, Any]]:
    """Per problem: E_k[∇L_k] (exact, over k ~ uniform{T..n}) of ``sample_grad`` vs autograd ∇L (Lemma 3), and
    ``sampler``'s draws (from ``generator``) vs that law: support exactly {T..n}, chi-square p for uniformity.

    The suite is built from ``suite_generator`` first; the draws follow from ``generator``.
    """
    rows: list[dict[str, Any]] = []
    for label, obj, v in exactness_suite(setup, suite_generator):
        support, probs = index_distribution(obj.n, obj.T)  # the law of §4.1 / Lemma 3
        try:
            avg = flatten_variables(minibatch_gradient(obj, v, support, probs.to(torch.float64), sample_grad))
        except NotApplicable as exc:  # a problem the implementation under test does not run: left out, with why
            rows.append({"problem": label, "left_out": exc.reason})
            continue
        ref = flatten_variables(autograd_gradient(obj, v))
        err = relative_error(avg, ref)
        draws = sampler(obj.n, obj.T, 200 * obj.num_samples, generator)
        seen = sorted(set(draws.tolist()))
        want = list(range(obj.T, obj.n + 1))
        counts = np.bincount(draws.numpy() - obj.T, minlength=obj.num_samples)[: obj.num_samples]
        chi_p = dist.chisquare_p(counts) if counts.sum() else None
        rows.append(
            {
                "problem": label,
                "rel_error": err,
                "support_ok": seen == want,
                "chi2_p": chi_p if chi_p is not None else 0.0,
            }
        )
    return rows
