"""Broken learners for the §5 reproductions' negative controls (Liu et al., FPP, §5).

Each is a ``theta_grad`` transform of :func:`verify.fpp.batched.run_online_batched`,
named in a :class:`~verify.fpp.reproduction.Block` so that a sweep cell can carry it:

* ``fpp.learner-frozen`` -- every parameter gradient zeroed: the learner never
  learns (a "learns nothing" control: its loss stays at the initial model's);
* ``fpp.learner-sign-flip`` -- every parameter gradient negated: gradient *ascent*.

The reproductions' controls rerun the very harness with a broken learner and must
FAIL (``fpp.cycleworld-reproduction``, ``fpp.stochasticworld-reproduction``,
``fpp.updates-reproduction``). The mutants of a replaceable FPP part are in
:mod:`verify.impl.mutants.fpp`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from verify.errors import InvalidArgument

__all__ = ["LEARNER_MUTANTS", "frozen_learner", "learner_mutant", "sign_flipped_learner"]


def frozen_learner(g: torch.Tensor) -> torch.Tensor:
    """Zero parameter gradient: W and β never move (RMSprop's step is 0)."""
    return torch.zeros_like(g)  # MUTANT: no learning


def sign_flipped_learner(g: torch.Tensor) -> torch.Tensor:
    """Negated parameter gradient: the optimiser climbs the loss."""
    return -g  # MUTANT: gradient ascent


#: broken learners by name (the reproductions' negative controls)
LEARNER_MUTANTS = {"fpp.learner-frozen": frozen_learner, "fpp.learner-sign-flip": sign_flipped_learner}


def learner_mutant(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The broken learner ``name`` of :data:`LEARNER_MUTANTS`; InvalidArgument for an unknown name."""
    fn = LEARNER_MUTANTS.get(name)
    if fn is None:
        raise InvalidArgument("mutant", name, f"must be one of {sorted(LEARNER_MUTANTS)}")
    return fn
