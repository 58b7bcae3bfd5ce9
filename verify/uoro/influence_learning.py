r"""What ``uoro.influence-balancing-learning`` computes: UORO §4's online learning of θ (Fig. 3a).

Tallec & Ollivier (arXiv:1702.05043) §4, eq. (8)-(9): the influence-balancing problem
(:func:`verify.model.builders.influence_balancing_problem`, n units, p plus signs; Fig. 3a:
n = 23, 13 minus signs, so p = 10), its scalar θ learned online by plain SGD with steps
:math:`\eta_t = \eta/(1 + \sqrt t)` (§4), the gradient estimate coming either from UORO
(Algorithm 1) or from truncated BPTT. At equilibrium :math:`s^1 = 2(2p - n)\theta`, so the
target :math:`s^1 = 1` is reached at :math:`\theta^* = 1/(4p - 2n)` (loss 0), while a
truncated estimator whose :math:`\sum_{j<k}(A^j c)_1` has the wrong sign
(:func:`theory.influence_balancing.truncated_derivative`) pushes θ away from it: the
linearised iteration is unstable and the loss grows without bound.

:func:`learning_curve` runs one learner on one seed and records the online loss
:math:`\ell_t = \tfrac12(s^1_t - 1)^2` (the loss at the state the learner sees when
:math:`x_t` arrives); a run whose loss passes :data:`DIVERGED_LOSS` is stopped and marked
diverged (its remaining steps count at that loss). :func:`frozen` and :func:`sign_flipped`
wrap an estimator into a learner that cannot learn by construction (the claim's controls).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from theory.influence_balancing import equilibrium_derivative
from verify.errors import InvalidArgument
from verify.estimators.base import OnlineEstimator
from verify.model.builders import influence_balancing_problem
from verify.model.problem import Problem

__all__ = [
    "DIVERGED_LOSS",
    "Curve",
    "LearningSetup",
    "ScaledEstimate",
    "final_loss",
    "frozen",
    "learning_curve",
    "learning_setup",
    "optimum_theta",
    "sign_flipped",
]

#: an online loss above this counts as diverged (the initial loss at θ = 0 is 1/2); the run stops there
DIVERGED_LOSS = 1e6


@dataclass(frozen=True)
class LearningSetup:
    """Sizes of one run of the experiment: (n, p), steps, base learning rate η, truncation k, runs, θ₀."""

    n: int
    p: int
    steps: int
    eta: float
    k: int
    runs: int
    theta0: float = 0.0
    #: the last ``window`` fraction of the steps is the final window the verdict reads
    window: float = 0.2
    #: steps of the (deterministic) truncated-BPTT run and of the frozen control
    tbptt_steps: int = 1500
    control_steps: int = 1000


def learning_setup(full: bool) -> LearningSetup:
    """Fig. 3a's system (n = 23, 13 minus signs): UORO 3 runs x 4000 steps (ci), 10 runs x 20 000 steps (full).

    η = 3e-4 for both learners (the paper tunes η per learner and does not print it; UORO with η = 3e-3
    diverges on this system, with 1e-3 on some seeds); k = 10 < n for truncated BPTT.
    """
    if full:
        return LearningSetup(23, 10, 20_000, 3e-4, 10, 10, tbptt_steps=20_000, control_steps=20_000)
    return LearningSetup(23, 10, 4000, 3e-4, 10, 3)


def optimum_theta(n: int, p: int) -> float:
    r""":math:`\theta^* = 1/(4p - 2n)`: the equilibrium :math:`s^1 = (4p - 2n)\theta` hits the target 1 (eq. (9))."""
    d = equilibrium_derivative(n, p)
    if d == 0:
        raise InvalidArgument("p", p, f"4p - 2n = 0 for n={n}: θ has no influence on s¹ at equilibrium")
    return 1.0 / float(d)


class Curve(NamedTuple):
    """One run: online losses ℓ_1..ℓ_steps (after a divergence: :data:`DIVERGED_LOSS`), final θ, divergence step."""

    losses: torch.Tensor
    theta: float
    diverged_at: int | None


@dataclass(frozen=True)
class ScaledEstimate:
    """A learner that multiplies ``inner``'s estimate by ``factor`` (0: frozen, −1: sign flipped)."""

    inner: OnlineEstimator
    factor: float

    @property
    def name(self) -> str:
        return f"{self.inner.name} x {self.factor:g}"

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, samples: int = 1) -> Any:
        return self.inner.init(problem, theta, rng, samples=samples)

    def step(
        self, problem: Problem, theta: torch.Tensor, state: Any, t: int, rng: torch.Generator
    ) -> tuple[Any, torch.Tensor]:
        state, g = self.inner.step(problem, theta, state, t, rng)
        return state, self.factor * g


def frozen(est: OnlineEstimator) -> ScaledEstimate:
    """``est`` with its estimate zeroed: θ never moves (cannot learn by construction)."""
    return ScaledEstimate(est, 0.0)


def sign_flipped(est: OnlineEstimator) -> ScaledEstimate:
    """``est`` with its estimate negated: gradient ascent (cannot learn by construction)."""
    return ScaledEstimate(est, -1.0)


def learning_curve(est: OnlineEstimator | ScaledEstimate, setup: LearningSetup, seed: int) -> Curve:
    r"""Online SGD on θ with ``est``'s estimate, :math:`\theta_{t+1} = \theta_t - \frac{\eta}{1+\sqrt t}\hat g_t` (§4).

    ℓ_t is read at the forward state :math:`s_t` the step used (the problem's exact trajectory under the
    successive θ_t, rebuilt here step by step: ``s_{t} = A s_{t-1} + θ_t c``). ``seed`` seeds the estimator's noise.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidArgument("seed", seed, "must be an integer >= 0")
    P, theta = influence_balancing_problem(n=setup.n, p=setup.p, T=setup.steps, theta=setup.theta0)
    rng = torch.Generator().manual_seed(seed)
    state = est.init(P, theta, rng)
    losses = torch.full((setup.steps,), DIVERGED_LOSS, dtype=torch.float64)
    s = P.s0.clone()
    for t in range(1, setup.steps + 1):
        with torch.no_grad():
            s = P.transition(theta, s, P.inputs[t - 1])
        loss = 0.5 * (float(s[0]) - 1.0) ** 2  # eq. (9) at the state step t produces with θ_t
        if not math.isfinite(loss) or loss > DIVERGED_LOSS:
            return Curve(losses, float(theta[0]), t)
        losses[t - 1] = loss
        state, g = est.step(P, theta, state, t, rng)
        theta = theta - setup.eta / (1.0 + math.sqrt(t)) * g.mean(0)
    return Curve(losses, float(theta[0]), None)


def final_loss(curve: Curve, window: float) -> float:
    """Mean online loss over the last ``window`` fraction of the steps (diverged steps at :data:`DIVERGED_LOSS`)."""
    m = max(1, round(window * curve.losses.numel()))
    return float(curve.losses[-m:].mean())


def curves(
    make: Callable[[], OnlineEstimator | ScaledEstimate], setup: LearningSetup, seeds: Sequence[int]
) -> list[Curve]:
    """:func:`learning_curve` of a fresh ``make()`` on every seed."""
    return [learning_curve(make(), setup, s) for s in seeds]
