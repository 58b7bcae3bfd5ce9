r"""Broken KF-RTRL estimators (Mujika, Meier & Steger 2018, arXiv:1805.10842): a wrong Kronecker factor.

They replace ``uoro.kfrtrl`` (``--impl uoro.kfrtrl=...``) in the kill table
(tests/test_impl_kill_table.py); tests/estimators/test_kfrtrl.py requires the exact enumeration to tell
the first two from exact RTRL.

* :class:`KFRTRLNewStateFactor` -- the row factor :math:`a_t` of :math:`F_t = a_t^\top\otimes D_t`
  built from the *new* state :math:`s_t` instead of :math:`s_{t-1}` (the input of the affine map);
* :class:`KFRTRLNoDerivative` -- :math:`D_t = I` instead of :math:`\operatorname{diag}\phi'(p_t)`
  (the linear-cell factor used for a tanh cell);
* :class:`KFRTRLRho1Scaled` -- :math:`\rho_1` ten times the lemma's variance-minimizing choice: still unbiased
  (any positive, sign-independent ρ is), so only the variance claim can see it (its cross terms c1·c2 grow
  about 10²-fold).

The first two must FAIL ``uoro.kfrtrl-unbiased``; the third must FAIL ``uoro.kfrtrl-variance`` and must not
FAIL the unbiasedness claim (its enumeration is a positive control there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.kfrtrl import KFRTRL
from verify.impl.mutants import Mutant

__all__ = ["MUST_NOT_FAIL", "MUTANTS", "KFRTRLNewStateFactor", "KFRTRLNoDerivative", "KFRTRLRho1Scaled"]

UNBIASED = "uoro.kfrtrl-unbiased"
VARIANCE = "uoro.kfrtrl-variance"


@dataclass(frozen=True)
class KFRTRLNewStateFactor(KFRTRL):
    """KF-RTRL whose Kronecker row factor is :math:`(s_t, x_t, 1)`: the state after the step, not before."""

    label: str = "kf-rtrl[new-state-factor]"

    def input_factor(self, s_prev: torch.Tensor, x: torch.Tensor, s_next: torch.Tensor) -> torch.Tensor:
        return super().input_factor(s_next, x, s_next)


@dataclass(frozen=True)
class KFRTRLNoDerivative(KFRTRL):
    r"""KF-RTRL with :math:`D_t = I`: the activation's derivative dropped from the Kronecker column factor."""

    label: str = "kf-rtrl[no-derivative]"

    def state_factor(self, dphi: torch.Tensor) -> torch.Tensor:
        return torch.diag_embed(torch.ones_like(dphi))


@dataclass(frozen=True)
class KFRTRLRho1Scaled(KFRTRL):
    r"""KF-RTRL with :math:`\rho_1` ten times the lemma's choice: unbiased, with a much larger variance."""

    label: str = "kf-rtrl[rho1-scaled]"

    def rho1(self, HA: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return 10.0 * super().rho1(HA, u)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "kfrtrl.new-state-factor",
        KFRTRLNewStateFactor.__doc__ or "",
        "uoro",
        "kfrtrl",
        KFRTRLNewStateFactor,
        (UNBIASED,),
    ),
    Mutant("kfrtrl.no-derivative", KFRTRLNoDerivative.__doc__ or "", "uoro", "kfrtrl", KFRTRLNoDerivative, (UNBIASED,)),
    Mutant("kfrtrl.rho1-scaled", KFRTRLRho1Scaled.__doc__ or "", "uoro", "kfrtrl", KFRTRLRho1Scaled, (VARIANCE,)),
)

#: unbiased mutants the unbiasedness claim must not FAIL
MUST_NOT_FAIL: dict[str, tuple[str, ...]] = {"kfrtrl.rho1-scaled": (UNBIASED,)}
