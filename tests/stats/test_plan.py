"""Plan-only mode (issue 13, Build item 5): what assert_unbiased would cost, stated before running it."""

from __future__ import annotations

import pytest
import torch

from verify.errors import InvalidArgument
from verify.estimators import UORO
from verify.impl.mutants.uoro import get
from verify.testing.assertions import assert_unbiased, plan_unbiased
from verify.testing.strategies import random_problem


def _problem() -> tuple[object, torch.Tensor]:
    return random_problem("elman-tanh", n=3, d=2, T=4, generator=torch.Generator().manual_seed(0))


def test_the_plan_states_draws_and_time_and_matches_the_fixed_test_it_predicts() -> None:
    P, th = _problem()
    plan = plan_unbiased(UORO(), P, th, quantity=("total",), delta=0.02)  # type: ignore[arg-type]
    assert plan.samples is not None and plan.samples > 1000 and plan.seconds is not None and plan.seconds > 0
    assert "draws for delta=0.02" in plan.summary() and "ms/draw" in plan.summary()
    # the fixed test sized by the same planner (its own pilot) asks for a similar number of draws
    res = assert_unbiased(UORO(), P, th, quantity=("total",), delta=0.02, method="fixed", max_samples=10**6)  # type: ignore[arg-type]
    assert res.samples_planned is not None
    assert 0.5 < plan.samples / res.samples_planned < 2.0, (plan.samples, res.samples_planned)
    # a smaller delta costs ~ 1/delta^2 more
    tight = plan_unbiased(UORO(), P, th, quantity=("total",), delta=0.01)  # type: ignore[arg-type]
    assert tight.samples is not None and 2.5 < tight.samples / plan.samples < 6.0


def test_an_absurd_variance_gets_an_absurd_plan_stated_up_front() -> None:
    # the unbiased rho0-inverted mutant at T = 16: finite draws, relative variance ~1e113
    P, th = random_problem("elman-tanh", n=4, d=2, T=16, generator=torch.Generator().manual_seed(0))
    plan = plan_unbiased(get("uoro.rho0-inverted").part(), P, th, quantity=("total",), pilot=200)  # type: ignore[arg-type]
    assert plan.samples is not None and plan.samples > 10**30
    assert "e+" in plan.summary().split(" draws")[0]  # printed as a magnitude, not 100 digits


def test_bad_arguments_are_named() -> None:
    P, th = _problem()
    with pytest.raises(InvalidArgument, match="pilot"):
        plan_unbiased(UORO(), P, th, pilot=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="seed"):
        plan_unbiased(UORO(), P, th, seed=-1)  # type: ignore[arg-type]
