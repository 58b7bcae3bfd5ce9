r"""What an implementation under test supports, and what a claim covered of its fixtures (issue 21, item 1).

An online estimator may declare its capabilities with ``supports(problem) -> None | str``: ``None`` where it
can run ``problem``, else the reason (the cells it implements, the losses, unbatched problems only ...).
:class:`verify.impl.adapters.Batch1` declares them from its ``cells=`` and ``losses=``. An estimator without
``supports`` is *probed*: :func:`unsupported` runs its ``init`` and one ``step`` on the problem with one sample,
and an :class:`~verify.errors.NotApplicable` it raises is its reason (any other exception is the
implementation's error and propagates, to be reported whole).

A check that runs on several fixture problems keeps the ones the implementation supports
(:func:`cover`) and says in its verdict which it covered and which it left out, and why
(:class:`Coverage`, in the summary and in ``data["coverage"]``). A claim with nothing covered is
SKIPPED at once, before anything is computed, with every reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from verify.errors import NotApplicable
from verify.model.problem import Problem

__all__ = ["ORDER_REFUSALS", "Coverage", "build_orders", "cover", "row_coverage", "unsupported"]

T = TypeVar("T")


def unsupported(estimator: Any, problem: Problem, theta: torch.Tensor) -> str | None:
    """Why ``estimator`` cannot run ``problem`` (None: it can): its ``supports(problem)``, else a one-step probe."""
    supports = getattr(estimator, "supports", None)
    if callable(supports):
        why = supports(problem)
        if why is not None and not isinstance(why, str):
            return f"supports(problem) returned {why!r}" if why is not True else None
        return why
    try:
        gen = torch.Generator().manual_seed(0)
        state = estimator.init(problem, theta, gen, samples=1)
        estimator.step(problem, theta, state, 1, gen)
    except NotApplicable as exc:
        return exc.reason
    return None


@dataclass(frozen=True)
class Coverage:
    """The fixture problems a claim ran on (``covered``) and those it left out, with the reason (``left_out``)."""

    covered: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...] = ()

    def note(self) -> str:
        """``""`` when nothing was left out, else ``"; covered: ...; left out: a (why), b (why)"``."""
        if not self.left_out:
            return ""
        return f"; covered: {', '.join(self.covered)}; left out (not supported by the implementation under test): " + (
            ", ".join(f"{label} ({why})" for label, why in _merge(self.left_out))
        )

    def data(self) -> dict[str, Any]:
        return {"covered": list(self.covered), "left_out": {label: why for label, why in self.left_out}}


def _merge(left_out: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Labels with the same reason on one line: ``lstm(n=2), gru(n=2) (reason)``."""
    by_reason: dict[str, list[str]] = {}
    for label, why in left_out:
        by_reason.setdefault(why, []).append(label)
    return [(", ".join(labels), why) for why, labels in by_reason.items()]


def cover(
    claim: str,
    items: Iterable[T],
    probe: Callable[[T], tuple[str, Any, Problem, torch.Tensor]],
) -> tuple[list[T], Coverage]:
    """The ``items`` whose problem their estimator supports, and the :class:`Coverage`.

    ``probe(item)`` returns (label, estimator, problem, θ). :class:`NotApplicable` naming every reason when
    nothing is covered (the claim is SKIPPED before it computes anything).
    """
    kept: list[T] = []
    covered: list[str] = []
    left: list[tuple[str, str]] = []
    for item in items:
        label, est, problem, theta = probe(item)
        why = unsupported(est, problem, theta)
        if why is None:
            kept.append(item)
            covered.append(label)
        else:
            left.append((label, why))
    if not kept:
        reasons = "; ".join(f"{label}: {why}" for label, why in _merge(left)) or "no fixture problems"
        raise NotApplicable(claim, f"the implementation under test supports none of the claim's problems ({reasons})")
    return kept, Coverage(tuple(dict.fromkeys(covered)), tuple(dict.fromkeys(left)))


#: what a factory raises when asked for an order it does not implement (``snap(order=2)`` of SnAp-1-only code):
#: that order is left out of the claim, with the reason, instead of FAILing it (issue 37)
ORDER_REFUSALS = (NotApplicable, ValueError, NotImplementedError)


def build_orders(
    factory: Callable[..., Any], what: str, orders: Sequence[int]
) -> tuple[dict[int, Any], list[tuple[str, str]]]:
    """The estimators ``factory(order=n)`` builds for each ``n`` in ``orders``, and the orders it refuses with the
    reason -- an order the factory declares it lacks (an ``orders`` attribute without ``n``) or whose construction
    raises :data:`ORDER_REFUSALS` (``ValueError("only order 1")``). Code that builds an order and then fails
    while running it is judged as usual (a FAIL): only a refusal to *construct* leaves an order out. No order
    built is :class:`NotApplicable`, every reason named."""
    from verify.impl import build  # verify.impl imports this module

    declared = getattr(factory, "orders", None)
    built: dict[int, Any] = {}
    refused: list[tuple[str, str]] = []
    for n in orders:
        if declared is not None and n not in tuple(declared):
            refused.append((f"order {n}", f"the implementation declares orders {tuple(declared)}"))
            continue
        try:
            built[n] = build(factory, what, order=n)
        except ORDER_REFUSALS as exc:
            reason = exc.reason if isinstance(exc, NotApplicable) else f"{type(exc).__name__}: {exc}"
            refused.append((f"order {n}", f"asked for order={n}, it refused to construct: {str(reason)[:200]}"))
    if not built:
        raise NotApplicable(what, "; ".join(f"{label}: {why}" for label, why in refused) or "no order asked for")
    return built, refused


def row_coverage(claim: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Coverage]:
    """Of a claim's per-problem ``rows``, those the implementation under test ran, and the :class:`Coverage`: a row
    with ``left_out`` (the reason it gave, :class:`NotApplicable` raised on that problem) is left out; none ran:
    :class:`NotApplicable` (the claim is SKIPPED), the first reasons named."""
    ran = [r for r in rows if "left_out" not in r]
    left = tuple((str(r["problem"]), str(r["left_out"])) for r in rows if "left_out" in r)
    if not ran:
        why = "; ".join(f"{label}: {reason}" for label, reason in left[:3])
        raise NotApplicable(claim, f"the implementation under test runs none of the claim's problems ({why})")
    return ran, Coverage(tuple(str(r["problem"]) for r in ran), left)
