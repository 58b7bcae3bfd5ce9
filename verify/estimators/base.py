r"""The estimator contract: an online gradient algorithm as two pure functions over explicit state.

An online gradient algorithm is any object with

.. code-block:: python

    name: str
    def init(self, problem, theta, rng, *, samples=1) -> state
    def step(self, problem, theta, state, t, rng) -> (state, estimate)

* ``theta`` is the flat parameter vector (p,), shared by all samples (frozen
  parameters; for the online mode the caller passes the updated θ each step).
* ``state`` is an explicit value (a ``NamedTuple`` of tensors); nothing is hidden
  in the estimator object. Every tensor of the state carries a leading **sample
  dimension** M: M independent noise draws advance in one vectorized pass.
* ``step`` consumes :math:`x_t` and :math:`\hat y_t` (``t`` = 1..T, the time index of
  the problem) and returns the next state and an estimate of
  :math:`\partial \ell_t / \partial \theta` with shape (M, p).
* Every random draw takes the ``rng`` (a ``torch.Generator``); the same inputs and
  generator state give the same outputs (purity).

:func:`run_estimator` drives an estimator over a whole problem.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from verify._validate import require_positive_int
from verify.errors import ContractViolation, InvalidArgument
from verify.model.problem import Problem

__all__ = ["OnlineEstimator", "run_estimator"]


@runtime_checkable
class OnlineEstimator(Protocol):
    """Structural type of an online gradient algorithm (see module docstring)."""

    @property
    def name(self) -> str:
        """A short label for reports (a read-only property, so frozen dataclasses conform)."""
        ...

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> Any: ...

    def step(
        self, problem: Problem, theta: torch.Tensor, state: Any, t: int, rng: torch.Generator
    ) -> tuple[Any, torch.Tensor]: ...


def run_estimator(
    estimator: OnlineEstimator,
    problem: Problem,
    theta: torch.Tensor,
    rng: torch.Generator,
    *,
    samples: int = 1,
    steps: int | None = None,
) -> torch.Tensor:
    r"""Run ``estimator`` with frozen θ for ``steps`` (default T) steps.

    Returns the per-step estimates, shape (steps, M, p): row t-1 estimates
    :math:`\partial \ell_t/\partial\theta`. Raises :class:`InvalidArgument` when an
    estimate has the wrong shape or is not finite.
    """
    samples = require_positive_int("samples", samples)
    steps = problem.T if steps is None else require_positive_int("steps", steps)
    if steps > problem.T:
        raise InvalidArgument("steps", steps, f"the problem has T={problem.T} steps")
    theta = problem.check_theta(theta)
    state = estimator.init(problem, theta, rng, samples=samples)
    out = []
    for t in range(1, steps + 1):
        state, est = estimator.step(problem, theta, state, t, rng)
        if not isinstance(est, torch.Tensor) or tuple(est.shape) != (samples, problem.p):
            shape = tuple(est.shape) if isinstance(est, torch.Tensor) else type(est).__name__
            raise ContractViolation(
                f"{getattr(estimator, 'name', 'estimator')}.step(...) estimate",
                f"shape {shape} at t={t}",
                f"expected (samples, p) = ({samples}, {problem.p})",
            )
        if not bool(torch.isfinite(est).all()):
            raise ContractViolation(
                f"{getattr(estimator, 'name', 'estimator')}.step(...) estimate",
                f"non-finite values at t={t}",
                "an estimator must return finite estimates",
            )
        out.append(est)
    return torch.stack(out)
