"""rtrl.exact's diagnosis (issue 37): a FAIL says at which step the gradient first leaves its budget and in which
parameter block of θ's layout the error is largest there."""

from __future__ import annotations

import torch

from verify.model.builders import random_problem
from verify.rtrl.exact import locate


def _problem():  # type: ignore[no-untyped-def]
    return random_problem("elman-tanh", n=3, d=2, T=5, generator=torch.Generator().manual_seed(0))[0]


def test_locate_names_the_first_step_and_the_block() -> None:
    P = _problem()
    ref = torch.randn(P.T, P.p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    est = ref.clone()
    block = {e.name: e for e in P.layout.entries}["cell.U"]
    est[2, block.slice] += 1e-3  # a wrong dℓ/dU from step t = 3 on
    est[4, block.slice] += 1e-3
    where = locate(est, ref, P, budget=1e-10)
    assert where["first_step"] == 3 and where["block"] == "cell.U"
    assert where["block_errors"]["cell.W"] == 0.0 and where["step_error"] > 1e-10


def test_locate_is_empty_within_the_budget() -> None:
    P = _problem()
    ref = torch.randn(P.T, P.p, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert locate(ref * (1 + 1e-16), ref, P, budget=1e-12) == {}
