"""The mutant catalog of :mod:`verify.impl.mutants.estimators`: every visible mutant makes its check FAIL.

Each mutant is run through the comparison its check uses (the same functions the
checks call for their controls); the unbiased normalizer mutants must *pass* the
expectation comparison (they are invisible to it, which the catalog states), and
the continuous-noise mutant cannot be enumerated.
"""

from __future__ import annotations

import pytest
import torch

from verify.checks import uoro as uoro_checks
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.estimators import UORO, Tabulated, run_estimator
from verify.estimators.enumerate import enumerate_expectation
from verify.estimators.online import check_contract
from verify.impl import RTRLImpl, TruncationImpl
from verify.impl.mutants import Mutant
from verify.impl.mutants.estimators import MUTANTS, get
from verify.rtrl import exact as rtrl_exact
from verify.rtrl import influence_balancing as balancing
from verify.testing.strategies import influence_balancing_problem
from verify.uoro.enumeration import EnumerationCase, References, compare_enumeration

CONFIG = RunConfig()


def _visible(claim: str) -> list[Mutant]:
    return [m for m in MUTANTS if claim in m.visible_to]


def test_catalog_is_well_formed() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) and len(MUTANTS) >= 10
    required = {
        "rtrl.no-immediate-term",
        "uoro.noise-zero-one",
        "uoro.rho0-one-factor",
        "uoro.rho1-asymmetric",
        "tbptt.off-by-one",
    }
    assert required <= set(names)
    for m in MUTANTS:
        assert m.description and m.field in ("rtrl", "tbptt", "uoro")


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutants_follow_the_contract(mutant: Mutant) -> None:
    """A mutant is a plausible bug, not a crash: it runs under the estimator contract."""
    from tests.estimators.helpers import small_problem

    P, th = small_problem("elman-tanh", T=4)
    est = mutant.part(k=2) if mutant.field == "tbptt" else mutant.part()
    check_contract(est, P, th, samples=2)


@pytest.mark.parametrize("mutant", _visible("rtrl.exact"), ids=lambda m: m.name)
def test_rtrl_exact_catches(mutant: Mutant) -> None:
    case = rtrl_exact.suite(CONFIG.generator(salt=31), rtrl_exact.SuiteSetup(full=CONFIG.full))[0]
    assert not rtrl_exact.compare_rtrl(mutant.impl.rtrl, case)["passed"]
    assert rtrl_exact.compare_rtrl(RTRLImpl().rtrl, case)["passed"]


@pytest.mark.parametrize("mutant", _visible("rtrl.influence-balancing"), ids=lambda m: m.name)
def test_influence_balancing_catches(mutant: Mutant) -> None:
    if mutant.field == "tbptt":  # the check's TBPTT sweep: the derived truncated value is missed
        from theory.influence_balancing import truncated_derivative

        n, p, k = 23, 10, 5
        _, _, s_eq, P, th = balancing.equilibrium_rtrl(RTRLImpl().rtrl, n, p, 0.5)
        exact = float(truncated_derivative(n, p, k))
        good = balancing.tbptt_equilibrium_derivative(P, th, s_eq, k)
        bad = balancing.tbptt_equilibrium_derivative(P, th, s_eq, k, mutant.impl.tbptt)
        budget = balancing.truncated_budget(P, k)
        assert abs(good - exact) <= budget < abs(bad - exact)
        return
    val = balancing.equilibrium_rtrl(mutant.impl.rtrl, 5, 2, 0.5)[0]
    assert abs(val - (4 * 2 - 2 * 5)) > 1e-9


@pytest.mark.parametrize("mutant", _visible("rtrl.truncated-bptt"), ids=lambda m: m.name)
def test_truncated_bptt_catches(mutant: Mutant) -> None:
    case = rtrl_exact.suite(CONFIG.generator(salt=32), rtrl_exact.SuiteSetup(full=CONFIG.full))[0]
    bad = rtrl_exact.compare_truncated(mutant.impl.tbptt, mutant.impl.truncated_model, 3, case, 1e-13)
    good = rtrl_exact.compare_truncated(TruncationImpl().tbptt, TruncationImpl().truncated_model, 3, case, 1e-13)
    assert not bad["passed"] and good["passed"]


def _uoro_case() -> tuple[EnumerationCase, References]:
    case = uoro_checks.suite(CONFIG)[0]
    return case, References.of(case.problem, case.theta)


@pytest.mark.parametrize("mutant", _visible("uoro.exact-expectation"), ids=lambda m: m.name)
def test_exact_expectation_catches(mutant: Mutant) -> None:
    case, refs = _uoro_case()
    r = compare_enumeration(mutant.part(), case, refs)
    assert not r["passed"], r


@pytest.mark.parametrize("name", ["uoro.rho0-inverted", "uoro.rho0-previous-step", "uoro.rho1-constant"])
def test_unbiased_normalizer_mutants_are_invisible_to_the_expectation(name: str) -> None:
    """DESIGN.md: unbiasedness is invariant to positive ν-independent ρ₀ and positive even ρ₁."""
    mutant = get(name)
    assert mutant.visible_to == ()
    case, refs = _uoro_case()
    r = compare_enumeration(mutant.part(), case, refs)
    assert r["within_budget"], r  # equal in expectation, to the round-off of its own magnitudes
    # ... but they are different algorithms: with the same noise, the estimates differ
    table = (2 * torch.randint(0, 2, (case.problem.T, 1, 1, case.problem.n), generator=torch.Generator()) - 1).double()
    a = run_estimator(UORO(noise=Tabulated(table)), case.problem, case.theta, torch.Generator())
    b = run_estimator(mutant.part(noise=Tabulated(table)), case.problem, case.theta, torch.Generator())
    assert not torch.allclose(a, b)


def test_gaussian_noise_mutant_cannot_be_enumerated() -> None:
    case, _ = _uoro_case()
    with pytest.raises(InvalidArgument, match="continuous"):
        enumerate_expectation(get("uoro.noise-gaussian-variance").part(), case.problem, case.theta)


def test_rtrl_without_immediate_term_keeps_zero_influence() -> None:
    P, th = influence_balancing_problem(n=4, p=1, T=5)
    est = get("rtrl.no-immediate-term").part()
    state = est.init(P, th, torch.Generator())
    for t in range(1, 6):
        state, _ = est.step(P, th, state, t, torch.Generator())
    assert torch.count_nonzero(state.influence) == 0
