r"""The simulation problems of FPP §5 / App. D: CycleWorld and Stochastic World.

Paper: ``fpp-explicit-state-variables.md`` §5 ("Simulation Problems") and App. D, Table 1.

* **CycleWorld** (p states): a deterministic ring; the observation is 1 in the
  last state and 0 elsewhere; the target is the next observation
  :math:`y_t = o_{t+1}`. Predicting it needs a memory of p steps. Loss: squared
  error :math:`\tfrac12(\hat y - y)^2`; the predict-zero baseline scores
  :math:`\tfrac{1}{2p}` per step, and performance is reported as the ratio to it
  (Fig. 2).
* **Stochastic World**: i.i.d. binary observations :math:`o_t \sim` Bernoulli(1/2);
  the binary target :math:`y_t` has :math:`P(y_t = 1 \mid o_{t-15}, o_{t-30})` from
  Table 1 (0.5, 1.0, 0.25, 0.75 for (0,0), (1,0), (0,1), (1,1)). Loss: softmax
  cross-entropy on two logits. The reference levels 0.66 / 0.51 / 0.46 of §5 are
  the Bayes cross-entropies with no memory, with :math:`o_{t-15}` only, and with
  both lags (:func:`stochastic_world_reference_losses` computes them exactly).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from verify._validate import require_fits_memory, require_positive_int
from verify.errors import InvalidArgument

__all__ = [
    "STOCHASTIC_WORLD_LAGS",
    "STOCHASTIC_WORLD_TABLE",
    "Stream",
    "cycle_world",
    "cycle_world_baseline",
    "cycle_world_predict_zero_ratio",
    "stochastic_world",
    "stochastic_world_reference_losses",
]

#: Table 1: P(Y_t = 1 | O_{t-15} = a, O_{t-30} = b) for (a, b)
STOCHASTIC_WORLD_TABLE: dict[tuple[int, int], float] = {(0, 0): 0.5, (1, 0): 1.0, (0, 1): 0.25, (1, 1): 0.75}
#: the two lags T1 = 15, T2 = 30 of §5
STOCHASTIC_WORLD_LAGS = (15, 30)


class Stream(NamedTuple):
    """An online stream: ``inputs`` (R, steps, d) and ``targets`` (R, steps, m) float, or labels (R, steps)."""

    inputs: torch.Tensor
    targets: torch.Tensor


def cycle_world(p: int, steps: int, runs: int, generator: torch.Generator) -> Stream:
    """CycleWorld streams for ``runs`` independent runs, each starting in a uniformly drawn state.

    inputs[r, t] = 1 iff the ring is in its last state at step t; targets[r, t] = inputs[r, t+1].
    """
    require_positive_int("p", p, 2)
    require_positive_int("steps", steps)
    require_positive_int("runs", runs)
    require_fits_memory("steps", steps, 8 * 4 * runs * (steps + 1), f"CycleWorld streams ({runs} runs x {steps} steps)")
    start = torch.randint(0, p, (runs, 1), generator=generator)
    pos = (start + torch.arange(steps + 1)) % p
    obs = (pos == p - 1).to(torch.float64)
    return Stream(obs[:, :-1, None], obs[:, 1:, None])


def cycle_world_baseline(p: int) -> float:
    r"""Per-step loss of predicting 0: :math:`\tfrac12 \cdot \tfrac1p` (one target in p is 1)."""
    require_positive_int("p", p, 2)
    return 0.5 / p


def cycle_world_predict_zero_ratio(p: int) -> float:
    """Predicting 0 on whole cycles of CycleWorld(p) (2 runs x 10 cycles) over :func:`cycle_world_baseline`: 1."""
    stream = cycle_world(p, 10 * p, 2, torch.Generator().manual_seed(0))  # whole cycles: exactly 1
    return float((0.5 * stream.targets**2).mean() / cycle_world_baseline(p))


def stochastic_world(
    steps: int, runs: int, generator: torch.Generator, lags: tuple[int, int] = STOCHASTIC_WORLD_LAGS
) -> Stream:
    """Stochastic World streams (Table 1); ``targets`` are class labels (R, steps) in {0, 1}."""
    require_positive_int("steps", steps)
    require_positive_int("runs", runs)
    t1, t2 = lags
    if not (isinstance(t1, int) and isinstance(t2, int) and 1 <= t1 < t2):
        raise InvalidArgument("lags", lags, "need integers 1 <= T1 < T2")
    require_fits_memory(
        "steps", steps, 8 * 6 * runs * (steps + t2), f"Stochastic World streams ({runs} runs x {steps} steps)"
    )
    obs = torch.randint(0, 2, (runs, steps + t2), generator=generator)
    a = obs[:, t2 - t1 : t2 - t1 + steps]  # o_{t-T1}
    b = obs[:, :steps]  # o_{t-T2}
    table = torch.tensor([[STOCHASTIC_WORLD_TABLE[(i, j)] for j in (0, 1)] for i in (0, 1)], dtype=torch.float64)
    prob = table[a, b]
    y = (torch.rand(runs, steps, generator=generator, dtype=torch.float64) < prob).long()
    x = obs[:, t2:].to(torch.float64)[..., None]
    return Stream(x, y)


def _entropy(q: float) -> float:
    return -sum(v * math.log(v) for v in (q, 1.0 - q) if v > 0.0)


def stochastic_world_reference_losses() -> dict[str, float]:
    r"""Bayes cross-entropies (nats) of Table 1 for each information set.

    ``none``: :math:`H(\bar p)` with :math:`\bar p = \tfrac14\sum P`; ``lag15``: with
    :math:`o_{t-15}` known; ``lag30``: with :math:`o_{t-30}` known; ``both``: the
    optimum. §5 quotes 0.66, 0.51 and 0.46 for none, lag15 and both.
    """
    P = STOCHASTIC_WORLD_TABLE
    none = _entropy(sum(P.values()) / 4)
    lag15 = sum(_entropy((P[(a, 0)] + P[(a, 1)]) / 2) for a in (0, 1)) / 2
    lag30 = sum(_entropy((P[(0, b)] + P[(1, b)]) / 2) for b in (0, 1)) / 2
    both = sum(_entropy(P[k]) for k in P) / 4
    return {"none": none, "lag15": lag15, "lag30": lag30, "both": both}
