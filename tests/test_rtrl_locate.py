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


def test_locate_gives_every_blocks_error_at_every_step_for_the_figure() -> None:
    from verify.figure_spec import normalize_figure
    from verify.report.figures import render_png
    from verify.report.plots.rtrl import located_figure

    P = _problem()
    ref = torch.randn(P.T, P.p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    est = ref.clone()
    block = {e.name: e for e in P.layout.entries}["cell.b"]
    est[1:, block.slice] += 1e-4
    where = locate(est, ref, P, budget=1e-10)
    assert set(where["by_step"]) == {e.name for e in P.layout.entries}
    assert where["by_step"]["cell.b"][0] == 0.0 and all(v > 1e-10 for v in where["by_step"]["cell.b"][1:])
    fig = located_figure({"where": where, "problem": "p"})
    normalize_figure(fig)
    assert render_png(fig)[:4] == b"\x89PNG"
    assert fig["x"] == list(range(1, P.T + 1)) and fig["hlines"][0]["y"] == 1e-10 and "t = 2" in fig["caption"]


def test_the_first_wrong_step_points_at_the_part_of_rtrl() -> None:
    """t = 1: the immediate Jacobian (J_0 = 0, so the influence at t = 1 is dF/dtheta alone); t >= 2 after exact
    steps: the recurrence dF/ds J_(t-1) (Tallec & Ollivier 2017, eq. (4))."""
    from verify.rtrl.exact import located_words, step_hint

    assert "immediate Jacobian dF/dtheta" in step_hint(1) and "recurrence" not in step_hint(1)
    assert "recurrence" in step_hint(2) and "before t = 2" in step_hint(2)
    P = _problem()
    ref = torch.randn(P.T, P.p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    est = ref.clone()
    est[1:, :3] += 1e-3
    words = located_words({"where": locate(est, ref, P, budget=1e-10), "problem": "p"})
    assert "first leaves its budget at step t = 2" in words and words.endswith(step_hint(2))
