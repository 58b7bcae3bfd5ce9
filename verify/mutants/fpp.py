"""Deprecated: split into :mod:`verify.impl.mutants.fpp` (the FPP mutants) and :mod:`verify.fpp.broken_learners`
(the broken learners) (kept until rnn-verify 0.2; importing it warns)."""

from verify._moved import warn_moved
from verify.fpp.broken_learners import LEARNER_MUTANTS, frozen_learner, learner_mutant, sign_flipped_learner
from verify.impl.mutants.fpp import *  # noqa: F403
from verify.impl.mutants.fpp import __all__ as _new_all

__all__ = [*_new_all, "LEARNER_MUTANTS", "frozen_learner", "learner_mutant", "sign_flipped_learner"]

warn_moved("verify.mutants.fpp", "verify.impl.mutants.fpp and verify.fpp.broken_learners (the learners)")
