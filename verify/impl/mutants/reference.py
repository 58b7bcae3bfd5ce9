"""Broken references: adjoint recursions that perturb one term of :func:`verify.oracles.bptt.adjoint_gradient`
(``reference.adjoint``), and an influence computed at a perturbed θ (``reference.influence``).

The reference self-check must report FAIL for every one of them.
"""

from __future__ import annotations

import torch

from verify._func import vjp
from verify.impl.mutants import Mutant
from verify.model.problem import Problem
from verify.oracles.bptt import (
    LossVJP,
    TransitionVJP,
    adjoint_gradient,
    default_loss_vjp,
    default_transition_vjp,
    influence_matrices,
)


def _adjoint_with(
    problem: Problem,
    theta: torch.Tensor,
    per_step: bool,
    tvjp: TransitionVJP | None = None,
    lvjp: LossVJP | None = None,
) -> torch.Tensor:
    return adjoint_gradient(problem, theta, per_step=per_step, transition_vjp=tvjp, loss_vjp=lvjp)


def drop_readout_gradient(problem: Problem, theta: torch.Tensor, per_step: bool = False) -> torch.Tensor:
    """Forgets the readout's own parameter gradient ∂ℓ_t/∂θ at fixed s_t."""
    base = default_loss_vjp(problem, theta.detach())

    def lvjp(t: int, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d_s, d_th = base(t, states)
        return d_s, torch.zeros_like(d_th)

    return _adjoint_with(problem, theta, per_step, lvjp=lvjp)


def drop_readout_jacobian(problem: Problem, theta: torch.Tensor, per_step: bool = False) -> torch.Tensor:
    """Injects ∂ℓ/∂y as if it were ∂ℓ/∂s (drops the readout's Jacobian ∂y/∂s; pads/truncates to n)."""
    base = default_loss_vjp(problem, theta.detach())
    th = theta.detach()

    def lvjp(t: int, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, d_th = base(t, states)
        y = problem.output(th, states[t])
        _, pull = vjp(lambda yy: problem.loss(yy, problem.targets[t - 1]), y)
        (d_y,) = pull(torch.ones((), dtype=y.dtype))
        d_s = torch.zeros_like(states[t])
        m = min(d_y.shape[-1], d_s.shape[-1])
        d_s[..., :m] = d_y[..., :m]
        return d_s, d_th

    return _adjoint_with(problem, theta, per_step, lvjp=lvjp)


def jacobian_from_wrong_step(problem: Problem, theta: torch.Tensor, per_step: bool = False) -> torch.Tensor:
    """Linearises step t at s_t instead of s_{t-1} (∂f/∂s from the wrong step)."""
    th = theta.detach()

    def tvjp(t: int, states: torch.Tensor, cot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x_t = problem.inputs[t - 1]
        _, pull = vjp(lambda w, s: problem.transition(w, s, x_t), th, states[t])
        d_th, d_s = pull(cot)
        return d_s, d_th

    return _adjoint_with(problem, theta, per_step, tvjp=tvjp)


def input_off_by_one(problem: Problem, theta: torch.Tensor, per_step: bool = False) -> torch.Tensor:
    """Uses x_{t+1} in the VJP of step t (an off-by-one in the input index)."""
    th = theta.detach()

    def tvjp(t: int, states: torch.Tensor, cot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x_t = problem.inputs[min(t, problem.T - 1)]
        _, pull = vjp(lambda w, s: problem.transition(w, s, x_t), th, states[t - 1])
        d_th, d_s = pull(cot)
        return d_s, d_th

    return _adjoint_with(problem, theta, per_step, tvjp=tvjp)


def no_adjoint_propagation(problem: Problem, theta: torch.Tensor, per_step: bool = False) -> torch.Tensor:
    """Stops the adjoint after one step (drops a_{t+1} ∂f/∂s): truncated BPTT with k = 1."""
    base = default_transition_vjp(problem, theta.detach())

    def tvjp(t: int, states: torch.Tensor, cot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d_s, d_th = base(t, states, cot)
        return torch.zeros_like(d_s), d_th

    return _adjoint_with(problem, theta, per_step, tvjp=tvjp)


def influence_perturbed_w(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    """Reverse-mode influence matrices at W(1 + 1e-6): a relative slip far above round-off, far below O(1)."""
    th2 = theta.detach().clone()
    sl = problem.layout["cell.W"].slice
    th2[sl] = th2[sl] * (1 + 1e-6)
    return influence_matrices(problem, th2)


def _claims() -> tuple[str, ...]:
    return ("reference.adjoint", "reference.complex-step", "reference.finite-difference")


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "adjoint.drop-readout-gradient",
        drop_readout_gradient.__doc__ or "",
        "reference",
        "adjoint",
        drop_readout_gradient,
        _claims(),
    ),
    Mutant(
        "adjoint.drop-readout-jacobian",
        drop_readout_jacobian.__doc__ or "",
        "reference",
        "adjoint",
        drop_readout_jacobian,
        _claims(),
    ),
    Mutant(
        "adjoint.jacobian-wrong-step",
        jacobian_from_wrong_step.__doc__ or "",
        "reference",
        "adjoint",
        jacobian_from_wrong_step,
        _claims(),
    ),
    Mutant(
        "adjoint.input-off-by-one", input_off_by_one.__doc__ or "", "reference", "adjoint", input_off_by_one, _claims()
    ),
    Mutant(
        "adjoint.no-propagation",
        no_adjoint_propagation.__doc__ or "",
        "reference",
        "adjoint",
        no_adjoint_propagation,
        _claims(),
    ),
    Mutant(
        "influence.perturbed-w",
        influence_perturbed_w.__doc__ or "",
        "reference",
        "influence",
        influence_perturbed_w,
        ("reference.influence",),
    ),
)
