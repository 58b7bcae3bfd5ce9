r"""Check an estimator against the guarantee it declares (:mod:`verify.estimators.guarantee`).

:func:`assert_guarantee` first checks the online-estimator contract
(:func:`verify.estimators.online.check_contract`: shapes, dtype, purity, state size),
then runs the check that matches the declaration:

* ``exact`` -- every per-step estimate (two samples) equals the float64 BPTT gradient
  :math:`\partial\ell_t/\partial\theta` (:func:`verify.oracles.bptt.per_step_gradients`) within the
  predicted round-off budget :math:`C\,u\,m\,T\,\kappa` of :mod:`verify.oracles.budget`;
* ``truncated`` (k) -- the same against truncated BPTT (:func:`verify.oracles.bptt.tbptt_gradient`, state
  :math:`s_{t-k}` held fixed; Miller & Hardt 2019, §3) or the truncated model's loss gradient
  :math:`\nabla\ell_t(h^k_t)` (eq. (3));
* ``unbiased`` -- the statistical test of :func:`verify.testing.assertions.assert_unbiased` (Tallec &
  Ollivier 2017, Prop. 1) with its stated false-fail rate ``alpha`` and certified bias bound ``delta``;
  or, for an estimator offering ``exact_mean(problem, theta) -> (T, p)`` (its exact expectation of every
  g̃_t, e.g. :class:`~verify.estimators.ok.OK` by enumerating its finitely many outcomes), that mean
  against the float64 BPTT gradient within the round-off budget (the statistical test where it refuses);
* ``biased`` -- the contract only (a biased estimator promises nothing about its mean).

Raises ``AssertionError`` naming the estimator, the step and the error when the guarantee does
not hold; returns a one-line description of what was checked.
"""

from __future__ import annotations

import torch

from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator, run_estimator
from verify.estimators.guarantee import Guarantee, guarantee_of
from verify.estimators.online import ContractViolation, check_contract
from verify.model.problem import Problem
from verify.oracles.bptt import per_step_gradients, tbptt_gradient, truncated_model_states
from verify.oracles.budget import conditioning
from verify.testing.assertions import assert_unbiased

__all__ = ["assert_guarantee", "reference_estimates"]


def _truncated_model_steps(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """(T, p): :math:`\\nabla_\\theta\\ell_t(h^k_t)` for t = 1..T (Miller & Hardt eq. (3))."""
    th = theta.detach().clone().requires_grad_(True)
    rows = []
    with torch.enable_grad():
        hk = truncated_model_states(problem, th, k)
        for t in range(problem.T):
            (g,) = torch.autograd.grad(problem.step_loss(th, hk[t], problem.targets[t]), th, retain_graph=True)
            rows.append(g.detach())
    return torch.stack(rows)


def reference_estimates(guarantee: Guarantee, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    """(T, p) float64: what every estimate of a deterministic guarantee (``exact``, ``truncated``) must equal."""
    P, th = problem.to(dtype=torch.float64, device="cpu"), theta.detach().to(torch.float64).cpu()
    if guarantee.kind == "exact":
        return per_step_gradients(P, th)
    if guarantee.kind == "truncated":
        assert guarantee.k is not None
        if guarantee.reference == "tbptt":
            return tbptt_gradient(P, th, guarantee.k, which="per_step")
        return _truncated_model_steps(P, th, guarantee.k)
    raise InvalidArgument("guarantee", guarantee.kind, "has no deterministic reference (exact or truncated only)")


def _assert_equal_to_reference(
    estimator: OnlineEstimator, guarantee: Guarantee, problem: Problem, theta: torch.Tensor, seed: int
) -> str:
    ref = reference_estimates(guarantee, problem, theta)
    est = run_estimator(estimator, problem, theta, torch.Generator().manual_seed(seed), samples=2)
    budget = conditioning(problem.to(dtype=torch.float64), theta.double(), with_influence=False).gradient_budget(
        problem.dtype
    )
    scale = float(torch.linalg.vector_norm(ref)) or 1.0
    for t in range(problem.T):
        for m in range(est.shape[1]):
            err = float(torch.linalg.vector_norm(est[t, m].double() - ref[t])) / scale
            if not err <= budget:
                name = getattr(estimator, "name", type(estimator).__name__)
                raise AssertionError(
                    f"{name} declares {guarantee.describe()} but its estimate at t={t + 1} (sample {m}) differs from "
                    f"the reference by {err:.3e} relative (budget {budget:.1e})"
                )
    return f"{guarantee.describe()}: every estimate within {budget:.1e} of the reference"


def _assert_mean_is_reference(
    estimator: OnlineEstimator, guarantee: Guarantee, mean: torch.Tensor, problem: Problem, theta: torch.Tensor
) -> str:
    """The exact mean (T, p) of an unbiased estimator against the BPTT gradients, within the round-off budget."""
    ref = per_step_gradients(problem.to(dtype=torch.float64, device="cpu"), theta.detach().to(torch.float64).cpu())
    budget = conditioning(problem.to(dtype=torch.float64), theta.double(), with_influence=False).gradient_budget(
        problem.dtype
    )
    scale = float(torch.linalg.vector_norm(ref)) or 1.0
    for t in range(problem.T):
        err = float(torch.linalg.vector_norm(mean[t].double().cpu() - ref[t])) / scale
        if not err <= budget:
            name = getattr(estimator, "name", type(estimator).__name__)
            raise AssertionError(
                f"{name} declares {guarantee.describe()} but its exact mean at t={t + 1} differs from the reference "
                f"by {err:.3e} relative (budget {budget:.1e})"
            )
    return f"{guarantee.describe()}: exact mean within {budget:.1e} of the reference"


def assert_guarantee(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    *,
    seed: int = 0,
    alpha: float = 1e-4,
    delta: float = 0.05,
    max_samples: int = 200_000,
) -> str:
    """Check the contract, then the guarantee ``estimator`` declares (see the module docstring)."""
    guarantee = guarantee_of(estimator)
    try:
        check_contract(estimator, problem, theta, samples=2, steps=min(3, problem.T))
    except ContractViolation as exc:
        name = getattr(estimator, "name", type(estimator).__name__)
        raise AssertionError(f"{name} violates the online-estimator contract: {exc}") from None
    if guarantee.kind in ("exact", "truncated"):
        return _assert_equal_to_reference(estimator, guarantee, problem, theta, seed)
    if guarantee.kind == "unbiased":
        exact_mean = getattr(estimator, "exact_mean", None)
        if callable(exact_mean):
            try:
                mean = exact_mean(problem, theta)
            except InvalidArgument:
                pass  # the enumeration is too large here: the statistical test decides
            else:
                return _assert_mean_is_reference(estimator, guarantee, mean, problem, theta)
        res = assert_unbiased(estimator, problem, theta, alpha=alpha, delta=delta, seed=seed, max_samples=max_samples)
        return f"{guarantee.describe()}: {res.verdict} (alpha {alpha:g}, bias < {delta:g}·||g|| certified)"
    return f"{guarantee.describe()}: contract only"
