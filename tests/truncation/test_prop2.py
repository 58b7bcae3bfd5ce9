"""Prop. 2 machinery: the batched training gradients, the projection and the proof's recurrence."""

from __future__ import annotations

import pytest
import torch

from theory import truncation as tt
from verify.checks import registry
from verify.checks import truncation_stability as stability
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.oracles.bptt import truncated_model_gradient
from verify.oracles.contraction import require_contraction
from verify.testing.strategies import clip_spectral_norm
from verify.truncation import figure1_instance, final_gradient, fixtures, prop2
from verify.truncation.fixtures import TANH_UNSATURATED, UNSATURATED_INPUT_SD, tanh_saturation
from verify.truncation.prop2 import (
    Prop2Setup,
    batched_final_gradient_W,
    degenerate_reasons,
    prop2_experiment,
    prop2_roundoff,
    prop2_train,
)
from verify.verdict import Verdict


def test_batched_gradient_equals_the_reference() -> None:
    g = torch.Generator().manual_seed(0)
    for kind in ("linear", "elman-tanh"):
        insts = [figure1_instance(kind, 5, 4, 20, 0.75, g) for _ in range(3)]
        stk = {
            n: torch.stack([P.layout.unflatten(th)[n] for P, th in insts]) for n in ("cell.W", "cell.U", "readout.V")
        }
        X = torch.stack([P.inputs for P, _ in insts])
        Y = torch.stack([P.targets[-1] for P, _ in insts])
        for start, k in ((0, None), (13, 7)):
            got = batched_final_gradient_W(
                kind == "elman-tanh", stk["cell.W"], stk["cell.U"], stk["readout.V"], X, Y, start
            )
            for j, (P, th) in enumerate(insts):
                ref = final_gradient(P, th) if k is None else truncated_model_gradient(P, th, k, which="final")
                ref_W = P.layout.unflatten(ref)["cell.W"]
                assert torch.allclose(got[j], ref_W, rtol=1e-12, atol=1e-14 * float(ref_W.abs().max()))


def test_projection_onto_the_spectral_ball() -> None:
    g = torch.Generator().manual_seed(1)
    A = 3 * torch.randn(4, 6, 6, generator=g, dtype=torch.float64)
    P = clip_spectral_norm(A, 0.75)
    assert torch.all(torch.linalg.matrix_norm(P, ord=2) <= 0.75 + 1e-12)
    assert torch.allclose(clip_spectral_norm(P, 0.75), P, atol=1e-12)  # idempotent
    B = 3 * torch.randn(4, 6, 6, generator=g, dtype=torch.float64)
    # non-expansive (Euclidean projection onto a convex set)
    assert torch.all(
        torch.linalg.matrix_norm(P - clip_spectral_norm(B, 0.75)) <= torch.linalg.matrix_norm(A - B) + 1e-12
    )


def test_training_satisfies_the_proofs_recurrence_at_every_step() -> None:
    g = torch.Generator().manual_seed(2)
    setup = Prop2Setup(n=6, d=5, T=30, k=6, N=30, runs=2)
    for kind in ("linear", "elman-tanh"):
        insts = [figure1_instance(kind, setup.n, setup.d, setup.T, setup.lam, g) for _ in range(setup.runs)]
        out = prop2_train([p for p, _ in insts], [t for _, t in insts], setup, ("alpha/t", "constant"))
        for sched, r in out.items():
            d, e, b = r["delta"], r["e"], r["beta"]
            prev = torch.zeros(setup.runs, dtype=torch.float64)
            for i in range(setup.N):
                a = setup.alpha / (i + 1) if sched == "alpha/t" else setup.alpha
                # delta_i <= delta_{i-1} + a (beta_i delta_{i-1} + e_i): triangle inequality + projection
                assert torch.all(d[i] <= prev + a * (b[i] * prev + e[i]) + 1e-12 * (1 + prev))
                prev = d[i]
            if sched == "alpha/t":
                kl = setup.k * setup.lam**setup.k
                for j in range(setup.runs):
                    ge, be = float(e[:, j].max()) / kl, max(float(b[:, j].max()), 1e-300)
                    for i in range(1, setup.N + 1):
                        bound = tt.prop2_bound(setup.alpha, ge, be, setup.lam, setup.k, i, "sum")
                        assert float(d[i - 1, j]) <= bound * (1 + 1e-9)


@pytest.mark.parametrize("seed", [55, 85])
def test_prop2_round_off_is_not_a_violation(seed: int) -> None:
    """Issue 27 (200-seed gate sweep): at these seeds a tanh run's truncation error and delta_t were at float64
    round-off (delta_t ~ 2e-14 vs a measured-constant bound of 5e-15) and the check FAILed correct code; with the
    round-off allowance rho_t it PASSes, and the block-restart mutant still exceeds bound + rho_t by >= 1e7 on tanh."""
    res = registry()["truncation.training-prop2"](RunConfig(seed=seed))
    assert res.verdict is Verdict.PASS, res.summary
    assert all(c.ok for c in res.controls)
    rho = prop2_roundoff(Prop2Setup(n=8, d=8, T=40, k=13, N=50, runs=2), 50)
    assert rho[39] == pytest.approx(32 * 40 * 2.0**-53 * 0.75 * 8**0.5) and rho[39] < 1e-12


# ---------------------------------------------------- Fig. 1(b): a tanh instance that is not saturated (issue 24)
_CI = Prop2Setup(n=8, d=8, T=40, k=13, N=50, runs=2)


def test_the_unsaturated_instance_is_the_printed_draws_with_u_rescaled() -> None:
    n, d, T = 8, 8, 40
    (P, th), (Pu, thu) = (
        figure1_instance("elman-tanh", n, d, T, 0.75, torch.Generator().manual_seed(4), input_sd=sd)
        for sd in (None, UNSATURATED_INPUT_SD)
    )
    p, pu = P.layout.unflatten(th), Pu.layout.unflatten(thu)
    assert torch.equal(p["cell.W"], pu["cell.W"]) and torch.equal(P.inputs, Pu.inputs)
    assert torch.allclose(pu["cell.U"], p["cell.U"] * UNSATURATED_INPUT_SD / (2 * d) ** 0.5, rtol=1e-15)
    assert require_contraction(Pu, thu).lam <= 0.75 + 1e-12  # Prop. 2's premise still holds
    printed, unsat = tanh_saturation(P, th), tanh_saturation(Pu, thu)
    assert printed["preactivation_sd"] > 3 and printed["mean_derivative"] < TANH_UNSATURATED  # App. A.5: saturated
    assert unsat["preactivation_sd"] < 1 and unsat["mean_derivative"] > TANH_UNSATURATED
    assert tanh_saturation(*figure1_instance("linear", n, d, T, 0.75, torch.Generator()))["mean_derivative"] == 1.0
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument, match="input_sd"):
            figure1_instance("elman-tanh", n, d, T, 0.75, torch.Generator(), input_sd=bad)


def test_the_degenerate_curve_premise_refuses_the_saturated_instance_alone() -> None:
    """App. A.5's tanh instance at ci sizes: saturated, so its curve is no Fig. 1(b) curve; the rescaled one is."""
    printed = prop2_experiment("elman-tanh", torch.Generator().manual_seed(700), _CI, None).record
    unsat = prop2_experiment(
        "elman-tanh", torch.Generator().manual_seed(700), _CI, None, input_sd=UNSATURATED_INPUT_SD
    ).record
    (why,) = degenerate_reasons("elman-tanh", printed)
    assert "tanh saturated" in why and printed["instance"]["saturated"]
    assert degenerate_reasons("elman-tanh-unsaturated", unsat) == []
    curve = unsat["schedules"]["alpha/t"]["mean_delta"]
    assert min(curve) > 0 and unsat["schedules"]["alpha/t"]["roundoff_margin"] > 1e3
    assert max(curve) > 1e4 * max(printed["schedules"]["alpha/t"]["mean_delta"])
    # a curve identically 0 is refused even where tanh is not saturated; a curve not run is refused
    flat = {**unsat, "schedules": {"alpha/t": {**unsat["schedules"]["alpha/t"], "roundoff_margin": 0.0}}}
    (why,) = degenerate_reasons("x", flat)
    assert "never above the round-off allowance" in why
    assert degenerate_reasons("x", None) == ["x: not run"]


def test_the_saturation_of_the_printed_instance_is_a_finding() -> None:
    setup = _CI
    res = {
        name: prop2_experiment(kind, torch.Generator().manual_seed(700), setup, None, input_sd=sd).record
        for name, kind, sd in (
            ("elman-tanh", "elman-tanh", None),
            ("elman-tanh-unsaturated", "elman-tanh", UNSATURATED_INPUT_SD),
        )
    }
    found = stability._prop2_findings(setup, res, prop2.schedule_maxima(res))
    (sat,) = [f for f in found if "App. A.5" in f]
    assert "tanh saturated" in sat and "U rescaled" in sat
    res["elman-tanh"] = res["elman-tanh-unsaturated"]  # an instance that is not saturated is no finding
    assert not [f for f in stability._prop2_findings(setup, res, prop2.schedule_maxima(res)) if "App. A.5" in f]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prop2_passes_with_an_unsaturated_tanh_curve(seed: int) -> None:
    res = registry()["truncation.training-prop2"](RunConfig(seed=seed))
    assert res.verdict is Verdict.PASS, res.summary
    assert all(c.ok for c in res.controls)
    unsat = res.data["elman-tanh-unsaturated"]
    assert not unsat["instance"]["saturated"] and min(unsat["schedules"]["alpha/t"]["mean_delta"]) > 0
    assert res.data["elman-tanh"]["instance"]["saturated"]  # reported beside it, not judged
    caps = [f["caption"] for f in res.data["figures"]]
    assert len(caps) == 3 and "(not saturated)" in caps[2] and "(saturated)" in caps[1]


def test_prop2_fails_when_its_tanh_curve_is_the_saturated_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check refuses to call a degenerate curve a reproduction: U 'rescaled' to the printed s.d. sqrt(2d) = 4."""
    monkeypatch.setattr(fixtures, "UNSATURATED_INPUT_SD", 4.0)
    res = registry()["truncation.training-prop2"](RunConfig(seed=0))
    assert res.verdict is Verdict.FAIL
    assert "premise (Fig. 1(b)'s curves are curves) NOT MET: elman-tanh-unsaturated: tanh saturated" in res.summary
