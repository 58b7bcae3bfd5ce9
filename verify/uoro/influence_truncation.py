r"""UORO §4's influence balancing learned with truncated BPTT across truncation lengths ("above 200").

Tallec & Ollivier (arXiv:1702.05043) §4, eq. (8)-(9), the text after Fig. 3(a): "TBPTT-T fails to converge for
any learning rate, even for truncations largely above n [...] For n = 23 units, with 13 minus signs, TBPTT
requires a truncation above 200 to converge."

**The learner** reads the paper's TBPTT-T as truncation in blocks (the paper does not spell TBPTT-T out; under
the other reading, a sliding window of the last k steps, the derivative has the right sign from k = 41 on, and
"above 200" could not hold): the stream is cut into blocks of k steps; within a block the state at
the block's start is held fixed, so the loss :math:`\ell_t = \tfrac12(s^1_t - 1)^2` at the i-th step of a block
(i = 1..k) sees θ through the last i transitions only,

.. math:: \frac{\partial \ell_t}{\partial\theta}\Big|_{k} = (s^1_t - 1)\,D_i,\qquad
          D_i = \sum_{j<i} (A^j c)_1

(:func:`theory.influence_balancing.truncated_derivative`, the first i terms of the Neumann series of
:math:`(I-A)^{-1}c`), and θ moves once per block by the sum of the block's terms with §4's step
:math:`\eta/(1+\sqrt t)` at the block's last step t. The sum (not the mean) keeps each step's term at the
weight the per-step learners (UORO, the sliding-window TBPTT) give it, so one η grid serves every k. Where
this departs from the sliding-window TBPTT(k) of :mod:`verify.uoro.influence_learning`: there every step
sees the last k transitions (:math:`D_k`), whose sign is right from k = 41 on (``rtrl.influence-balancing``);
a block's early steps see few transitions, so blocks need a longer k.

The runs are deterministic (no noise): one per (k, η); :func:`block_tbptt_run` is the closed form of eq. (8)
with :class:`verify.model.cells.InfluenceBalancingCell`'s A and c, in float64 numpy (a run of 50 000 steps is
a fraction of a second). ``factor = -1`` is the control that cannot learn (gradient ascent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from verify.errors import InvalidArgument
from verify.model.cells import InfluenceBalancingCell
from verify.uoro.influence_learning import DIVERGED_LOSS

__all__ = ["TruncationGrid", "block_derivatives", "block_tbptt_run", "truncation_grid"]


@dataclass(frozen=True)
class TruncationGrid:
    """The (k, η) grid of one sweep on eq. (8) with n units and p plus signs; ``steps`` per run; the final window."""

    n: int
    p: int
    ks: tuple[int, ...]
    etas: tuple[float, ...]
    steps: int
    window: float = 0.2


def truncation_grid() -> TruncationGrid:
    """Fig. 3(a)'s system (n = 23, 13 minus signs), k from 10 to 400, η over two decades, 50 000 steps.

    The horizon is the one ``uoro.influence-balancing-learning`` gives UORO (full profile); η from 1e-4 to 1e-2
    brackets the 3e-4 that UORO needs there (the paper prints no η: "a suitable base learning rate").
    """
    return TruncationGrid(23, 10, (10, 25, 50, 100, 150, 200, 250, 300, 400), (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), 50_000)


def _system(n: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    cell = InfluenceBalancingCell(n, p)
    return cell.matrix(torch.float64).numpy(), cell.signs(torch.float64).numpy()


def block_derivatives(n: int, p: int, k: int) -> np.ndarray:
    r""":math:`D_i = \sum_{j<i}(A^j c)_1` for i = 1..k (float64; the exact values are
    :func:`theory.influence_balancing.truncated_derivative`)."""
    for name, value, low in (("n", n, 1), ("p", p, 0), ("k", k, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidArgument(name, value, f"must be an integer >= {low}")
    if p > n:
        raise InvalidArgument("p", p, f"must be <= n = {n}")
    A, v = _system(n, p)
    out = np.empty(k)
    acc = 0.0
    for i in range(k):
        acc += v[0]
        out[i] = acc
        v = A @ v
    return out


def block_tbptt_run(
    n: int, p: int, k: int, eta: float, steps: int, window: float = 0.2, factor: float = 1.0
) -> dict[str, Any]:
    r"""One run of TBPTT-k (blocks) learning θ online from θ = 0 (see the module); ``factor`` scales the estimate.

    Returns the mean online loss over the first and the last ``window`` of the steps (a diverged run's remaining
    steps count at :data:`~verify.uoro.influence_learning.DIVERGED_LOSS`), the final θ and the step it diverged at.
    """
    if not (isinstance(eta, float) and math.isfinite(eta) and eta > 0):
        raise InvalidArgument("eta", eta, "must be a finite float > 0")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InvalidArgument("steps", steps, "must be an integer >= 1")
    if not 0 < window <= 1:
        raise InvalidArgument("window", window, "must be in (0, 1]")
    d = block_derivatives(n, p, k)
    A, c = _system(n, p)
    s = np.zeros(n)
    theta, g = 0.0, 0.0
    losses = np.full(steps, DIVERGED_LOSS)
    diverged_at: int | None = None
    for t in range(1, steps + 1):
        s = A @ s + theta * c  # eq. (8)
        e = float(s[0]) - 1.0
        loss = 0.5 * e * e  # eq. (9)
        if not math.isfinite(loss) or loss > DIVERGED_LOSS:
            diverged_at = t
            break
        losses[t - 1] = loss
        i = (t - 1) % k
        g += e * d[i]  # the i-th step of a block sees the last i + 1 transitions
        if i == k - 1:
            theta -= eta / (1.0 + math.sqrt(t)) * factor * g  # §4's eta/(1 + sqrt t), once per block
            g = 0.0
    m = max(1, round(window * steps))
    return {"k": k, "eta": eta, "factor": factor, "steps": steps, "first_loss": float(losses[:m].mean()),
            "final_loss": float(losses[-m:].mean()), "theta": theta, "diverged_at": diverged_at}  # fmt: skip
