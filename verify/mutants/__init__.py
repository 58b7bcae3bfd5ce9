"""Deprecated: moved to :mod:`verify.impl.mutants` (kept until rnn-verify 0.2; importing it warns).

Its submodules (``verify.mutants.device``, ...) are the new home's own module objects, registered under
their old names, so ``import verify.mutants.uoro`` keeps working (with this package's warning);
``verify.mutants.fpp`` is a shim module of its own (its learners moved to :mod:`verify.fpp.broken_learners`).
"""

from verify._moved import alias_submodules, warn_moved
from verify.impl.mutants import *  # noqa: F403
from verify.impl.mutants import __all__ as __all__

alias_submodules("verify.mutants", "verify.impl.mutants", ("device", "estimators", "reference", "truncation", "uoro"))
warn_moved("verify.mutants", "verify.impl.mutants")
