"""Broken learners for the §5 reproductions' negative controls (Liu et al., FPP, §5).

Each is a ``theta_grad`` transform of :func:`verify.fpp.batched.run_online_batched`,
named in a :class:`~verify.fpp.reproduction.Block` so that a sweep cell can carry it:

* ``fpp.learner-frozen`` -- every parameter gradient zeroed: the learner never
  learns (a "learns nothing" control: its loss stays at the initial model's);
* ``fpp.learner-sign-flip`` -- every parameter gradient negated: gradient *ascent*.

and one input transform (:data:`STREAM_MUTANTS`), applied to the stream before the engine sees it:

* ``fpp.learner-shuffled-inputs`` -- each run's observations permuted in time (a data
  pipeline that shuffles its sequence): the lags are destroyed, the targets and the
  engine are intact. It cannot learn the lag structure by construction -- see
  :func:`shuffled_inputs` for the best cross-entropy it can reach (the memoryless 0.6616
  on Stochastic World, above the lag-30-only 0.6277 that "learned" must beat).

The reproductions' controls rerun the very harness with a broken learner and must
FAIL (``fpp.cycleworld-reproduction``, ``fpp.stochasticworld-reproduction``,
``fpp.updates-reproduction``). The mutants of a replaceable FPP part are in
:mod:`verify.impl.mutants.fpp`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from verify.errors import InvalidArgument

__all__ = [
    "BROKEN_LEARNERS",
    "LEARNER_MUTANTS",
    "STREAM_MUTANTS",
    "frozen_learner",
    "learner_mutant",
    "shuffled_inputs",
    "sign_flipped_learner",
    "stream_mutant",
]


def frozen_learner(g: torch.Tensor) -> torch.Tensor:
    """Zero parameter gradient: W and β never move (RMSprop's step is 0)."""
    return torch.zeros_like(g)  # MUTANT: no learning


def sign_flipped_learner(g: torch.Tensor) -> torch.Tensor:
    """Negated parameter gradient: the optimiser climbs the loss."""
    return -g  # MUTANT: gradient ascent


def shuffled_inputs(inputs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    r"""Each run's observations (R, steps, d) permuted uniformly in time, independently per run.

    Why it cannot learn (Stochastic World, Table 1): the target :math:`y_t` depends on
    :math:`o_{t-T_1}, o_{t-T_2}` and fresh noise; after the permutation the learner's input at
    step t is :math:`o_{\pi(t)}`, a uniformly random draw (without replacement) from the run's
    i.i.d. fair observations. Its whole input history is then independent of
    :math:`(o_{t-T_1}, o_{t-T_2})` except through the count of ones the permutation keeps,
    which carries O(1/steps) nats, so the best cross-entropy any learner fed it can reach is
    :math:`H(y_t) = H(0.625) = 0.6616` (the memoryless level, ``none`` of
    :func:`verify.fpp.envs.stochastic_world_reference_losses`), 0.034 nats above the
    lag-30-only level 0.6277 below which the reproduction calls a learner "learned"
    (tests/fpp/test_broken_learners.py measures the plug-in conditional entropies of a
    shuffled stream). A learner that *can* learn through the recurrence (T-BPTT with k = 1,
    the former control, 0.655 at full size) is no control; this one is one by construction.
    """
    R, steps = inputs.shape[0], inputs.shape[1]
    order = torch.argsort(torch.rand(R, steps, generator=generator, dtype=torch.float64), dim=1)
    idx = order.reshape(R, steps, *([1] * (inputs.dim() - 2))).expand_as(inputs)
    return torch.gather(inputs, 1, idx)  # MUTANT: the lags destroyed


#: broken learners by name (the reproductions' negative controls): parameter-gradient transforms
LEARNER_MUTANTS = {"fpp.learner-frozen": frozen_learner, "fpp.learner-sign-flip": sign_flipped_learner}
#: broken learners by name: input-stream transforms ``(inputs, generator) -> inputs`` before the engine
STREAM_MUTANTS = {"fpp.learner-shuffled-inputs": shuffled_inputs}
#: every broken learner's name
BROKEN_LEARNERS = (*LEARNER_MUTANTS, *STREAM_MUTANTS)


def learner_mutant(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The broken learner ``name`` of :data:`LEARNER_MUTANTS`; InvalidArgument for an unknown name."""
    fn = LEARNER_MUTANTS.get(name)
    if fn is None:
        raise InvalidArgument("mutant", name, f"must be one of {sorted(LEARNER_MUTANTS)}")
    return fn


def stream_mutant(name: str) -> Callable[[torch.Tensor, torch.Generator], torch.Tensor]:
    """The input transform ``name`` of :data:`STREAM_MUTANTS`; InvalidArgument for an unknown name."""
    fn = STREAM_MUTANTS.get(name)
    if fn is None:
        raise InvalidArgument("mutant", name, f"must be one of {sorted(STREAM_MUTANTS)}")
    return fn
