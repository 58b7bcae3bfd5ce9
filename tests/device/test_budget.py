"""The parity budget model (verify.oracles.budget §2): rounding units, effective memory, magnitudes dominate values."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from verify.errors import InvalidArgument
from verify.gpu.parity import (
    ALGORITHMS,
    FPPParity,
    TBPTTParity,
    TruncatedModelParity,
    UOROParity,
    applicable_algorithms,
)
from verify.oracles.bptt import bptt_gradient, per_step_gradients, tbptt_gradient
from verify.oracles.budget import (
    C_PARITY,
    CALIBRATED_MAX_RATIO,
    CALIBRATION_MARGIN,
    U_TF32,
    ParityBudget,
    accumulation_length,
    bptt_magnitude,
    conditioning,
    effective_memory,
    rounding_unit,
    roundoff_budget,
    rtrl_magnitudes,
    tbptt_magnitudes,
    trajectory,
    unit_roundoff,
)
from verify.testing.strategies import CELL_KINDS, LOSS_KINDS, random_problem


def test_rounding_units() -> None:
    assert rounding_unit(torch.float64) == 2.0**-53
    assert rounding_unit(torch.float32) == 2.0**-24
    assert rounding_unit(torch.float32, tf32=True) == U_TF32 == 2.0**-11
    assert rounding_unit(torch.float64, tf32=True) == 2.0**-53  # TF32 only touches float32 matmuls
    assert rounding_unit(torch.float16) == 2.0**-11 and rounding_unit(torch.bfloat16) == 2.0**-8
    with pytest.raises(InvalidArgument):
        rounding_unit(torch.int64)


def test_constant_is_the_calibration_times_the_margin() -> None:
    assert C_PARITY == pytest.approx(CALIBRATED_MAX_RATIO * CALIBRATION_MARGIN)
    assert CALIBRATION_MARGIN >= 2


def test_parity_budget_formula() -> None:
    b = ParityBudget(u_candidate=2.0**-24, u_reference=2.0**-53, accumulation=9, memory=3.0, summed=4, constant=2.0)
    assert b.depth == 31.0
    assert b.factor == pytest.approx(2.0 * (2.0**-24 + 2.0**-53) * math.sqrt(31.0))
    rows = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(b.row_budgets(rows), torch.tensor([5.0 * b.factor, 0.0], dtype=torch.float64))


def test_effective_memory() -> None:
    lam = 0.5
    L = effective_memory([lam] * 200)
    # sum_j (j+1) lam^j / sum_j lam^j = 1/(1-lam) for a long sequence
    assert L == pytest.approx(1.0 / (1.0 - lam), rel=1e-6)
    assert effective_memory([0.0] * 10) == 1.0
    assert effective_memory([2.0] * 10) > 9.0 and effective_memory([2.0] * 10) <= 10.0
    assert effective_memory([2.0] * 10, window=3) <= 3.0
    # an expanding stretch anywhere in the sequence counts (both time directions)
    assert effective_memory([0.1] * 5 + [3.0] * 5) == pytest.approx(effective_memory([3.0] * 5 + [0.1] * 5))
    with pytest.raises(InvalidArgument):
        effective_memory([1.0], window=0)


def test_existing_selfcheck_api_unchanged() -> None:
    P, th = random_problem("elman-tanh", n=3, d=2, T=5, generator=torch.Generator().manual_seed(0))
    cond = conditioning(P, th)
    assert cond.gradient_budget() == roundoff_budget(
        unit_roundoff(torch.float64), cond.depth, cond.steps, cond.kappa_grad
    )
    assert cond.depth == accumulation_length(P)


def _dominates(mag: torch.Tensor, value: torch.Tensor) -> None:
    """|value| <= magnitude elementwise (triangle inequality), up to float64 round-off of the value."""
    slack = 1e-12 * (mag.abs().max() + 1e-300)
    bad = value.abs() > mag * (1 + 1e-12) + slack
    assert not bool(bad.any()), (
        f"{int(bad.sum())} entries exceed their magnitude, e.g. {value[bad][:3]} vs {mag[bad][:3]}"
    )


@settings(max_examples=examples(20))
@given(
    kind=st.sampled_from(CELL_KINDS),
    loss=st.sampled_from(LOSS_KINDS),
    n=st.integers(1, 5),
    T=st.integers(1, 8),
    batch=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_magnitudes_dominate_exact_values(kind: str, loss: str, n: int, T: int, batch: bool, seed: int) -> None:
    """Every magnitude array bounds the absolute value of its exact float64 result, entry by entry."""
    gen = torch.Generator().manual_seed(seed)
    P, th = random_problem(kind, n=n, d=2, T=T, k=2, loss=loss, batch=(2,) if batch else (), generator=gen)
    tr = trajectory(P, th)
    _dominates(bptt_magnitude(tr), bptt_gradient(P, th))
    _dominates(rtrl_magnitudes(tr), per_step_gradients(P, th))
    _dominates(tbptt_magnitudes(tr, 2), tbptt_gradient(P, th, 2, which="per_step"))
    for alg in applicable_algorithms(P, (*ALGORITHMS, TruncatedModelParity(1), UOROParity(rank=3, samples=1))):
        if isinstance(alg, FPPParity) and T < alg.T:
            continue
        inputs = alg.prepare(P, th, gen)
        _dominates(alg.magnitudes(inputs).rows, alg.run(inputs))


def test_magnitude_counts_a_cancelling_residual() -> None:
    """A squared-error target equal to the output: the gradient is 0, its magnitude is not (it carries round-off)."""
    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = P.output(th, P.rollout(th)[1:])
    Pfit = P.with_sequence(P.inputs, y)
    assert float(bptt_gradient(Pfit, th).abs().max()) < 1e-14
    assert float(bptt_magnitude(trajectory(Pfit, th)).min()) >= 0.0
    assert float(bptt_magnitude(trajectory(Pfit, th)).norm()) > 0.1


def test_window_memory_is_capped() -> None:
    P, th = random_problem("linear", n=4, d=2, T=20, generator=torch.Generator().manual_seed(2), scale=1.5)
    inputs = TBPTTParity(3).prepare(P, th, torch.Generator())
    assert TBPTTParity(3).magnitudes(inputs).memory <= 3.0
    assert trajectory(P, th).memory() > 3.0
