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

:func:`uoro_runs` is the same harness for UORO, batched over independent runs (one tensor of R runs,
each with its own θ, its own rank-1 pair (s̃, θ̃) and its own ν stream from its own seed): Algorithm 1
written out for eq. (8), whose Jacobians are constant (∂F/∂s = A, ∂F/∂θ = c). The generic loop costs
~0.5 ms a step and the paper-scale horizon needs ~20 000 steps a run, so the runs go through this
form; :func:`conformance` ties it to the UORO under test (same ν table, same θ trajectory).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np
import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.base import OnlineEstimator
from verify.estimators.noise import NoiseHook, tabulated
from verify.model.builders import influence_balancing_problem
from verify.model.cells import InfluenceBalancingCell
from verify.model.problem import Problem

__all__ = [
    "DIVERGED_LOSS",
    "Curve",
    "LearningSetup",
    "Runs",
    "ScaledEstimate",
    "conformance",
    "final_loss",
    "frozen",
    "learning_curve",
    "learning_setup",
    "optimum_theta",
    "sign_flipped",
    "sign_table",
    "uoro_runs",
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
    """Fig. 3a's system (n = 23, 13 minus signs): UORO 15 runs x 20 000 steps (ci), 30 runs x 50 000 steps (full).

    η = 3e-4 for both learners (the paper tunes η per learner and does not print it; UORO with η = 1e-3 or
    6e-4 diverges or wanders at loss > 1 on most pilot seeds). At η = 3e-4 the horizon is the binding size:
    even the exact gradient (RTRL) is still at loss 0.06 after 4000 steps; k = 10 < n for truncated BPTT.
    The controls (frozen, sign-flipped UORO) run 3 runs each, in the same tensor and at the same sizes.
    """
    if full:
        return LearningSetup(23, 10, 50_000, 3e-4, 10, 30, tbptt_steps=5000, control_steps=50_000)
    return LearningSetup(23, 10, 20_000, 3e-4, 10, 15, tbptt_steps=400, control_steps=20_000)


def optimum_theta(n: int, p: int) -> float:
    r""":math:`\theta^* = 1/(4p - 2n)`: the equilibrium :math:`s^1 = (4p - 2n)\theta` hits the target 1 (eq. (9))."""
    from theory.influence_balancing import equilibrium_derivative  # sympy: imported on first use

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


class Runs(NamedTuple):
    """R runs of :func:`uoro_runs`: online losses (R, steps), final θ (R,), the step each run diverged at."""

    losses: torch.Tensor
    theta: torch.Tensor
    diverged_at: tuple[int | None, ...]

    def curve(self, i: int) -> Curve:
        """Run ``i`` as a :class:`Curve`."""
        return Curve(self.losses[i], float(self.theta[i]), self.diverged_at[i])


def sign_table(seed: int, steps: int, n: int) -> torch.Tensor:
    """The ν stream of one run: ``steps`` draws of n independent random signs (Algorithm 1), from ``seed``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidArgument("seed", seed, "must be an integer >= 0")
    g = torch.Generator().manual_seed(seed)
    return (2 * torch.randint(0, 2, (steps, n), generator=g) - 1).to(torch.float64)


def uoro_runs(setup: LearningSetup, seeds: Sequence[int], factor: float | Sequence[float] = 1.0, eps: float = 1e-7,
              nus: torch.Tensor | None = None) -> Runs:  # fmt: skip
    r"""R independent runs of rank-1 UORO (Algorithm 1) learning θ online, as :func:`learning_curve` does.

    Per run and step t, with :math:`e_t = s^1_t - 1`: :math:`\tilde g_t = e_t((A_{1\cdot}\cdot\tilde s_{t-1})
    \tilde\theta_{t-1} + c_1)`; :math:`\rho_0 = \sqrt{|\tilde\theta_{t-1}|/(\|A\tilde s_{t-1}\| + \varepsilon)}
    + \varepsilon`, :math:`\rho_1 = \sqrt{|\nu\cdot c|/(\|\nu\| + \varepsilon)} + \varepsilon`;
    :math:`\tilde s_t = \rho_0 A\tilde s_{t-1} + \rho_1\nu` (5), :math:`\tilde\theta_t = \tilde\theta_{t-1}/\rho_0
    + \nu\cdot c/\rho_1` (6); :math:`\theta_{t+1} = \theta_t - \frac{\eta}{1+\sqrt t}\,\mathrm{factor}\,\tilde g_t`.
    ``factor`` (one, or one per run) 1 is UORO; 0 (frozen) and −1 (sign flipped) are the broken learners of the
    controls, run in the same tensor. ``nus``
    (steps, R, n) replaces the seeds' sign streams (:func:`sign_table`).
    """
    n, steps = setup.n, setup.steps
    R = len(seeds)
    if R < 1:
        raise InvalidArgument("seeds", list(seeds), "need at least one run")
    if nus is None:
        nus = torch.stack([sign_table(s, steps, n) for s in seeds], 1)
    if tuple(nus.shape) != (steps, R, n):
        raise InvalidArgument("nus", f"shape {tuple(nus.shape)}", f"expected (steps, R, n) = {(steps, R, n)}")
    cell = InfluenceBalancingCell(n, setup.p)
    f = (
        torch.as_tensor(factor, dtype=torch.float64).expand(R)
        if isinstance(factor, (int, float))
        else torch.tensor(factor, dtype=torch.float64)
    )
    if tuple(f.shape) != (R,) or not bool(torch.isfinite(f).all()):
        raise InvalidArgument("factor", factor, f"one finite number, or one per run ({R})")
    losses, theta, alive_steps = _recursion(cell, setup, nus, f.numpy(), eps)
    diverged = tuple(None if int(a) == steps else int(a) + 1 for a in alive_steps)
    return Runs(torch.from_numpy(np.ascontiguousarray(losses.T)), torch.from_numpy(theta), diverged)


def _recursion(
    cell: InfluenceBalancingCell, setup: LearningSetup, nus: torch.Tensor, fac: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`uoro_runs`' steps: (losses (steps, R), final θ (R,), steps each run was alive (R,))."""
    n, steps, R = setup.n, setup.steps, int(nus.shape[1])
    # the recursion in numpy: a step is ~20 operations on (R, n) arrays, and numpy's per-operation cost is a third of
    # torch's there (issue 42: 20 000 steps were 3 of the gate's seconds); the same IEEE operations, the same results
    # to round-off (a (R, n) @ (n, n) product may sum in another order: 1e-16 in θ, 5e-14 in the losses measured)
    A, c = cell.matrix(torch.float64).numpy(), cell.signs(torch.float64).numpy()
    At, a0, c1 = np.ascontiguousarray(A.T), A[0].copy(), float(c[0])
    nu_t = nus.detach().to(torch.float64).cpu().numpy()
    theta = np.full(R, float(setup.theta0))
    s = np.zeros((R, n))
    st = np.zeros((R, n))
    tht = np.zeros(R)
    losses = np.empty((steps, R))
    alive = np.ones(R, dtype=bool)
    alive_steps = np.zeros(R, dtype=np.int64)
    nu_norm = np.sqrt((nu_t * nu_t).sum(-1))  # (steps, R)
    dthg_all = nu_t @ c  # νᵀ ∂F/∂θ, (steps, R)
    lr = setup.eta / (1.0 + np.sqrt(np.arange(1, steps + 1, dtype=np.float64)))
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging control run overflows: stopped below
        for t in range(steps):
            s = s @ At + theta[:, None] * c  # eq. (8): s_t from θ_t (a stopped run's θ is frozen, its s stays finite)
            err = s[:, 0] - 1.0
            loss = 0.5 * err * err  # eq. (9)
            alive &= loss <= DIVERGED_LOSS  # NaN and inf compare False: stopped for good
            alive_steps += alive
            losses[t] = np.where(alive, loss, DIVERGED_LOSS)
            g = err * ((st @ a0) * tht + c1)  # g~ = (δs·s~) θ~ + δθ, δs = e A[0,:], δθ = e c_1
            sf = st @ At  # ∂F/∂s s~
            dthg = dthg_all[t]
            rho0 = np.sqrt(np.abs(tht) / (np.sqrt((sf * sf).sum(1)) + eps)) + eps
            rho1 = np.sqrt(np.abs(dthg) / (nu_norm[t] + eps)) + eps
            st = rho0[:, None] * sf + rho1[:, None] * nu_t[t]  # eq. (5)
            tht = tht / rho0 + dthg / rho1  # eq. (6)
            theta = np.where(alive, theta - lr[t] * fac * g, theta)
    return losses, theta, alive_steps


def conformance(est: OnlineEstimator, setup: LearningSetup, seed: int, steps: int = 300) -> dict[str, float]:
    """Run ``est`` (the UORO under test) through :func:`learning_curve` on ``seed``'s ν table and :func:`uoro_runs`
    on the same table for ``steps`` steps: the largest differences of θ and of the online losses.

    ``est`` must accept tabulated noise (``with_noise``, :mod:`verify.estimators.noise`); the batched runs are
    UORO only if these are at round-off.
    """
    short = LearningSetup(setup.n, setup.p, steps, setup.eta, setup.k, 1, setup.theta0)
    table = sign_table(seed, steps, setup.n)
    ref = uoro_runs(short, [seed], nus=table.unsqueeze(1))
    # the same signs in the estimator's own layout: a table is (draws, M = 1, *noise_shape); one rank-1 sign vector
    shape = tuple(
        cast(NoiseHook, est).noise_shape(influence_balancing_problem(n=setup.n, p=setup.p, T=1, theta=setup.theta0)[0])
    )
    if math.prod(shape) != setup.n:
        raise NotApplicable(
            "uoro.influence-balancing-learning",
            f"its noise_shape {shape} is not one sign per state unit (n = {setup.n}): the batched rank-1 runs' signs "
            "cannot be handed to it",
        )
    got = learning_curve(tabulated(est, table.reshape(steps, 1, *shape)), short, seed)
    return {
        "theta": abs(got.theta - float(ref.theta[0])),
        "loss": float((got.losses - ref.losses[0]).abs().max()),
        "loss_scale": float(ref.losses[0].abs().max()),
    }
