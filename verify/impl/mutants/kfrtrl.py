r"""Broken KF-RTRL estimators (Mujika, Meier & Steger 2018, arXiv:1805.10842): a wrong Kronecker factor.

Not yet registered in the kill table (``MUTANTS`` is empty until an ``Impl`` field for
KF-RTRL exists for them to replace); tests/estimators/test_kfrtrl.py requires the exact
enumeration to tell each of them from exact RTRL.

* :class:`KFRTRLNewStateFactor` -- the row factor :math:`a_t` of :math:`F_t = a_t^\top\otimes D_t`
  built from the *new* state :math:`s_t` instead of :math:`s_{t-1}` (the input of the affine map);
* :class:`KFRTRLNoDerivative` -- :math:`D_t = I` instead of :math:`\operatorname{diag}\phi'(p_t)`
  (the linear-cell factor used for a tanh cell).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.kfrtrl import KFRTRL

__all__ = ["MUTANTS", "KFRTRLNewStateFactor", "KFRTRLNoDerivative"]


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


#: empty until KF-RTRL has an Impl field (see the module docstring)
MUTANTS: tuple[()] = ()
