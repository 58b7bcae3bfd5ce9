r"""Broken truncations, bounds and contraction certificates the truncation checks must catch.

Truncated model (Miller & Hardt eq. (3)) with the restart at the wrong step:

* ``truncated-model.restart-late`` -- restarts at t − k + 1 (k − 1 transitions);
* ``truncated-model.restart-early`` -- restarts at t − k − 1 (k + 1 transitions);
* ``truncated-model.block-restart`` -- restarts at the last multiple of k before t
  (non-overlapping blocks, as in a careless TBPTT loop) instead of a sliding window.

Truncated BPTT: ``tbptt.window-short`` differentiates k − 1 transitions, ``tbptt.window-long`` k + 1.

Bounds (``theory.truncation``): ``bound.printed-exponent`` (the paper's λ^k in (b), (c)
instead of λ^{k-1}) and ``bound.weakened-gamma`` ((1−λ)^{-2} → (1−λ)^{-1} in γ).

Contraction certificates: ``certificate.spectral-radius`` (ρ(W) instead of ‖W‖₂ --
not a contraction bound for non-normal W) and ``certificate.linf-norm`` (the ℓ∞
row-sum norm instead of the ℓ2 spectral norm).

Each impl has the signature of what it replaces: states ``(problem, θ, k) -> (T, n)``,
gradients ``(problem, θ, k) -> (p,)`` of the loss at step T, bounds
``(constants, k) -> float``, certificates ``(problem, θ) -> ContractionCertificate``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from theory.truncation import TruncationConstants, gradient_bound
from verify.impl.mutants import Mutant
from verify.model.cells import ElmanCell, LinearCell
from verify.model.problem import Problem
from verify.oracles.contraction import ContractionCertificate, contraction_certificate

__all__ = [
    "BOUND_MUTANTS",
    "MUTANTS",
    "model_gradient_with_start",
    "model_states_with_start",
    "tbptt_gradient_with_window",
]

StartFn = Callable[[int, int], int]


def _start_ref(t: int, k: int) -> int:
    return t - k  # eq. (3): h^k_{t-k} = 0


def _start_late(t: int, k: int) -> int:
    return t - k + 1


def _start_early(t: int, k: int) -> int:
    return t - k - 1


def _start_block(t: int, k: int) -> int:
    return ((t - 1) // k) * k


def _run_from(problem: Problem, theta: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """State at ``stop`` of the model restarted from 0 at ``start`` (from s0 when start ≤ 0)."""
    s = problem.s0 if start <= 0 else torch.zeros_like(problem.s0)
    for tau in range(max(start, 0) + 1, stop + 1):
        s = problem.transition(theta, s, problem.inputs[tau - 1])
    return s


def model_states_with_start(problem: Problem, theta: torch.Tensor, k: int, start: StartFn) -> torch.Tensor:
    """Truncated-model states h^k_t, t = 1..T, restarting at ``start(t, k)`` (the reference uses t − k)."""
    return torch.stack([_run_from(problem, theta, start(t, k), t) for t in range(1, problem.T + 1)])


def model_gradient_with_start(problem: Problem, theta: torch.Tensor, k: int, start: StartFn) -> torch.Tensor:
    r""":math:`\nabla p^k_T` of a truncated model restarting at ``start(T, k)``."""
    th = theta.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        s = _run_from(problem, th, start(problem.T, k), problem.T)
        (g,) = torch.autograd.grad(problem.step_loss(th, s, problem.targets[-1]), th)
    return g.detach()


def tbptt_gradient_with_window(problem: Problem, theta: torch.Tensor, window: int) -> torch.Tensor:
    """Truncated BPTT at step T differentiating ``window`` transitions (exact forward states)."""
    th = theta.detach().clone()
    with torch.no_grad():
        states = problem.rollout(th)
    start = max(problem.T - window, 0)
    th.requires_grad_(True)
    with torch.enable_grad():
        s = states[start]
        for tau in range(start + 1, problem.T + 1):
            s = problem.transition(th, s, problem.inputs[tau - 1])
        (g,) = torch.autograd.grad(problem.step_loss(th, s, problem.targets[-1]), th)
    return g.detach()


# ------------------------------------------------------------------ the mutants
def states_restart_late(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Restarts the truncated model at t − k + 1: only k − 1 transitions."""
    return model_states_with_start(problem, theta, k, _start_late)


def states_restart_early(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Restarts the truncated model at t − k − 1: k + 1 transitions."""
    return model_states_with_start(problem, theta, k, _start_early)


def states_block_restart(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Restarts at the last multiple of k before t (blocks) instead of a sliding window of k."""
    return model_states_with_start(problem, theta, k, _start_block)


def gradient_restart_late(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """∇p^k_T of a truncated model restarted at T − k + 1 (k − 1 transitions)."""
    return model_gradient_with_start(problem, theta, k, _start_late)


def gradient_restart_early(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """∇p^k_T of a truncated model restarted at T − k − 1 (k + 1 transitions)."""
    return model_gradient_with_start(problem, theta, k, _start_early)


def gradient_block_restart(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """∇p^k_T of a truncated model restarted at the last multiple of k before T."""
    return model_gradient_with_start(problem, theta, k, _start_block)


def tbptt_window_short(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Truncated BPTT that differentiates k − 1 transitions (detaches one step late)."""
    return tbptt_gradient_with_window(problem, theta, k - 1)


def tbptt_window_long(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    """Truncated BPTT that differentiates k + 1 transitions (detaches one step early)."""
    return tbptt_gradient_with_window(problem, theta, k + 1)


def bound_printed_exponent(c: TruncationConstants, k: int) -> float:
    """Lemma 2's proof bound with the paper's printed λ^k in (b) and (c) (correct: λ^{k-1})."""
    return gradient_bound(c, k, "printed-proof")


def bound_weakened_gamma(c: TruncationConstants, k: int) -> float:
    """γ k λ^k with every (1−λ)^{-2} of γ replaced by (1−λ)^{-1}."""
    return gradient_bound(c, k, "weakened-gamma")


def bound_weakened_proof(c: TruncationConstants, k: int) -> float:
    """The proof's k-dependent bound with (1−λ)^{-2} replaced by (1−λ)^{-1} in each term."""
    return gradient_bound(c, k, "weakened-proof")


def certificate_spectral_radius(problem: Problem, theta: torch.Tensor) -> ContractionCertificate:
    """Certifies contraction with the spectral radius ρ(W) (≤ ‖W‖₂; not a Lipschitz bound when W is non-normal)."""
    if not isinstance(problem.cell, ElmanCell | LinearCell):
        return contraction_certificate(problem, theta)
    W = problem.cell_params(theta)["W"].detach().to(torch.float64)
    rho = float(torch.linalg.eigvals(W).abs().max())
    return ContractionCertificate(problem.cell.describe(), rho, "l2", rho < 1.0, "spectral radius (WRONG)")


def certificate_linf_norm(problem: Problem, theta: torch.Tensor) -> ContractionCertificate:
    """Certifies ℓ2 contraction with the induced ℓ∞ norm (max row sum) of W."""
    if not isinstance(problem.cell, ElmanCell | LinearCell):
        return contraction_certificate(problem, theta)
    W = problem.cell_params(theta)["W"].detach().to(torch.float64)
    val = float(W.abs().sum(-1).max())
    return ContractionCertificate(problem.cell.describe(), val, "l2", val < 1.0, "l_inf row-sum norm (WRONG)")


# truncation.rate fits the gradient series only (model, tbptt): a state mutant is invisible to it
_STATE = ("truncation.state-bound",)
_GRAD = ("truncation.gradient-bound", "truncation.rate", "truncation.training-prop2", "truncation.figure-1a")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "truncated-model.restart-late",
        states_restart_late.__doc__ or "",
        "truncation",
        "model_states",
        states_restart_late,
        _STATE,
    ),
    Mutant(
        "truncated-model.restart-early",
        states_restart_early.__doc__ or "",
        "truncation",
        "model_states",
        states_restart_early,
        _STATE,
    ),
    Mutant(
        "truncated-model.block-restart",
        states_block_restart.__doc__ or "",
        "truncation",
        "model_states",
        states_block_restart,
        _STATE,
    ),
    Mutant(
        "truncated-gradient.restart-late",
        gradient_restart_late.__doc__ or "",
        "truncation",
        "model_gradient",
        gradient_restart_late,
        ("truncation.gradient-bound",),
    ),
    Mutant(
        "truncated-gradient.restart-early",
        gradient_restart_early.__doc__ or "",
        "truncation",
        "model_gradient",
        gradient_restart_early,
        ("truncation.gradient-bound",),
    ),
    Mutant(
        "truncated-gradient.block-restart",
        gradient_block_restart.__doc__ or "",
        "truncation",
        "model_gradient",
        gradient_block_restart,
        _GRAD,
    ),
    Mutant(
        "tbptt.window-short",
        tbptt_window_short.__doc__ or "",
        "truncation",
        "tbptt_gradient",
        tbptt_window_short,
        ("truncation.tbptt-gradient-bound",),
    ),
    Mutant(
        "tbptt.window-long",
        tbptt_window_long.__doc__ or "",
        "truncation",
        "tbptt_gradient",
        tbptt_window_long,
        ("truncation.tbptt-gradient-bound",),
    ),
    Mutant(
        "certificate.spectral-radius",
        certificate_spectral_radius.__doc__ or "",
        "truncation",
        "certificate",
        certificate_spectral_radius,
        ("truncation.assumption-checker",),
    ),
    Mutant(
        "certificate.linf-norm",
        certificate_linf_norm.__doc__ or "",
        "truncation",
        "certificate",
        certificate_linf_norm,
        ("truncation.assumption-checker",),
    ),
)

#: mutants of a *bound* of :mod:`theory.truncation` (what the checks compare with), not of an implementation
#: under test: no user passes a bound, so they are not injected through :mod:`verify.impl`; the tests of
#: tests/truncation/test_mutants.py evaluate the forms they stand for on the fixtures that expose them.
BOUND_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "bound.printed-exponent",
        bound_printed_exponent.__doc__ or "",
        "theory",
        "gradient_bound",
        bound_printed_exponent,
        ("truncation.gradient-bound",),
    ),
    Mutant(
        "bound.weakened-proof",
        bound_weakened_proof.__doc__ or "",
        "theory",
        "gradient_bound",
        bound_weakened_proof,
        ("truncation.gradient-bound",),
    ),
    # not caught on any instance tried: the (1-λ)^{-2} of γ is loose in the γkλ^k form (see tests/truncation)
    Mutant(
        "bound.weakened-gamma", bound_weakened_gamma.__doc__ or "", "theory", "gradient_bound", bound_weakened_gamma, ()
    ),
)
