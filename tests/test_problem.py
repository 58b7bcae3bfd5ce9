"""The problem model: layout, validation of bad input, conversions."""

from __future__ import annotations

import pytest
import torch

from verify.errors import InvalidArgument, VerifyError
from verify.model.cells import ElmanCell, LSTMCell
from verify.model.losses import LinearReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.params import ParamLayout
from verify.model.problem import Problem
from verify.testing.strategies import random_problem


def _problem(T: int = 5, **over: object) -> Problem:
    cell = ElmanCell(3, 2)
    kw: dict[str, object] = dict(
        cell=cell,
        readout=LinearReadout(3, 2),
        loss=SquaredError(),
        inputs=torch.zeros(T, 2),
        targets=torch.zeros(T, 2),
        s0=torch.zeros(3),
    )
    kw.update(over)
    return Problem(**kw)  # type: ignore[arg-type]


def test_layout_is_inspectable() -> None:
    P = _problem()
    assert P.layout.names == ("cell.W", "cell.U", "cell.b", "readout.V", "readout.c")
    assert P.p == 9 + 6 + 3 + 6 + 2
    assert P.layout["cell.U"].slice == slice(9, 15)
    text = P.layout.describe()
    assert "cell.W" in text and "p = 26" in text
    theta = torch.arange(float(P.p))
    views = P.layout.unflatten(theta)
    assert torch.equal(views["cell.b"], torch.tensor([15.0, 16.0, 17.0]))
    assert torch.equal(P.layout.flatten(views), theta)


def test_duplicate_names_refused() -> None:
    with pytest.raises(InvalidArgument, match="duplicate"):
        ParamLayout.from_shapes([("a", (1,)), ("a", (2,))])


def test_losses_sum_over_batch() -> None:
    gen = torch.Generator().manual_seed(0)
    P, th = random_problem("gru", batch=(3,), generator=gen, T=4)
    per = [P.with_sequence(P.inputs[:, i], P.targets[:, i], P.s0[i]).losses(th) for i in range(3)]
    torch.testing.assert_close(P.losses(th), sum(per))


def test_class_labels_become_one_hot() -> None:
    cell = LSTMCell(2, 1)
    P = Problem(
        cell, LinearReadout(2, 3), SoftmaxCrossEntropy(), torch.zeros(4, 1), torch.tensor([0, 2, 1, 2]), torch.zeros(4)
    )
    assert P.targets.shape == (4, 3) and P.targets.dtype == torch.float64
    assert torch.equal(P.targets.argmax(-1), torch.tensor([0, 2, 1, 2]))


@pytest.mark.parametrize(
    ("over", "argument"),
    [
        (dict(inputs=torch.full((5, 2), float("nan"))), "inputs"),
        (dict(targets=torch.tensor([[float("inf"), 0.0]] * 5)), "targets"),
        (dict(s0=torch.tensor([0.0, float("nan"), 0.0])), "s0"),
        (dict(inputs=torch.zeros(5, 3)), "inputs"),
        (dict(targets=torch.zeros(5, 4)), "targets"),
        (dict(s0=torch.zeros(4)), "s0"),
        (dict(s0=torch.zeros(3, dtype=torch.float32)), "s0"),
        (dict(inputs=torch.zeros(5, 2, dtype=torch.int64)), "inputs"),
    ],
)
def test_bad_problem_input_names_the_argument(over: dict[str, object], argument: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        _problem(**over)
    assert info.value.argument == argument
    assert argument in str(info.value)


def test_bad_labels_refused() -> None:
    with pytest.raises(InvalidArgument, match="targets"):
        Problem(
            ElmanCell(2, 1),
            LinearReadout(2, 3),
            SoftmaxCrossEntropy(),
            torch.zeros(3, 1),
            torch.tensor([0, 3, 1]),
            torch.zeros(2),
        )


@pytest.mark.parametrize("theta", [torch.zeros(5), torch.zeros(26, 1), torch.full((26,), float("nan")), "zeros"])
def test_bad_theta(theta: object) -> None:
    P = _problem()
    with pytest.raises(InvalidArgument, match="theta"):
        P.check_theta(theta)


def test_errors_share_one_hierarchy() -> None:
    assert issubclass(InvalidArgument, VerifyError) and issubclass(InvalidArgument, ValueError)


def test_to_and_slice() -> None:
    gen = torch.Generator().manual_seed(3)
    P, _ = random_problem("lstm", generator=gen, T=6)
    P32 = P.to(torch.float32)
    assert P32.dtype == torch.float32 and P32.targets.dtype == torch.float32
    sub = P.slice(2, 5)
    assert sub.T == 3 and torch.equal(sub.inputs, P.inputs[2:5])
    with pytest.raises(InvalidArgument, match="start/stop"):
        P.slice(4, 2)
