"""UORO §4's "TBPTT requires a truncation above 200": the block TBPTT-k learner, its judge and its sweep.

The learner's per-step derivative is checked against the exact truncated derivative of theory (sympy), its
update against a direct unrolled computation; the judge is tested on runs it must PASS and on runs it must FAIL
(the paper's threshold not met, a control that learned, an incomplete sweep).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from theory.influence_balancing import truncated_derivative
from verify.checks.uoro_truncation import converged, judge_truncation_sweep
from verify.errors import InvalidArgument
from verify.run.sweep.definitions import SweepOptions, get_definition
from verify.uoro.influence_truncation import TruncationGrid, block_derivatives, block_tbptt_run, truncation_grid
from verify.verdict import Verdict


@pytest.mark.parametrize(("n", "p", "k"), [(5, 2, 7), (23, 10, 60)])
def test_block_derivatives_are_the_exact_truncated_derivatives(n: int, p: int, k: int) -> None:
    got = block_derivatives(n, p, k)
    exact = [float(truncated_derivative(n, p, i)) for i in range(1, k + 1)]
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12 * n)


def test_a_block_run_is_eq_8_with_one_update_per_block() -> None:
    n, p, k, eta, steps = 5, 2, 3, 0.01, 7
    A = 0.5 * np.eye(n) + 0.5 * np.eye(n, k=1)
    c = np.array([1.0] * p + [-1.0] * (n - p))
    s, theta, g, losses = np.zeros(n), 0.0, 0.0, []
    for t in range(1, steps + 1):  # unrolled by hand: block position i sees sum_{j<=i} (A^j c)_1
        s = A @ s + theta * c
        e = s[0] - 1.0
        losses.append(0.5 * e * e)
        i = (t - 1) % k
        g += e * sum((np.linalg.matrix_power(A, j) @ c)[0] for j in range(i + 1))
        if i == k - 1:
            theta -= eta / (1 + math.sqrt(t)) * g
            g = 0.0
    out = block_tbptt_run(n, p, k, eta, steps, window=1.0)
    assert out["theta"] == pytest.approx(theta, abs=1e-15)
    assert out["final_loss"] == pytest.approx(float(np.mean(losses)), abs=1e-15)
    assert out["diverged_at"] is None


def test_short_blocks_move_away_and_long_blocks_converge() -> None:
    grid = truncation_grid()
    short = block_tbptt_run(grid.n, grid.p, 10, 1e-3, 20_000)
    long = block_tbptt_run(grid.n, grid.p, 400, 3e-3, 20_000)
    assert not converged(short) and short["theta"] > 0  # the wrong sign: theta* = -1/6
    assert converged(long) and long["theta"] == pytest.approx(-1 / 6, abs=1e-3)


@pytest.mark.parametrize(
    ("call", "arg"),
    [
        (lambda: block_derivatives(23, 10, 0), "k"),
        (lambda: block_derivatives(3, 4, 2), "p"),
        (lambda: block_tbptt_run(23, 10, 5, 0.0, 10), "eta"),
        (lambda: block_tbptt_run(23, 10, 5, 1e-3, 0), "steps"),
        (lambda: block_tbptt_run(23, 10, 5, 1e-3, 10, window=0.0), "window"),
    ],
)
def test_bad_input_names_the_argument(call: Any, arg: str) -> None:
    with pytest.raises(InvalidArgument, match=arg):
        call()


_GRID = TruncationGrid(23, 10, (10, 100, 250), (1e-3, 1e-2), 100)


def _run(final: float, diverged: int | None = None) -> dict[str, Any]:
    return {"final_loss": final, "diverged_at": diverged}


def _values(converging: set[int], control: float = 0.5) -> dict[tuple[int, float, float], dict[str, Any]]:
    out = {
        (k, eta, 1.0): _run(1e-4 if k in converging and eta == 1e-2 else 3.0) for k in _GRID.ks for eta in _GRID.etas
    }
    out.update({(250, eta, -1.0): _run(control) for eta in _GRID.etas})
    return out


def test_the_judge_passes_the_papers_picture() -> None:
    res = judge_truncation_sweep("uoro.ib-truncation-sweep", _GRID, _values({250}), {})
    assert res.verdict is Verdict.PASS and res.data["smallest_k_converged"] == 250 and not res.findings


def test_the_judge_fails_a_threshold_below_200_with_a_finding() -> None:
    res = judge_truncation_sweep("uoro.ib-truncation-sweep", _GRID, _values({100, 250}), {})
    assert res.verdict is Verdict.FAIL and res.data["smallest_k_converged"] == 100
    assert any("k = 100 converges at eta 0.01" in f for f in res.findings)


def test_the_judge_fails_a_learning_control_a_harness_that_never_learns_and_an_incomplete_sweep() -> None:
    res = judge_truncation_sweep("uoro.ib-truncation-sweep", _GRID, _values({250}, control=1e-5), {})
    assert res.verdict is Verdict.FAIL and not res.controls[0].ok
    res = judge_truncation_sweep("uoro.ib-truncation-sweep", _GRID, _values(set()), {})
    assert res.verdict is Verdict.FAIL and "T0 premise" in str(res.reason)
    lost = _values({250})
    del lost[(10, 1e-3, 1.0)]
    assert "incomplete" in judge_truncation_sweep("uoro.ib-truncation-sweep", _GRID, lost, {}).summary


def test_a_diverged_run_never_counts_as_converged() -> None:
    assert not converged(_run(1e-6, diverged=40))


def test_sweep_definition() -> None:
    plan = get_definition("uoro-ib-truncation").build(SweepOptions())
    grid = truncation_grid()
    assert len(plan.cells) == len(grid.ks) * len(grid.etas) + len(grid.etas)
    assert plan.settings["scale"] == "paper"
    with pytest.raises(InvalidArgument, match="--scale"):
        get_definition("uoro-ib-truncation").build(SweepOptions(scale="ci"))
