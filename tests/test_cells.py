"""Cells: shapes, batching, dtypes, complex support, the influence-balancing closed form."""

from __future__ import annotations

import pytest
import torch

from verify.errors import InvalidArgument
from verify.model.cells import ElmanCell, GRUCell, InfluenceBalancingCell, LinearCell, LSTMCell
from verify.model.params import ParamLayout
from verify.testing.strategies import CELL_KINDS, influence_balancing_problem, make_cell


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("lead", [(), (3,), (2, 4)])
def test_step_broadcasts_over_leading_dims(kind: str, lead: tuple[int, ...]) -> None:
    cell = make_cell(kind, 3, 2)
    gen = torch.Generator().manual_seed(0)
    params = cell.init_params(gen)
    s = torch.randn(*lead, cell.state_size, generator=gen)
    x = torch.randn(*lead, 2, generator=gen)
    out = cell.step(params, s, x)
    assert out.shape == (*lead, cell.state_size)
    if lead:  # batched = row by row
        flat_s, flat_x = s.reshape(-1, cell.state_size), x.reshape(-1, 2)
        rows = torch.stack([cell.step(params, flat_s[i], flat_x[i]) for i in range(flat_s.shape[0])])
        torch.testing.assert_close(out.reshape(-1, cell.state_size), rows, rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind", CELL_KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_step_preserves_dtype(kind: str, dtype: torch.dtype) -> None:
    cell = make_cell(kind, 3, 2)
    params = {k: v.to(dtype) for k, v in cell.init_params(torch.Generator().manual_seed(1)).items()}
    out = cell.step(params, torch.zeros(cell.state_size, dtype=dtype), torch.ones(2, dtype=dtype))
    assert out.dtype == dtype


@pytest.mark.parametrize("kind", ["elman-tanh", "linear", "lstm", "gru"])
def test_analytic_cells_run_in_complex(kind: str) -> None:
    cell = make_cell(kind, 3, 2)
    assert cell.analytic
    params = {k: v.to(torch.complex128) for k, v in cell.init_params(torch.Generator().manual_seed(2)).items()}
    s = torch.full((cell.state_size,), 0.1 + 0j, dtype=torch.complex128)
    out = cell.step(params, s, torch.ones(2, dtype=torch.complex128))
    real = cell.step({k: v.real for k, v in params.items()}, s.real, torch.ones(2))
    torch.testing.assert_close(out.real, real)
    assert float(out.imag.abs().max()) == 0.0


def test_relu_is_not_analytic() -> None:
    assert not ElmanCell(2, 1, "relu").analytic
    assert ElmanCell(2, 1, "tanh").analytic


def test_lstm_observes_h() -> None:
    cell = LSTMCell(3, 2)
    s = torch.arange(6.0)
    assert torch.equal(cell.observe(s), s[3:])
    assert cell.state_size == 6 and cell.observed_size == 3


def test_param_shapes_and_layout() -> None:
    for cell, p in [
        (ElmanCell(4, 2), 4 * 4 + 4 * 2 + 4),
        (LinearCell(3, 1), 9 + 3 + 3),
        (LSTMCell(2, 3), 4 * 2 * 2 + 4 * 2 * 3 + 8),
        (GRUCell(2, 2), 3 * 2 * 2 * 2 + 6),
        (InfluenceBalancingCell(5, 2), 1),
    ]:
        lay = ParamLayout.from_shapes(cell.param_shapes())
        assert lay.size == p


def test_influence_balancing_equilibrium_derivative() -> None:
    """UORO §4: at equilibrium ∂s¹/∂θ = 4p − 2n (here via autograd through 400 steps)."""
    for n, p in [(5, 2), (23, 10), (8, 8)]:
        problem, theta = influence_balancing_problem(n=n, p=p, T=400)
        th = theta.clone().requires_grad_(True)
        s1 = problem.rollout(th)[-1, 0]
        (g,) = torch.autograd.grad(s1, th)
        assert abs(float(g) - (4 * p - 2 * n)) < 1e-9


def test_influence_balancing_matrix() -> None:
    A = InfluenceBalancingCell(4, 1).matrix(torch.float64)
    expect = torch.tensor([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0.5, 0.5], [0, 0, 0, 0.5]])
    assert torch.equal(A, expect)


@pytest.mark.parametrize("bad", [dict(n=0, d=1), dict(n=2, d=-1), dict(n=2.5, d=1)])
def test_bad_sizes_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgument, match="invalid argument"):
        ElmanCell(**bad)  # type: ignore[arg-type]


def test_bad_activation_and_signs() -> None:
    with pytest.raises(InvalidArgument, match="activation"):
        ElmanCell(2, 1, "sigmoid")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="p="):
        InfluenceBalancingCell(3, 4)
    with pytest.raises(InvalidArgument, match="kind"):
        make_cell("transformer", 2, 2)
