"""Heavy third-party modules imported on first use: ``from verify._lazy import scipy_stats as stats``.

Every ``rnn-verify`` command that computes, every isolated worker process (:mod:`verify.run.worker`) and every
test that starts one pays the imports of the modules it loads; ``scipy.stats`` alone is about a second of CPU
(issue 42), and most start paths never call it (an exact claim, ``--help``, a worker that runs an RTRL claim).
A module here is a stand-in whose first attribute access imports the real module and answers from it from
then on, so ``stats.norm.ppf(q)`` behaves exactly as with ``from scipy import stats`` -- the import only moves
from the importing module's load to the first call that needs it. mypy sees the real modules (the
``TYPE_CHECKING`` branch), so every use stays type-checked.

Nothing of :mod:`verify` is imported here (the lowest floor, DESIGN "Target layout").
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

__all__ = ["LazyModule", "scipy_optimize", "scipy_stats"]


class LazyModule(types.ModuleType):
    """The module *name*, imported by the first attribute read (``importlib.import_module``: thread-safe)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_lazy_module"] = None

    def __getattr__(self, attr: str) -> Any:
        # only called for names this stand-in does not hold itself: every attribute of the real module
        module = self.__dict__["_lazy_module"]
        if module is None:
            module = importlib.import_module(self.__name__)
            self.__dict__["_lazy_module"] = module
        return getattr(module, attr)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__name__))

    def __repr__(self) -> str:
        loaded = "loaded" if self.__dict__["_lazy_module"] is not None else "not imported yet"
        return f"<lazy module {self.__name__!r} ({loaded})>"


if TYPE_CHECKING:
    from scipy import optimize as scipy_optimize
    from scipy import stats as scipy_stats
else:
    scipy_stats = LazyModule("scipy.stats")
    scipy_optimize = LazyModule("scipy.optimize")
