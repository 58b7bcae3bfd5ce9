"""Checks: one function per catalog claim, ``check(config) -> CheckResult``.

A family module ``verify.checks.<family>`` (or ``verify.checks.<family>_<topic>``)
registers its checks with :func:`register`; :func:`registry` imports every module
of this package and returns
``{claim_id: function}``. The catalog (:mod:`theory.catalog`) and this registry
must match exactly (tested).

``register(claim_id, uses=("uoro.uoro",))`` also declares which parts of the
implementation under test (:mod:`verify.impl`, ``family.field``) the check
exercises: the runner names them in the result, the CLI decides from them which
claims a ``--impl`` concerns (:func:`uses`). A check with ``uses=()`` tests the
toolkit itself (a reproduction, a kill table) whatever implementation is given.
``register(..., plan=fn)`` also gives the claim a *planner*: ``fn(config, budget_s) ->``
:class:`ClaimPlan`, what the check would do and for how long, from a pilot of at most
``budget_s`` seconds (``rnn-verify run --plan``, :mod:`verify.run.plan`; :func:`planners`).

Every check builds its :class:`~verify.verdict.CheckResult` with :func:`result`, which owns the rules all
families share (DESIGN.md "Target layout": a check sets up, computes, decides, runs its controls and builds the
result): the seed is the run's, the wall time runs from the check's start, a control that did not come out as
expected turns a PASS into a FAIL and is named in the summary (:data:`CONTROL_NOT_AS_EXPECTED`), and an
INCONCLUSIVE or SKIPPED verdict without a reason takes the summary as its reason.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.impl import precision
from verify.impl.capabilities import Coverage
from verify.verdict import CheckResult, Control, Verdict

__all__ = [
    "CONTROL_NOT_AS_EXPECTED",
    "CheckFn",
    "ClaimPlan",
    "PlanFn",
    "judged_dtype",
    "planners",
    "precision_name",
    "register",
    "registry",
    "result",
    "uses",
]

#: what a summary says after it when a control did not come out as expected (every family, one wording)
CONTROL_NOT_AS_EXPECTED = "; CONTROL NOT AS EXPECTED: "


@dataclass(frozen=True)
class ClaimPlan:
    """What a claim's check would do, said before it runs: ``draws`` (None: not a sampling check), the estimated
    ``seconds`` and their ``basis`` in words; ``measured``: the seconds come from a pilot of the implementation
    under test (else from a recorded timing or an assumption); ``pieces``: the pilot of each part of the work;
    ``upper``: where the estimate is a range (a user's part of unknown share in the claim's work; a sequential test
    that may draw up to its plan), its upper end (``seconds`` the lower, or the expected)."""

    claim_id: str
    seconds: float
    basis: str
    draws: int | None = None
    measured: bool = False
    pilot_seconds: float = 0.0
    pieces: tuple[dict[str, Any], ...] = ()
    upper: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.claim_id,
            "draws": self.draws,
            "seconds": self.seconds,
            "measured": self.measured,
            "basis": self.basis,
            "pilot_seconds": self.pilot_seconds,
            "pieces": list(self.pieces),
            **({"upper_seconds": self.upper} if self.upper is not None else {}),
        }


CheckFn = Callable[[RunConfig], CheckResult]
PlanFn = Callable[[RunConfig, float], ClaimPlan]
_REGISTRY: dict[str, CheckFn] = {}
_USES: dict[str, tuple[str, ...]] = {}
_PLANS: dict[str, PlanFn] = {}


def register(claim_id: str, uses: tuple[str, ...] = (), plan: PlanFn | None = None) -> Callable[[CheckFn], CheckFn]:
    """Decorator: register ``fn`` as the check of catalog claim ``claim_id``, exercising ``uses`` (``family.field``),
    planned by ``plan`` (``rnn-verify run --plan``; none: the runner's recorded timing stands in)."""

    def deco(fn: CheckFn) -> CheckFn:
        old = _REGISTRY.get(claim_id)
        # the same definition executed again (a module re-imported, e.g. by pytester's
        # in-process runs) replaces itself; a different function claiming the id is an error
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise InvalidArgument(
                "claim_id",
                claim_id,
                f"{claim_id} already has a check ({old.__module__}.{old.__qualname__}); "
                f"{fn.__module__}.{fn.__qualname__} cannot register it too",
            )
        _REGISTRY[claim_id] = fn
        _USES[claim_id] = tuple(uses)
        if plan is not None:
            _PLANS[claim_id] = plan
        return fn

    return deco


def registry() -> dict[str, CheckFn]:
    """Every registered check (imports all families)."""
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return dict(_REGISTRY)


def planners() -> dict[str, PlanFn]:
    """The planner of every claim that registered one (imports all families)."""
    registry()
    return dict(_PLANS)


def uses(claim_id: str) -> tuple[str, ...]:
    """The parts of the implementation under test (``family.field``) the check of ``claim_id`` exercises."""
    registry()
    return _USES.get(claim_id, ())


def judged_dtype(config: RunConfig, claim_id: str) -> torch.dtype:
    """The precision the check of ``claim_id`` judges the implementation under test by: float32 where the run says
    ``--dtype float32`` or a part the claim exercises (:func:`uses`) declares ``dtype="float32"``, else float64
    (:mod:`verify.impl.precision`)."""
    return precision.judged_dtype(config.dtype, (config.impls.part(u) for u in uses(claim_id)))


def precision_name(dtype: torch.dtype) -> str:
    """``"float32"`` / ``"float64"``: the name a result's ``dtype`` carries."""
    return str(dtype).replace("torch.", "")


def _controls_text(bad: Sequence[Control]) -> str:
    """The controls that did not come out as expected, each with what it should have been and what it was."""
    return CONTROL_NOT_AS_EXPECTED + ", ".join(f"{c.name} (expected {c.expected}, observed {c.observed})" for c in bad)


def result(
    claim_id: str,
    config: RunConfig | int,
    t0: float,
    verdict: Verdict | bool,
    summary: str,
    *,
    controls: Sequence[Control] = (),
    reason: str | None = None,
    device: str = "cpu",
    dtype: str = "float64",
    coverage: Coverage | None = None,
    **fields: Any,
) -> CheckResult:
    """The result of the check of ``claim_id``, built by the rules every check shares.

    ``config`` is the run's configuration (the result carries its seed), or the seed itself where a judge runs
    without one (the merge of a sweep); ``t0`` is the check's ``time.perf_counter()`` at its start; ``verdict``
    is the decision before the controls (``True``/``False``: the comparison held, PASS, or not, FAIL). A control
    that did not come out as expected turns a PASS into a FAIL and is named after the summary; an INCONCLUSIVE
    or SKIPPED verdict without a ``reason`` takes the summary as its reason. ``fields`` are the other fields of
    :class:`~verify.verdict.CheckResult` (statistic, threshold, comparison, data, findings, alpha, ...).
    ``coverage`` (:class:`~verify.impl.capabilities.Coverage`): the fixture problems the implementation under test
    supported; what it left out is named in the summary and stored in ``data["coverage"]``.
    """
    if dtype == "float32" and "float32" not in summary:  # issue 37: which precision the budgets are at
        summary += " (judged at float32: its round-off budgets)"
    if coverage is not None:
        summary += coverage.note()
        fields["data"] = {**(fields.get("data") or {}), "coverage": coverage.data()}
    if not isinstance(verdict, Verdict):
        verdict = Verdict.PASS if verdict else Verdict.FAIL
    bad = [c for c in controls if not c.ok]
    if bad:
        summary += _controls_text(bad)
        if verdict is Verdict.PASS:
            verdict = Verdict.FAIL
    if verdict in (Verdict.INCONCLUSIVE, Verdict.SKIPPED) and not reason:
        reason = summary
    return CheckResult(
        claim_id=claim_id,
        verdict=verdict,
        summary=summary,
        seed=config if isinstance(config, int) else config.seed,
        dtype=dtype,
        device=device,
        reason=reason,
        controls=tuple(controls),
        wall_time=time.perf_counter() - t0,
        **fields,
    )
