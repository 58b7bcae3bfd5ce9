"""The bias-and-alignment measurement (verify.estimators.alignment) and the claim rtrl.bias-alignment.

Known answers: exact RTRL has bias 0 and cosine 1 (round-off: <= 1e-12, the design's float64 target); an estimator
returning -g has cosine -1 and bias 2; one returning 2g has cosine 1 and bias 1 (same tolerance). SnAp-1 and e-prop
keep the same entries of an Elman cell's influence (a unit's own incoming weights, decayed by its own D_ii), so
their measurements agree to round-off; SnAp-2 on a dense W is exact (its pattern is closed). The claim must PASS
on the toolkit's estimators and FAIL on SnAp declared unbiased (the check's negative control, and the kill table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from theory.catalog import all_claims
from verify.checks.rtrl_alignment import CENTER, CONTROL, EXACT, check_bias_alignment, decide
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.estimators import RTRL
from verify.estimators.alignment import (
    AXES,
    GridPoint,
    alignment_figures,
    alignment_sweep,
    axis_sweep,
    cosine_range,
    measure_alignment,
)
from verify.estimators.guarantee import Guarantee
from verify.estimators.kfrtrl import KFRTRL
from verify.estimators.local import EProp
from verify.estimators.snap import SnAp, sparse_elman_problem
from verify.estimators.uoro import UORO
from verify.figure_spec import normalize_figure
from verify.impl.mutants import get as get_mutant
from verify.report.figures import figure_empty_reason, render_png
from verify.run.check import run_check

TOL = 1e-12
_BIASED = Guarantee("biased")


@dataclass(frozen=True)
class _Scaled:
    """RTRL's estimates times ``factor`` (a deterministic estimator with a known bias and cosine)."""

    factor: float
    name: str = "scaled-rtrl"
    guarantee: Guarantee = _BIASED

    def init(self, problem: Any, theta: Any, rng: Any, *, samples: int = 1) -> Any:
        return RTRL().init(problem, theta, rng, samples=samples)

    def step(self, problem: Any, theta: Any, state: Any, t: int, rng: Any) -> Any:
        state, g = RTRL().step(problem, theta, state, t, rng)
        return state, self.factor * g


def _problem(density: float = 0.3, n: int = 5) -> tuple[Any, torch.Tensor]:
    return sparse_elman_problem(n=n, T=6, radius=0.9, density=density, generator=torch.Generator().manual_seed(3))


def test_known_answers_rtrl_minus_g_and_2g() -> None:
    P, th = _problem()
    a = measure_alignment(RTRL(), P, th)
    assert a.bias <= TOL and abs(a.cosine - 1) <= TOL and a.mc_noise == 0.0
    neg = measure_alignment(_Scaled(-1.0), P, th)
    assert abs(neg.cosine + 1) <= TOL and abs(neg.bias - 2) <= TOL
    dbl = measure_alignment(_Scaled(2.0), P, th)
    assert abs(dbl.cosine - 1) <= TOL and abs(dbl.bias - 1) <= TOL


def test_snap1_equals_eprop_and_snap2_exact_on_dense_w() -> None:
    P, th = _problem()
    s1, ep = measure_alignment(SnAp(1), P, th), measure_alignment(EProp(), P, th)
    assert s1.bias > 1e-3  # a sparse W: SnAp-1's pattern is not closed, the bias is real
    assert abs(s1.bias - ep.bias) <= TOL and abs(s1.cosine - ep.cosine) <= TOL
    Pd, thd = _problem(density=1.0)
    assert measure_alignment(SnAp(2), Pd, thd).bias <= TOL
    assert measure_alignment(SnAp(1), Pd, thd).bias > 1e-3


def test_cosine_range_geometry() -> None:
    e1, e2 = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert cosine_range(e1, e1, 0.0) == (1.0, 1.0)
    lo, hi = cosine_range(e1, e1, 0.5)  # the ball reaches the angle asin(1/2) = 30 degrees
    assert abs(lo - math.sqrt(3) / 2) <= TOL and hi == 1.0
    lo, hi = cosine_range(e1, e2, 0.5)  # 90 degrees +- 30
    assert abs(lo + 0.5) <= TOL and abs(hi - 0.5) <= TOL
    assert cosine_range(e1, e1, 1.0) == (-1.0, 1.0)  # the ball holds 0: any direction
    with pytest.raises(InvalidArgument, match="r"):
        cosine_range(e1, e1, -1.0)


def test_stochastic_rows_carry_confidence_balls_and_deterministic_rows_t_intervals() -> None:
    ests = {"uoro": UORO(), "kf": KFRTRL(), "snap1": SnAp(1), "rtrl": RTRL()}
    rows = alignment_sweep(
        ests, ns=(4,), Ts=(5,), radii=(0.9,), densities=(0.3,), cell="elman", problems=3, samples=200
    )
    by = {r.estimator: r for r in rows}
    for label in ("uoro", "kf"):
        r = by[label]
        assert r.interval == "confidence balls" and r.samples == 200 and r.failed == 0
        assert 0.0 <= r.bias_low <= r.bias <= r.bias_high and r.mc_noise > 0
        assert -1.0 <= r.cosine_low <= r.cosine <= r.cosine_high <= 1.0
    s = by["snap1"]
    assert s.interval == "t over problems" and s.samples == 1 and s.mc_noise == 0.0
    assert 0.0 <= s.bias_low < s.bias < s.bias_high and s.bias > 1e-3
    assert by["rtrl"].max_bias <= TOL and decide(rows) == []


def test_axis_sweep_figures_one_line_per_algorithm() -> None:
    ests = {"rtrl": RTRL(), "snap1": SnAp(1), "eprop": EProp()}
    axes = {"n": (3, 5), "density": (0.2, 1.0)}
    rows = axis_sweep(ests, center=GridPoint(5, 5, 0.9, 0.2), axes=axes, problems=2, samples=2)
    assert {r.axis for r in rows} == {"n", "density"} and len(rows) == 3 * 4
    for axis in axes:
        figs = alignment_figures(rows, over=axis)
        assert len(figs) == 2
        for f in figs:
            spec = normalize_figure(f)
            assert figure_empty_reason(spec) is None
            assert [s["x"] for s in spec["series"]] == [list(axes[axis])] * 3
            assert render_png(spec)[:4] == b"\x89PNG"
    with pytest.raises(InvalidArgument, match="no rows vary"):
        alignment_figures(rows, over="T")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"axes": {"sparsity": (0.1,)}}, "axes"),
        ({"axes": {"n": ()}}, "axes"),
        ({"axes": {}}, "axes"),
        ({"axes": {"n": (3,)}, "cell": "lstm"}, "cell"),
        ({"axes": {"density": (0.5,)}, "cell": "leaky"}, "densities"),
        ({"axes": {"n": (3,)}, "samples": 1}, "samples"),
        ({"axes": {"n": (3,)}, "level": 1.0}, "level"),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        axis_sweep({"rtrl": RTRL()}, center=GridPoint(3, 3, 0.5, 1.0), **{"problems": 2, **kwargs})


def test_the_claim_passes_with_figures_and_its_control_fails() -> None:
    res = check_bias_alignment(RunConfig())
    assert res.verdict.value == "PASS", res.summary
    assert [c.observed for c in res.controls] == ["FAIL"]
    figs = [normalize_figure(f) for f in res.data["figures"]]
    assert figs[0]["kind"] == "table" and len(figs) == 1 + 2 * len(AXES)
    for f in figs[1:]:
        assert figure_empty_reason(f) is None and len(f["series"]) == 7
    rows = res.data["rows"]
    exact = [r for r in rows if r["guarantee"] == "exact"]
    assert exact and max(r["max_bias"] for r in exact) <= EXACT
    assert {r["estimator"] for r in rows if r["guarantee"] == "unbiased"} == {"UORO", "KF-RTRL"}
    assert all(r["failed"] == 0 for r in rows)
    center = [r for r in rows if (r["n"], r["T"], r["radius"], r["density"]) == tuple(CENTER)]
    assert {r["estimator"] for r in center} == {"RTRL", "UORO", "KF-RTRL", "SnAp-1", "SnAp-2", "RFLO", "e-prop"}


def test_snap_declared_unbiased_fails_the_claim() -> None:
    m = get_mutant(CONTROL)
    assert m.target == "rtrl.snap" and m.visible_to == ("rtrl.bias-alignment",)
    cfg = RunConfig(implementations=m.implementations, options=(("controls", False),))
    res = run_check(all_claims()["rtrl.bias-alignment"], cfg)
    assert res.verdict.value == "FAIL" and "declared unbiased, bias detected" in res.summary
    # the declaration is the bug: the same estimator declared biased is only measured
    assert run_check(all_claims()["rtrl.snap-exactness"], cfg).verdict.value == "PASS"
