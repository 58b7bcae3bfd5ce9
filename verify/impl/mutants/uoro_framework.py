r"""Mutants of the framework UORO (:class:`verify.estimators.framework.FrameworkUORO`; Cooijmans & Martens 2019,
"On the Variance of Unbiased Online Recurrent Optimization", arXiv:1902.02405, § "Theoretical framework").

Both are plausible slips in :math:`\tilde h_t = \ldots + \mathcal J^{h_t}_{p_t}Q_t u_t`,
:math:`\tilde w_t^\top = \ldots + u_t^\top Q_t^{-1}\mathcal J^{p_t}_{\theta_t}`; the claim
``uoro.variance-reduction-optimal`` must FAIL each:

* ``uoro.framework-q0-inverted`` -- :math:`Q_0^{-1}` where :math:`Q_0` belongs (so :math:`Q_0 = B^{+1/4}` for the
  optimum's :math:`B^{-1/4}`): still unbiased, but its trace product is
  :math:`\operatorname{tr}(B^{3/2})\operatorname{tr}(B^{-1/2}) \ge \operatorname{tr}(B)\operatorname{tr}(I) \ge
  \operatorname{tr}(B^{1/2})^2` (Chebyshev's sum inequality, then Cauchy-Schwarz): not the optimum's variance;
* ``uoro.framework-q-transposed`` -- :math:`Q_t^\top` in place of :math:`Q_t^{-1}` in :math:`\tilde w_t`:
  :math:`E[Q u u^\top Q^\top] = QQ^\top \ne I`, biased.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verify.estimators.framework import FrameworkUORO
from verify.impl.mutants import Mutant

__all__ = ["MUTANTS", "Q0Inverted", "QTransposed"]

CLAIM = "uoro.variance-reduction-optimal"


@dataclass(frozen=True, eq=False)
class Q0Inverted(FrameworkUORO):
    """Q₀⁻¹ used where Q₀ belongs (Q_t = α_t Q₀⁻¹): unbiased, but not the framework's optimum."""

    def _forward_back(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        Q, Qinv = super()._forward_back(t)
        a = self.alpha[t - 1] if self.alpha is not None else 1.0
        return Qinv * a * a, Q / (a * a)


@dataclass(frozen=True, eq=False)
class QTransposed(FrameworkUORO):
    """Q_tᵀ in place of Q_t⁻¹ in w̃_t: biased (E[Q u uᵀ Qᵀ] = Q Qᵀ ≠ I)."""

    def _forward_back(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        Q, _ = super()._forward_back(t)
        return Q, Q.T


MUTANTS: tuple[Mutant, ...] = (
    Mutant("uoro.framework-q0-inverted", Q0Inverted.__doc__ or "", "uoro", "framework", Q0Inverted, (CLAIM,)),
    Mutant("uoro.framework-q-transposed", QTransposed.__doc__ or "", "uoro", "framework", QTransposed, (CLAIM,)),
)
