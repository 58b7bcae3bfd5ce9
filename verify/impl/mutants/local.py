r"""Broken RFLO and e-prop estimators (Murray 2019; Bellec et al. 2020): plausible bugs in a local trace.

They replace ``rtrl.rflo`` (``--impl rflo=...``) or ``rtrl.eprop`` (``--impl eprop=...``); the claims
``rtrl.rflo-limits`` and ``rtrl.eprop-limits`` must FAIL each (an exact-limit row off RTRL, or a row the theory
says biased that came out exact):

* :class:`RFLOTransposedTrace`, :class:`EPropTransposedTrace` -- the W block of the immediate term with pre-
  and postsynaptic indices swapped (:math:`\phi'(a_b)s_a` in place of :math:`\phi'(a_a)s_b`): the exact rows fail;
* :class:`RFLONoLeak` -- the trace not decayed by the leak :math:`1-\alpha` (the previous trace dropped): exact
  only for α = 1, so the W = 0 row at α < 1 fails;
* :class:`RFLOFeedbackThroughW` -- the learning signal sent back through the recurrent matrix,
  :math:`L_t = W^\top\partial\ell_t/\partial s_t`, in place of the readout's (symmetric feedback): every row
  with a signal fails (at W = 0 the trace gets no signal at all);
* :class:`EPropNoSelfConnection` -- the trace decays by the leak only, the self-connection's
  :math:`\alpha\phi'(a_j)W_{jj}` dropped (e-prop read as RFLO): the diagonal-W row fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.local import RFLO, EProp, Immediate, transposed_recurrent_trace
from verify.impl.mutants import Mutant
from verify.model.problem import Problem

__all__ = [
    "MUTANTS",
    "EPropNoSelfConnection",
    "EPropTransposedTrace",
    "RFLOFeedbackThroughW",
    "RFLONoLeak",
    "RFLOTransposedTrace",
]

RFLO_CLAIM = "rtrl.rflo-limits"
EPROP_CLAIM = "rtrl.eprop-limits"


@dataclass(frozen=True, eq=False)
class RFLOTransposedTrace(RFLO):
    """Mutant: RFLO whose eligibility trace of W is transposed (pre- and postsynaptic indices swapped)."""

    immediate: Immediate = transposed_recurrent_trace


@dataclass(frozen=True, eq=False)
class EPropTransposedTrace(EProp):
    """Mutant: e-prop whose eligibility trace of W is transposed (pre- and postsynaptic indices swapped)."""

    immediate: Immediate = transposed_recurrent_trace


@dataclass(frozen=True, eq=False)
class RFLONoLeak(RFLO):
    """Mutant: RFLO without the leak factor 1 - alpha (the trace keeps only the immediate term)."""

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        return torch.zeros(J_s.shape[:2], dtype=J_s.dtype, device=J_s.device)


@dataclass(frozen=True, eq=False)
class RFLOFeedbackThroughW(RFLO):
    """Mutant: RFLO whose learning signal goes back through the recurrent W, not the readout."""

    def learning_signal(
        self,
        problem: Problem,
        theta: torch.Tensor,
        dl_ds: torch.Tensor,
        dl_do: torch.Tensor,
        feedback: torch.Tensor | None,
    ) -> torch.Tensor:
        W = theta[problem.layout["cell.W"].slice].reshape(problem.n, problem.n)
        return dl_ds @ W  # (W^T dl/ds) per batch entry


@dataclass(frozen=True, eq=False)
class EPropNoSelfConnection(EProp):
    """Mutant: e-prop whose trace decays by the leak only (the self-connection W_jj dropped: RFLO's trace)."""

    def decay(self, problem: Problem, J_s: torch.Tensor) -> torch.Tensor:
        return RFLO.decay(RFLO(), problem, J_s)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "rflo.transposed-trace", RFLOTransposedTrace.__doc__ or "", "rtrl", "rflo", RFLOTransposedTrace, (RFLO_CLAIM,)
    ),
    Mutant("rflo.no-leak", RFLONoLeak.__doc__ or "", "rtrl", "rflo", RFLONoLeak, (RFLO_CLAIM,)),
    Mutant(
        "rflo.feedback-through-w",
        RFLOFeedbackThroughW.__doc__ or "",
        "rtrl",
        "rflo",
        RFLOFeedbackThroughW,
        (RFLO_CLAIM,),
    ),
    Mutant(
        "eprop.transposed-trace",
        EPropTransposedTrace.__doc__ or "",
        "rtrl",
        "eprop",
        EPropTransposedTrace,
        (EPROP_CLAIM,),
    ),
    Mutant(
        "eprop.no-self-connection",
        EPropNoSelfConnection.__doc__ or "",
        "rtrl",
        "eprop",
        EPropNoSelfConnection,
        (EPROP_CLAIM,),
    ),
)
