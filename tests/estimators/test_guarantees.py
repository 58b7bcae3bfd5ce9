"""Contract and guarantee: every estimator declares what it guarantees, and the matching check holds it to that.

The toolkit's estimators, the worked examples and REINFORCE each declare a
:class:`~verify.estimators.guarantee.Guarantee`; :func:`verify.testing.guarantees.assert_guarantee`
runs the contract and the check that matches (exact / truncated(k): equal to the float64 reference within
the round-off budget; unbiased: the statistical test at α = 1e-4; biased: the contract). The tester is
tested: the seeded-bug examples and the mutant catalog's deterministic estimators, which declare the
guarantee of what they imitate, must fail it.
"""

from __future__ import annotations

import pytest
import torch

from tests.estimators.helpers import ESTIMATORS, small_problem
from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.estimators import RTRL, TBPTT
from verify.estimators.guarantee import Guarantee, guarantee_of
from verify.examples.rtrl import MyRTRL, MyRTRLBuggy
from verify.examples.tbptt import MyTBPTT, MyTBPTTBuggy
from verify.examples.uoro import MyUORO
from verify.impl import DEFAULT
from verify.impl.mutants.estimators import MUTANTS
from verify.run.check import run_check
from verify.testing.guarantees import assert_guarantee
from verify.verdict import Verdict

EXAMPLES = [MyRTRL(), MyTBPTT(2), MyTBPTT(4), MyUORO()]
CORRECT = [est for est, cells in ESTIMATORS] + EXAMPLES


def _problem(estimator: object) -> tuple[object, torch.Tensor]:
    return small_problem("elman-tanh", T=5, seed=3)


@pytest.mark.parametrize("estimator", CORRECT, ids=lambda e: e.name)
def test_every_estimator_keeps_the_guarantee_it_declares(estimator: object) -> None:
    problem, theta = _problem(estimator)
    g = guarantee_of(estimator)
    what = assert_guarantee(estimator, problem, theta, seed=7)  # type: ignore[arg-type]
    assert g.kind in what


def test_the_declarations() -> None:
    assert guarantee_of(RTRL()).kind == "exact" and guarantee_of(MyRTRL()).kind == "exact"
    assert guarantee_of(TBPTT(3)) == Guarantee(
        "truncated", k=3, reference="tbptt", source=guarantee_of(TBPTT(3)).source
    )
    assert guarantee_of(MyTBPTT(4)).k == 4
    assert {guarantee_of(e).kind for e in CORRECT} == {"exact", "truncated", "unbiased", "biased"}  # SnAp: biased
    assert guarantee_of(DEFAULT.uoro.reinforce(0.05)).kind == "biased"


@pytest.mark.parametrize(
    "broken",
    [MyRTRLBuggy(), MyTBPTTBuggy(2)]
    + [m.part for m in MUTANTS if m.name in ("rtrl.no-immediate-term", "tbptt.off-by-one")],
    ids=lambda e: getattr(e, "name", type(e).__name__),
)
def test_a_broken_estimator_fails_the_guarantee_it_claims(broken: object) -> None:
    part = broken
    if isinstance(broken, type):  # a mutant catalog part is the estimator class (TBPTT's takes k)
        part = broken(2) if issubclass(broken, TBPTT) else broken()
    problem, theta = _problem(part)
    with pytest.raises(AssertionError, match="declares"):
        assert_guarantee(part, problem, theta)  # type: ignore[arg-type]


def test_an_estimator_without_a_declaration_is_told_how_to_declare_one() -> None:
    class Anonymous:
        name = "anon"

        def init(self, *a: object, **k: object) -> None: ...
        def step(self, *a: object, **k: object) -> None: ...

    with pytest.raises(InvalidArgument, match="declares no guarantee"):
        assert_guarantee(Anonymous(), *_problem(None))  # type: ignore[arg-type]


def test_reinforce_biased_runs_its_matching_claim() -> None:
    """REINFORCE is not an online estimator (it samples whole trajectories): its matching claim is the O(σ) link."""
    res = run_check(all_claims()["uoro.reinforce-link"], RunConfig())
    assert res.verdict is Verdict.PASS, res.summary


@pytest.mark.parametrize("name", ["uoro.noise-zero-one", "uoro.rho0-one-factor"])
def test_a_biased_uoro_fails_its_unbiased_declaration(name: str) -> None:
    part = next(m.part for m in MUTANTS if m.name == name)()
    assert guarantee_of(part).kind == "unbiased"  # it claims what UORO claims
    problem, theta = _problem(part)
    with pytest.raises(AssertionError):
        assert_guarantee(part, problem, theta, seed=1)  # type: ignore[arg-type]
