"""``assert_unbiased`` and ``unbiasedness_property`` on the toolkit's UORO, a hand-written UORO and bad input.

Statistical tests here run at the gate's α = 1e-3 (a correct estimator FAILs with
probability ≤ 1e-3 per call) with derandomized seeds; the PASS expectations use δ
large enough that the budget is never the issue.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.stats.my_uoro import MyUORO
from verify._validate import MAX_SEED
from verify.errors import InvalidArgument
from verify.estimators import UORO
from verify.impl.mutants.uoro import get
from verify.testing.assertions import assert_unbiased, default_steps, unbiasedness_property
from verify.testing.strategies import problems, random_problem
from verify.verdict import Verdict

pytestmark = pytest.mark.statistical


def _problem(kind: str = "elman-tanh", n: int = 3, T: int = 4, seed: int = 0):  # type: ignore[no-untyped-def]
    return random_problem(kind, n=n, d=2, T=T, k=2, generator=torch.Generator().manual_seed(seed))


def test_default_steps() -> None:
    assert default_steps(1) == (1,)
    assert default_steps(2) == (1, 2)
    assert default_steps(5) == (2, 3, 5)


def test_toolkit_uoro_passes_with_certificate() -> None:
    P, th = _problem()
    res = assert_unbiased(UORO(), P, th, quantity=("gradient", "total", "influence"), delta=0.1)
    assert res.verdict is Verdict.PASS and res.relative_bound < 0.1
    assert res.samples_planned is not None and res.samples_used <= 200_000


def test_hand_written_uoro_readme_example() -> None:
    P, th = _problem()
    q = ("gradient", "total", "influence")
    res = assert_unbiased(MyUORO(), P, th, quantity=q, delta=0.1, event_floor=0.5)
    assert res.passed
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(MyUORO(buggy=True), P, th, quantity=q, delta=0.1, event_floor=0.5)


def test_undeclared_flat_draws_are_not_determinism() -> None:
    """Issue 22: the same correct UORO without a declaration is never certified on its flat readout coordinates."""

    class Undeclared(MyUORO):
        event_floor = None

    P, th = _problem()
    res = assert_unbiased(Undeclared(), P, th, delta=0.1, max_samples=20_000, allow_inconclusive=True)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert "no variation in" in res.reason and "event_floor" in res.reason


@pytest.mark.parametrize("name", ["uoro.theta-tilde-scaled", "uoro.no-delta-theta", "uoro.noise-uniform"])
def test_biased_mutants_raise(name: str) -> None:
    P, th = _problem()
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(get(name).part(), P, th, delta=0.1)


def test_fixed_method_and_inconclusive_budget() -> None:
    P, th = _problem()
    res = assert_unbiased(UORO(), P, th, delta=0.2, method="fixed")
    assert res.method.startswith("fixed") and res.passed
    with pytest.raises(AssertionError, match="not established"):
        assert_unbiased(UORO(), P, th, quantity="influence", delta=0.001, max_samples=3000)
    res = assert_unbiased(UORO(), P, th, quantity="influence", delta=0.001, max_samples=3000, allow_inconclusive=True)
    assert res.verdict is Verdict.INCONCLUSIVE


class _NaNEstimator(MyUORO):
    name = "nan-uoro"

    def step(self, problem, theta, state, t, rng):  # type: ignore[no-untyped-def]
        state, g = super().step(problem, theta, state, t, rng)
        g = g.clone()
        g[0, 0] = math.nan
        return state, g


class _WrongShape(MyUORO):
    name = "wrong-shape"

    def step(self, problem, theta, state, t, rng):  # type: ignore[no-untyped-def]
        state, g = super().step(problem, theta, state, t, rng)
        return state, g[:, :-1]


def test_bad_input_is_invalid_argument_never_pass() -> None:
    P, th = _problem()
    with pytest.raises(InvalidArgument, match=r"contract.*not finite"):  # named by the contract, before statistics
        assert_unbiased(_NaNEstimator(), P, th)
    with pytest.raises(InvalidArgument, match="shape"):
        assert_unbiased(_WrongShape(), P, th)
    for kw in ({"alpha": 0.0}, {"alpha": 1.0}, {"beta": 2.0}, {"delta": 0.0}, {"delta": -0.5}):
        with pytest.raises(InvalidArgument):
            assert_unbiased(UORO(), P, th, **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        assert_unbiased(UORO(), P, th, quantity="hessian")
    with pytest.raises(InvalidArgument):
        assert_unbiased(UORO(), P, th, steps=(0, 9))
    with pytest.raises(InvalidArgument):
        assert_unbiased(UORO(), P, th, method="bayesian")
    for bad in (2**70, MAX_SEED + 1, -1, 1.5, True):  # issue 12: not torch's raw "Overflow when unpacking long long"
        # issue 23: one seed limit for the API and the CLI
        with pytest.raises(InvalidArgument, match=rf"seed=.*\[0, {MAX_SEED}\]") as info:
            assert_unbiased(UORO(), P, th, seed=bad)  # type: ignore[arg-type]
        assert info.value.argument == "seed" and info.value.value == bad

    class NoInfluence:
        name = "no-influence"

        def init(self, *a, **k):  # type: ignore[no-untyped-def]
            raise AssertionError("never reached")

        step = init

    with pytest.raises(InvalidArgument, match="influence"):
        assert_unbiased(NoInfluence(), P, th, quantity="influence")  # type: ignore[arg-type]


def test_zero_truth_is_refused_with_explanation() -> None:
    # a problem whose targets equal the outputs at every step: dl_t/dtheta = 0, relative bound undefined
    P, th = _problem(T=2)
    states = P.rollout(th)[1:]
    P0 = P.with_sequence(P.inputs, P.output(th, states).detach())
    with pytest.raises(InvalidArgument, match="undefined"):
        assert_unbiased(UORO(), P0, th)


test_property_toolkit_uoro = unbiasedness_property(
    UORO(), problems(cells=("elman-tanh", "gru"), losses=("squared-error",), max_n=2, max_T=3), examples=3, delta=0.2,
    max_samples=30_000,
)  # fmt: skip


def test_property_catches_a_biased_estimator() -> None:
    prop = unbiasedness_property(
        get("uoro.theta-tilde-scaled").part(),
        problems(cells=("elman-tanh",), losses=("squared-error",), max_n=2, max_T=3),
        examples=3,
        delta=0.2,
        max_samples=30_000,
    )
    with pytest.raises(AssertionError):
        prop()


def test_float32_estimate_on_a_float64_problem_is_a_contract_error_not_bias() -> None:
    """Issue 13: the contract runs before any statistics, so a dtype mistake is named as such."""
    import dataclasses

    from verify.examples.uoro import MyUORO

    @dataclasses.dataclass(frozen=True)
    class Float32Estimate(MyUORO):
        def step(self, *a, **k):  # type: ignore[no-untyped-def]
            state, g = super().step(*a, **k)
            return state, g.float()

    P, th = _problem()
    with pytest.raises(InvalidArgument, match=r"contract.*float32"):
        assert_unbiased(Float32Estimate(), P, th)
