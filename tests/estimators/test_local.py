"""RFLO and e-prop (declared biased): exact where their papers say, different elsewhere; the alignment measure.

Tolerances: the exact limits are compared with exact RTRL in float64 at 1e-12 relative (the DESIGN targets;
RTRL itself is checked against BPTT first at 1e-11). "Differs" thresholds (1e-3) are far above round-off and
far below the measured gaps (0.1-0.6 on these problems).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.estimators.helpers import small_problem
from verify.errors import InvalidArgument
from verify.estimators import RTRL, check_contract, run_estimator
from verify.estimators.alignment import alignment_figures, alignment_sweep, measure_alignment
from verify.estimators.guarantee import guarantee_of
from verify.estimators.local import LIMIT_PLANS, RFLO, EProp, limits_suite, transposed_recurrent_trace
from verify.figure_spec import normalize_figure
from verify.impl.mutants import get as get_mutant
from verify.model.builders import leaky_problem
from verify.oracles.bptt import per_step_gradients

EXACT = 1e-12


def _rel(est, P, th):  # per-step relative error vs exact RTRL, shape (T,)
    g = run_estimator(RTRL(), P, th, torch.Generator())[:, 0]
    h = run_estimator(est, P, th, torch.Generator())[:, 0]
    return (h - g).norm(dim=1) / g.norm(dim=1)


def _with_W(P, th, W):
    th = th.clone()
    th[P.layout["cell.W"].slice] = W.reshape(-1)
    return th


def _W(P, th):
    return th[P.layout["cell.W"].slice].reshape(P.n, P.n)


@pytest.mark.parametrize("alpha", [0.3, 1.0])
def test_rtrl_is_the_reference_on_leaky_units(alpha: float) -> None:
    P, th = leaky_problem(n=4, T=6, alpha=alpha, radius=0.9, generator=torch.Generator().manual_seed(1))
    g = run_estimator(RTRL(), P, th, torch.Generator())[:, 0]
    ref = per_step_gradients(P, th)
    assert float(((g - ref).norm(dim=1) / ref.norm(dim=1)).max()) <= 1e-11


@pytest.mark.parametrize("alpha", [0.3, 0.7, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rflo_is_exact_without_recurrent_interaction(alpha: float, seed: int) -> None:
    # Murray 2019: RFLO drops alpha*diag(phi')W J_{t-1}; with W = 0 that term is zero at every step
    P, th = leaky_problem(n=4, T=8, alpha=alpha, radius=0.0, generator=torch.Generator().manual_seed(seed))
    assert float(_rel(RFLO(), P, th).max()) <= EXACT


def test_rflo_is_exact_at_the_first_step_and_biased_after() -> None:
    P, th = leaky_problem(n=4, T=6, alpha=0.5, radius=0.9, generator=torch.Generator().manual_seed(3))
    err = _rel(RFLO(), P, th)
    assert float(err[0]) <= EXACT  # J_0 = 0: the dropped term is zero at t = 1
    assert float(err[1:].min()) > 1e-3


def test_eprop_is_exact_for_independent_units_and_biased_otherwise() -> None:
    P, th = leaky_problem(n=4, T=8, alpha=0.5, radius=0.9, generator=torch.Generator().manual_seed(4))
    diag = _with_W(P, th, torch.diag(torch.tensor([0.9, -0.5, 0.3, 0.7], dtype=torch.float64)))
    assert float(_rel(EProp(), P, diag).max()) <= EXACT  # dF/ds diagonal: nothing is dropped
    assert float(_rel(RFLO(), P, diag)[1:].min()) > 1e-3  # RFLO drops the self-connection even then
    assert float(_rel(EProp(), P, th)[1:].min()) > 1e-3  # dense W: e-prop is biased


def test_eprop_equals_rflo_without_self_connections() -> None:
    P, th = leaky_problem(n=4, T=6, alpha=0.4, radius=0.9, generator=torch.Generator().manual_seed(5))
    W = _W(P, th)
    th = _with_W(P, th, W - torch.diag(torch.diag(W)))
    a = run_estimator(EProp(), P, th, torch.Generator())
    b = run_estimator(RFLO(), P, th, torch.Generator())
    assert float((a - b).norm() / b.norm()) <= EXACT


def test_random_feedback() -> None:
    P, th = leaky_problem(n=4, T=6, alpha=0.5, radius=0.0, generator=torch.Generator().manual_seed(6))
    V = P.readout_params(th)["V"]
    sym = run_estimator(RFLO(), P, th, torch.Generator())
    same = run_estimator(RFLO(feedback=V.T.clone()), P, th, torch.Generator())
    assert float((same - sym).norm() / sym.norm()) <= EXACT  # B = W_out^T is symmetric feedback
    B = torch.randn(P.n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(_rel(RFLO(feedback=B), P, th).min()) > 1e-3  # random B: biased even where RFLO is exact
    assert RFLO(feedback=B).name == "rflo-random-B"


@pytest.mark.parametrize(
    "est", [RFLO(immediate=transposed_recurrent_trace), EProp(immediate=transposed_recurrent_trace)]
)
def test_the_transposed_trace_mutant_fails_the_exactness_test(est) -> None:
    P, th = leaky_problem(n=4, T=6, alpha=0.5, radius=0.0, generator=torch.Generator().manual_seed(0))
    assert float(_rel(est, P, th).max()) > 1e-3  # the exactness test above would FAIL it


def test_declared_biased_and_the_cells_they_refuse() -> None:
    assert guarantee_of(RFLO()).kind == "biased" and guarantee_of(EProp()).kind == "biased"
    P, th = small_problem("lstm")
    with pytest.raises(InvalidArgument, match=r"problem.*rate units"):
        RFLO().init(P, th, torch.Generator())
    P, th = leaky_problem(n=3, T=3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match=r"feedback.*\(n, k\) = \(3, 2\)"):
        RFLO(feedback=torch.zeros(2, 2, dtype=torch.float64)).init(P, th, torch.Generator())
    with pytest.raises(InvalidArgument, match="feedback"):
        EProp(feedback=torch.zeros(3))  # type: ignore[arg-type]


@pytest.mark.parametrize("est", [RFLO(), EProp()], ids=lambda e: e.name)
@pytest.mark.parametrize("kind", ["leaky", "elman-tanh", "elman-tanh-batched", "linear"])
def test_contract(est, kind: str) -> None:
    if kind == "leaky":
        P, th = leaky_problem(n=3, T=4, generator=torch.Generator().manual_seed(0))
    elif kind == "elman-tanh-batched":
        P, th = small_problem("elman-tanh", batch=(2,), T=4)
    else:
        P, th = small_problem(kind, T=4)
    check_contract(est, P, th, samples=3)
    for dtype in (torch.float64, torch.float32):
        G = run_estimator(est, P.to(dtype), th.to(dtype), torch.Generator(), samples=2)
        assert G.shape == (P.T, 2, P.p) and G.dtype == dtype


def test_alignment_measure_and_sweep() -> None:
    P, th = leaky_problem(n=4, T=6, radius=0.0, generator=torch.Generator().manual_seed(0))
    a = measure_alignment(RFLO(), P, th)
    assert a.bias <= EXACT and abs(a.cosine - 1) <= EXACT and a.mc_noise == 0.0
    P, th = leaky_problem(n=4, T=6, radius=0.9, generator=torch.Generator().manual_seed(0))
    b = measure_alignment(RFLO(), P, th)
    assert b.bias > 1e-3 and b.cosine < 1 - 1e-6
    rows = alignment_sweep({"rflo": RFLO(), "eprop": EProp()}, ns=(3,), Ts=(5,), radii=(0.0, 0.9), problems=3)
    assert len(rows) == 4
    r0 = [r for r in rows if r.radius == 0.0]
    assert all(r.bias <= EXACT and r.bias_high <= EXACT for r in r0)
    r9 = [r for r in rows if r.radius == 0.9]
    assert all(r.bias_low < r.bias < r.bias_high and r.bias > 1e-3 for r in r9)
    for fig in alignment_figures(rows):
        normalize_figure(fig)
    with pytest.raises(InvalidArgument, match="over"):
        alignment_figures(rows, over="sparsity")
    _ = dataclasses.asdict(rows[0])


# ---------------------------------------------------------------- rtrl.rflo-limits / rtrl.eprop-limits


def _decide(rows):  # the check's decision, on rows of verify.estimators.local.limits_suite
    from verify.checks.exact_cases import bad_cases as _bad

    return not _bad(rows)


@pytest.mark.parametrize(("rule", "est"), [("rflo", RFLO), ("eprop", EProp)])
def test_limits_suite_rows_as_the_theory_says(rule, est) -> None:
    rows = limits_suite(est, rule, torch.Generator().manual_seed(0), alphas=(0.2, 1.0), T=6)
    assert len(rows) == 2 * len(LIMIT_PLANS[rule])
    exact = [r for r in rows if r["expect"] == "exact"]
    biased = [r for r in rows if r["expect"] == "biased"]
    assert exact and biased
    assert max(r["error"] for r in exact) <= EXACT
    assert min(r["error"] for r in biased) > 1e-3  # measured 0.2-0.8, far above the claim's 1e-6
    assert all(r["bias_total"] > 1e-3 and r["cosine"] < 1 for r in biased)
    assert _decide(rows)


@pytest.mark.parametrize(
    ("rule", "name"),
    [
        ("rflo", "rflo.transposed-trace"),
        ("rflo", "rflo.no-leak"),
        ("rflo", "rflo.feedback-through-w"),
        ("eprop", "eprop.transposed-trace"),
        ("eprop", "eprop.no-self-connection"),
    ],
)
def test_limits_suite_rejects_each_mutant(rule: str, name: str) -> None:
    m = get_mutant(name)
    assert m.target == f"rtrl.{rule}" and f"rtrl.{rule}-limits" in m.visible_to
    rows = limits_suite(m.part, rule, torch.Generator().manual_seed(0), alphas=(0.5, 1.0), T=6)
    assert not _decide(rows)


@pytest.mark.parametrize("rule", ["rflo", "eprop"])
def test_limits_suite_notices_an_estimator_that_became_exact_rtrl(rule: str) -> None:
    rows = limits_suite(RTRL, rule, torch.Generator().manual_seed(0), alphas=(0.5,), T=6)
    assert all(r["error"] <= EXACT for r in rows)  # RTRL passes every exact row ...
    assert not _decide(rows)  # ... and is caught by the biased ones


def test_eprop_passed_off_as_rflo_and_back_is_caught() -> None:
    g = torch.Generator().manual_seed(1)
    assert not _decide(limits_suite(EProp, "rflo", g, alphas=(0.5,), T=6))  # exact for diagonal W
    assert not _decide(limits_suite(RFLO, "eprop", g, alphas=(0.5,), T=6))  # biased for diagonal W


def test_limits_suite_bad_rule() -> None:
    with pytest.raises(InvalidArgument, match=r"rule.*rflo, eprop"):
        limits_suite(RFLO, "snap", torch.Generator())


def test_limits_suite_on_the_plain_elman_cell_rows_as_the_theory_says() -> None:
    """The leak-free Elman cell (what an Elman-only implementation declares): the same exact/biased pattern."""
    from verify.estimators.local import limits_suite

    for rule, make in (("rflo", RFLO), ("eprop", EProp)):
        rows = limits_suite(make, rule, torch.Generator().manual_seed(3), cells=("elman-tanh",))
        assert rows and {r["cell"] for r in rows} == {"elman-tanh"}
        assert all((r["error"] <= 1e-12) == (r["expect"] == "exact") for r in rows), rows
    with pytest.raises(InvalidArgument, match=r"cells.*gru"):
        limits_suite(RFLO, "rflo", torch.Generator(), cells=("gru",))


def test_with_guarantee_views_an_undeclared_estimator() -> None:
    from verify.estimators.guarantee import Guarantee, guarantee_of, with_guarantee

    class Bare:
        name = "bare"

        def step(self) -> str:
            return "stepped"

    view, assumed = with_guarantee(Bare(), Guarantee("biased"))
    assert assumed and guarantee_of(view).kind == "biased" and view.step() == "stepped" and view.name == "bare"
    est = RFLO()
    same, assumed = with_guarantee(est, Guarantee("exact"))
    assert same is est and not assumed
