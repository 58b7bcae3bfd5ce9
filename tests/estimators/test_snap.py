"""SnAp-n (Menick et al. 2021, arXiv:2006.07232, §3) against exact float64 RTRL.

The defining property, both ways: SnAp-n equals RTRL (relative error <= 1e-12 per step, float64) where
its n-step pattern keeps every entry RTRL can fill -- a diagonal recurrence with n = 1, a dense ``W``
with n >= 2, a directed ring of H units with n >= H (full fill-in), and the first n steps for any
``W`` -- and differs (a measured bias far above round-off) where the pattern is not closed. The
mutants of :mod:`verify.impl.mutants.snap` must fail the side that can see them.

Budget: every estimate here is a handful of float64 products and sums of well-scaled terms
(T <= 8, ‖W‖ ~ 1): RTRL itself meets ``rtrl.exact`` at 1e-11, and SnAp's masked entries of RTRL
are structural zeros, so the two differ only by round-off (measured <= 2e-16); 1e-12 leaves
four orders of margin. "Biased" means a relative error above 1e-6, six orders above that budget.
"""

from __future__ import annotations

import pytest
import torch

from tests.estimators.helpers import small_problem
from verify.errors import InvalidArgument
from verify.estimators import RTRL, run_estimator
from verify.estimators.snap import (
    SnAp,
    bias_sweep,
    connectivity_of,
    relative_bias,
    snap_pattern,
    sparse_elman_problem,
)
from verify.impl.mutants.snap import SnApNoMask, SnApShortPattern, SnApTransposedPattern
from verify.model.builders import influence_balancing_problem
from verify.model.problem import Problem

EXACT = 1e-12  # float64 round-off budget (module docstring)
BIASED = 1e-6  # a difference six orders above it
CELLS = ("elman-tanh", "linear", "gru", "lstm")
H = 4  # units that feed the gates


def _with_w(kind: str, C: torch.Tensor, T: int = 8, seed: int = 0) -> tuple[Problem, torch.Tensor]:
    """A random problem of ``kind`` whose recurrent weights keep only the entries of ``C`` (H×H, every gate)."""
    P, th = small_problem(kind, n=H, T=T, seed=seed)
    e = P.layout["cell.W"]
    W = th[e.slice].reshape(e.shape) * C.to(th.dtype).repeat(e.shape[0] // H, 1)
    th = th.clone()
    th[e.slice] = W.reshape(-1)
    return P, th


def _rel_err(est: SnAp, P: Problem, th: torch.Tensor) -> torch.Tensor:
    """Per-step ‖g̃_t − g_t‖/‖g_t‖ against RTRL."""
    return relative_bias(est, P, th).per_step


DIAG = torch.eye(H)
DENSE = torch.ones(H, H)
RING = torch.roll(torch.eye(H), 1, 0)  # unit i reads unit i-1: directed, not symmetric
RANDOM = (torch.rand(H, H, generator=torch.Generator().manual_seed(5)) < 0.4).float()


@pytest.mark.parametrize("kind", CELLS)
def test_snap1_is_exact_on_a_diagonal_recurrence(kind: str) -> None:
    P, th = _with_w(kind, DIAG)
    assert float(_rel_err(SnAp(1), P, th).max()) <= EXACT


@pytest.mark.parametrize("kind", CELLS)
@pytest.mark.parametrize("order", [2, 3])
def test_snap_n_ge_2_is_exact_on_a_dense_recurrence(kind: str, order: int) -> None:
    P, th = _with_w(kind, DENSE)
    assert float(_rel_err(SnAp(order), P, th).max()) <= EXACT


@pytest.mark.parametrize("kind", CELLS)
def test_snap_is_exact_at_full_fill_in_and_biased_below_it(kind: str) -> None:
    """Directed ring of H units: the pattern fills in after H − 1 steps, so SnAp-n is exact iff n >= H."""
    P, th = _with_w(kind, RING)
    C = connectivity_of(P, th)
    for order in range(1, H + 2):
        closed = torch.equal(snap_pattern(P, C, order), snap_pattern(P, C, order + 1))
        err = float(_rel_err(SnAp(order), P, th).max())
        assert closed == (order >= H), order
        if order >= H:
            assert err <= EXACT, (order, err)
        else:
            assert err > BIASED, (order, err)


@pytest.mark.parametrize("kind", CELLS)
@pytest.mark.parametrize("C", [RING, RANDOM, DENSE], ids=["ring", "random", "dense"])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_snap_n_is_exact_at_the_first_n_steps_for_any_w(kind: str, C: torch.Tensor, order: int) -> None:
    P, th = _with_w(kind, C)
    assert float(_rel_err(SnAp(order), P, th)[:order].max()) <= EXACT


def test_snap1_is_biased_on_a_dense_recurrence_and_the_bias_is_measured() -> None:
    P, th = _with_w("elman-tanh", DENSE)
    m = relative_bias(SnAp(1), P, th)
    assert float(m.per_step[0]) <= EXACT  # the first step is exact
    assert float(m.per_step[1:].min()) > BIASED and m.total > BIASED
    assert -1.0 <= m.cosine < 1.0


def test_the_patterns() -> None:
    P, th = _with_w("elman-tanh", RING)
    C = connectivity_of(P, th)
    cell = [e for e in P.layout if e.name.startswith("cell.")]
    ncell = sum(e.size for e in cell)
    M1 = snap_pattern(P, C, 1)
    assert M1[:, :ncell].sum(0).eq(1).all()  # SnAp-1: one unit per cell parameter
    assert not M1[:, ncell:].any()  # readout parameters touch no state unit
    W = P.layout["cell.W"]
    # W[i, i-1] (edge i-1 -> i) reaches unit i at one step and unit i+1 at two
    col = W.offset + 2 * H + 1  # W[2, 1]
    assert M1[:, col].nonzero().flatten().tolist() == [2]
    assert snap_pattern(P, C, 2)[:, col].nonzero().flatten().tolist() == [2, 3]
    # LSTM: a gate row reaches c_k and h_k
    PL, thL = _with_w("lstm", DIAG)
    ML = snap_pattern(PL, connectivity_of(PL, thL), 1)
    assert ML[:, PL.layout["cell.b"].offset].nonzero().flatten().tolist() == [0, H]


# ------------------------------------------------------------------ mutants, both sides
def test_transposed_pattern_mutant_fails_exactness_on_a_directed_w() -> None:
    P, th = _with_w("elman-tanh", RING)
    assert float(_rel_err(SnApTransposedPattern(2), P, th)[:2].max()) > BIASED  # first-n-steps test
    # at full fill-in a strongly connected W fills every entry either way: that test cannot see it
    assert float(_rel_err(SnApTransposedPattern(H), P, th).max()) <= EXACT
    Pd, thd = _with_w("elman-tanh", DENSE)
    assert float(_rel_err(SnApTransposedPattern(2), Pd, thd).max()) <= EXACT  # symmetric pattern: invisible


def test_short_pattern_mutant_fails_exactness() -> None:
    P, th = _with_w("elman-tanh", DENSE)
    assert float(_rel_err(SnApShortPattern(2), P, th).max()) > BIASED  # dense, n = 2
    Pd, thd = _with_w("elman-tanh", DIAG)
    assert float(_rel_err(SnApShortPattern(1), Pd, thd).max()) > BIASED  # diagonal, n = 1


def test_no_mask_mutant_passes_exactness_and_fails_the_bias_test() -> None:
    P, th = _with_w("elman-tanh", RING)
    assert float(_rel_err(SnApNoMask(1), P, th).max()) <= EXACT  # it is RTRL: exactness cannot see it
    assert float(_rel_err(SnAp(1), P, th).max()) > BIASED  # the correct SnAp-1 is biased here ...
    assert float(_rel_err(SnApNoMask(1), P, th)[1:].min()) <= BIASED  # ... the mutant is not: caught


# ------------------------------------------------------------------ bias sweep, bad input
def test_bias_sweep_rows() -> None:
    rows = bias_sweep(orders=(1, 2), lengths=(4,), radii=(0.5, 1.2), n=5, seeds=1,
                      generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert len(rows) == 4
    for r in rows:
        assert r["bias_total"] <= EXACT if r["closed"] else r["bias_total"] > BIASED
        assert -1.0 <= r["cosine"] <= 1.0 + 1e-15


def test_sparse_elman_problem_has_the_radius() -> None:
    P, th = sparse_elman_problem(n=6, T=3, radius=0.8, density=0.3, generator=torch.Generator().manual_seed(1))
    W = P.cell_params(th)["W"]
    assert abs(float(torch.linalg.eigvals(W).abs().max()) - 0.8) < 1e-12


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidArgument, match="order"):
        SnAp(0)
    P, _ = small_problem("elman-tanh")
    with pytest.raises(InvalidArgument, match="connectivity"):
        snap_pattern(P, torch.ones(2, 2, dtype=torch.bool), 1)
    with pytest.raises(InvalidArgument, match="density"):
        sparse_elman_problem(n=3, T=2, radius=0.5, density=1.5, generator=torch.Generator())
    Pi, thi = influence_balancing_problem(n=3, p=2, T=2)
    with pytest.raises(InvalidArgument, match="SnAp"):
        SnAp(1).init(Pi, thi, torch.Generator())


def test_snap_matches_rtrl_on_a_batch() -> None:
    P, th = small_problem("gru", batch=(2,), n=H, T=4)
    R = run_estimator(RTRL(), P, th, torch.Generator())
    S = run_estimator(SnAp(2), P, th, torch.Generator())  # dense W: exact
    assert float(((S - R).norm(dim=-1) / R.norm(dim=-1)).max()) <= EXACT


class _BiasOff:
    """SnAp-1 whose estimate of the ``block``'s gradient is off by a fixed amount from step 2 on (a stand-in for a
    bug confined to one parameter block)."""

    def __init__(self, block: str) -> None:
        self.block, self.inner, self.name = block, SnAp(1), f"snap1-off-in-{block}"

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> object:
        return self.inner.init(problem, theta, rng, samples=samples)

    def step(self, problem: Problem, theta: torch.Tensor, state: object, t: int, rng: torch.Generator):  # type: ignore[no-untyped-def]
        state, g = self.inner.step(problem, theta, state, t, rng)
        if t >= 2:
            g = g.clone()
            g[:, problem.layout[self.block].slice] += 0.1
        return state, g


@pytest.mark.parametrize("block", ["cell.b", "cell.U"])
def test_the_largest_error_is_located_in_its_block_and_step(block: str) -> None:
    """A wrong estimate says where it is wrong: the step of the largest error and, at it, the block (issue 37)."""
    P, th = _with_w("elman-tanh", DIAG)
    m = relative_bias(_BiasOff(block), P, th)
    assert m.per_block is not None and set(m.per_block) == {e.name for e in P.layout.entries}
    step, where = m.worst()  # type: ignore[misc]
    assert where == block and step >= 2
    assert m.worst(1) is not None and float(m.per_step[0]) <= EXACT  # step 1 untouched: exact there
    assert relative_bias(SnAp(1), P, th).worst() is not None  # defined for a correct estimate too (round-off)


def test_the_exactness_check_names_the_block_of_a_wrong_snap() -> None:
    from theory.catalog import all_claims
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check

    def factory(order: int = 1) -> _BiasOff:
        if order != 1:
            raise NotImplementedError("SnAp-1 only")
        return _BiasOff("cell.b")

    res = run_check(
        all_claims()["rtrl.snap-exactness"], RunConfig(implementations=DEFAULT.with_part("rtrl", "snap", factory))
    )
    assert res.verdict.value == "FAIL", res.summary
    assert "in the block cell.b" in res.summary, res.summary
