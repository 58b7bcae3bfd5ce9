r"""What an online gradient estimator guarantees about its estimates -- declared, so that it can be checked.

An estimator under the contract of :mod:`verify.estimators.base` states its guarantee as
an attribute ``guarantee`` (a :class:`Guarantee`):

* ``exact`` -- every estimate equals :math:`\partial\ell_t/\partial\theta` (RTRL: Williams & Zipser 1989;
  the recursion of Tallec & Ollivier 2017, eq. (4), arXiv:1702.05043), up to float round-off;
* ``unbiased`` -- :math:`E\,\tilde g_t = \partial\ell_t/\partial\theta` at frozen θ (UORO: Tallec &
  Ollivier 2017, Prop. 1; preactivation-space UORO: Cooijmans & Martens 2019, arXiv:1902.02405);
* ``truncated`` (``k``) -- every estimate equals the truncated gradient: truncated BPTT with the state
  :math:`s_{t-k}` held fixed (``reference="tbptt"``), or the gradient of the truncated model's loss
  :math:`\nabla\ell_t(h^k_t)` (``reference="truncated-model"``; Miller & Hardt 2019, "Stable Recurrent
  Models", eq. (3), arXiv:1805.10369);
* ``biased`` -- no claim about the mean (REINFORCE on the state-perturbed RNN estimates the gradient of a
  smoothed loss; its link to UORO is the O(σ) claim ``uoro.reinforce-link``).

:func:`verify.testing.guarantees.assert_guarantee` runs the check that matches the declaration;
``tests/estimators/test_guarantees.py`` runs it over every estimator of the toolkit and the
examples, and over their seeded-bug variants (which must fail it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.errors import InvalidArgument

__all__ = ["GUARANTEES", "TRUNCATION_REFERENCES", "Guarantee", "guarantee_of", "with_guarantee"]

#: the kinds of guarantee an estimator can declare
GUARANTEES = ("exact", "unbiased", "truncated", "biased")
#: what a ``truncated`` estimator's estimates equal
TRUNCATION_REFERENCES = ("tbptt", "truncated-model")


@dataclass(frozen=True)
class Guarantee:
    """``kind`` (:data:`GUARANTEES`); ``k`` and ``reference`` for ``truncated``; ``source``: paper and equation."""

    kind: str
    k: int | None = None
    reference: str = "tbptt"
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in GUARANTEES:
            raise InvalidArgument("Guarantee.kind", self.kind, f"must be one of {GUARANTEES}")
        if self.kind == "truncated":
            if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
                raise InvalidArgument("Guarantee.k", self.k, "a truncated guarantee needs the truncation k >= 1")
            if self.reference not in TRUNCATION_REFERENCES:
                raise InvalidArgument("Guarantee.reference", self.reference, f"one of {TRUNCATION_REFERENCES}")
        elif self.k is not None:
            raise InvalidArgument("Guarantee.k", self.k, f"only a truncated guarantee has a k (this one: {self.kind})")

    def describe(self) -> str:
        what = f"truncated(k={self.k}, {self.reference})" if self.kind == "truncated" else self.kind
        return what + (f" [{self.source}]" if self.source else "")


def guarantee_of(estimator: Any) -> Guarantee:
    """The guarantee ``estimator`` declares; :class:`InvalidArgument` naming it when it declares none."""
    g = getattr(estimator, "guarantee", None)
    if not isinstance(g, Guarantee):
        name = getattr(estimator, "name", type(estimator).__name__)
        raise InvalidArgument(
            "estimator",
            name,
            "declares no guarantee: give it an attribute `guarantee = Guarantee(kind, ...)` "
            f"(verify.estimators.guarantee; kinds {GUARANTEES})",
        )
    return g


class _Declared:
    """``estimator`` with a guarantee it did not declare itself (every other attribute is the estimator's)."""

    def __init__(self, estimator: Any, guarantee: Guarantee) -> None:
        self._estimator = estimator
        self.guarantee = guarantee

    def __getattr__(self, name: str) -> Any:
        return getattr(self._estimator, name)


def with_guarantee(estimator: Any, default: Guarantee) -> tuple[Any, bool]:
    """(``estimator``, False) when it declares a guarantee; else (a view of it declaring ``default``, True).

    For the claims that judge a family by its guarantee (``rtrl.bias-alignment``): a user's implementation in a
    family whose guarantee is known (an ``rtrl.rflo`` part is biased by definition) need not declare it.
    """
    if isinstance(getattr(estimator, "guarantee", None), Guarantee):
        return estimator, False
    return _Declared(estimator, default), True
