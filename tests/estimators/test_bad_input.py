"""Bad input gets a clear InvalidArgument naming the argument and its value, never a silent result."""

from __future__ import annotations

import pytest
import torch

from tests.estimators.helpers import small_problem
from verify.errors import InvalidArgument
from verify.estimators import (
    RTRL,
    TBPTT,
    UORO,
    PreactivationUORO,
    RobbinsMonroSGD,
    Tabulated,
    TruncatedModel,
    enumerate_expectation,
    run_online,
)
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_truncation_must_be_a_positive_integer(k: object) -> None:
    for cls in (TBPTT, TruncatedModel):
        with pytest.raises(InvalidArgument, match=r"k=") as info:
            cls(k)  # type: ignore[arg-type]
        assert info.value.argument == "k"


@pytest.mark.parametrize("r", [0, -2, 1.0])
def test_rank_must_be_a_positive_integer(r: object) -> None:
    with pytest.raises(InvalidArgument, match="rank"):
        UORO(rank=r)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="rank"):
        PreactivationUORO(rank=r)  # type: ignore[arg-type]


def test_other_uoro_hyperparameters() -> None:
    with pytest.raises(InvalidArgument, match="block"):
        UORO(block=0)
    with pytest.raises(InvalidArgument, match="eps"):
        UORO(eps=0.0)
    with pytest.raises(InvalidArgument, match="rho0_on"):
        UORO(rho0_on="neither")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="noise"):
        UORO(noise=object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "est", [RTRL(), TBPTT(2), TruncatedModel(2), UORO(), UORO(block=2), PreactivationUORO()], ids=lambda e: e.name
)
def test_state_from_another_problem_size_is_refused(est: object) -> None:
    P3, th3 = small_problem("elman-tanh", n=3)
    P4, th4 = small_problem("elman-tanh", n=4)
    state = est.init(P3, th3, torch.Generator(), samples=2)  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument, match=r"state\.\w+") as info:
        est.step(P4, th4, state, 1, torch.Generator())  # type: ignore[attr-defined]
    assert "shape" in str(info.value) and "n=4" in str(info.value)
    # a batched problem's state is not a plain problem's state either
    Pb, thb = small_problem("elman-tanh", n=3, batch=(2,))
    with pytest.raises(InvalidArgument, match="state"):
        est.step(Pb, thb, state, 1, torch.Generator())  # type: ignore[attr-defined]


def test_state_of_another_estimator_and_wrong_dtype() -> None:
    P, th = small_problem()
    with pytest.raises(InvalidArgument, match="state"):
        UORO().step(P, th, RTRL().init(P, th, torch.Generator()), 1, torch.Generator())
    st = RTRL().init(P, th, torch.Generator())
    st32 = type(st)(*(x.float() for x in st))
    with pytest.raises(InvalidArgument, match="dtype"):
        RTRL().step(P, th, st32, 1, torch.Generator())


def test_step_index_and_theta() -> None:
    P, th = small_problem(T=5)
    est = UORO()
    st = est.init(P, th, torch.Generator())
    for t in (0, 6, -1, 1.0):
        with pytest.raises(InvalidArgument, match="t="):
            est.step(P, th, st, t, torch.Generator())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="theta"):
        est.step(P, th[:-1], st, 1, torch.Generator())
    with pytest.raises(InvalidArgument, match="theta"):
        est.step(P, th.float(), st, 1, torch.Generator())
    bad = th.clone()
    bad[0] = float("nan")
    with pytest.raises(InvalidArgument, match="non-finite"):
        est.init(P, bad, torch.Generator())
    with pytest.raises(InvalidArgument, match="samples"):
        est.init(P, th, torch.Generator(), samples=0)


def test_samples_with_different_forward_states_are_refused() -> None:
    P, th = small_problem()
    st = RTRL().init(P, th, torch.Generator(), samples=2)
    s = st.s.clone()
    s[1] += 1.0
    with pytest.raises(InvalidArgument, match="share one forward trajectory"):
        RTRL().step(P, th, st._replace(s=s), 1, torch.Generator())


def test_rtrl_memory_is_estimated_before_allocating() -> None:
    n = 3000  # p ≈ n², the influence state n·p·8 bytes ≈ 200 GiB
    cell = ElmanCell(n, 1)
    P = Problem(cell, LinearReadout(n, 1), SquaredError(), torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(n))
    th = torch.zeros(P.p)
    with pytest.raises(InvalidArgument, match=r"GiB") as info:
        RTRL().init(P, th, torch.Generator())
    assert "RTRL influence state" in str(info.value) and "n=3000" in str(info.value)


def test_preactivation_uoro_needs_an_elman_cell() -> None:
    P, th = small_problem("gru")
    with pytest.raises(InvalidArgument, match=r"problem\.cell"):
        PreactivationUORO().init(P, th, torch.Generator())


def test_tabulated_noise_of_the_wrong_shape_or_length() -> None:
    P, th = small_problem(T=3)
    est = UORO(noise=Tabulated(torch.ones(3, 1, 1, P.n + 1, dtype=torch.float64)))
    with pytest.raises(InvalidArgument, match="table"):
        est.step(P, th, est.init(P, th, torch.Generator()), 1, torch.Generator())
    short = UORO(noise=Tabulated(torch.ones(1, 1, 1, P.n, dtype=torch.float64)))
    st = short.init(P, th, torch.Generator())
    st, _ = short.step(P, th, st, 1, torch.Generator())
    with pytest.raises(InvalidArgument, match="index"):
        short.step(P, th, st, 2, torch.Generator())


def test_enumeration_refuses_too_many_patterns() -> None:
    P, th = small_problem(n=4, T=6)
    with pytest.raises(InvalidArgument, match=r"2\^24 = 16777216 noise patterns"):
        enumerate_expectation(UORO(), P, th)


def test_normalizer_returning_the_wrong_shape() -> None:
    P, th = small_problem()
    est = UORO(rho1=lambda z: torch.ones(3))
    with pytest.raises(InvalidArgument, match="rho1"):
        est.step(P, th, est.init(P, th, torch.Generator()), 1, torch.Generator())


def test_online_mode_bad_input_and_divergence() -> None:
    with pytest.raises(InvalidArgument, match="power"):
        RobbinsMonroSGD(0.1, power=0.5)
    with pytest.raises(InvalidArgument, match="lr"):
        RobbinsMonroSGD(-1.0)
    P, th = small_problem("linear", T=30)
    with pytest.raises(InvalidArgument, match=r"diverged|non-finite"):
        run_online(RTRL(), P, th * 30, RobbinsMonroSGD(1e6), torch.Generator())
    with pytest.raises(InvalidArgument, match="record"):
        run_online(RTRL(), P, th, RobbinsMonroSGD(0.1), torch.Generator(), record=[31])
