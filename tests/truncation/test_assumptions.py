"""verify.oracles.contraction: the contraction checker (Miller & Hardt eq. (2), §6, Prop. 5) and the bound premises."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given, settings

from tests.conftest import examples
from verify.config import RunConfig
from verify.errors import AssumptionViolated, InvalidArgument
from verify.impl.mutants.truncation import MUTANTS
from verify.oracles.contraction import (
    contraction_certificate,
    require_bound_setting,
    require_contraction,
    require_smooth,
    truncation_constants,
)
from verify.testing.strategies import contractive_problem, contractive_problems, random_problem
from verify.truncation import prop3_problem
from verify.truncation.certificates import checker_suite, contraction_witness, run_checker
from verify.truncation.instances import CertFn


@settings(max_examples=examples(40))
@given(contractive_problems(lam_min=0.05, lam_max=0.99))
def test_certificate_is_the_spectral_norm_and_valid(case) -> None:  # type: ignore[no-untyped-def]
    cert = require_contraction(case.problem, case.theta)
    W = case.problem.cell_params(case.theta)["W"]
    assert cert.lam == pytest.approx(float(torch.linalg.matrix_norm(W, ord=2)), rel=1e-12)
    wit = contraction_witness(case.problem, case.theta, cert, torch.Generator().manual_seed(case.seed))
    assert wit <= cert.lam * (1 + 1e-9)
    assert wit >= 0.999 * cert.lam  # the top-singular-vector pair at x = 0 attains it


def test_non_contractive_is_refused_with_the_measured_lambda() -> None:
    P, th = prop3_problem(2.0, 10)
    with pytest.raises(AssumptionViolated, match="contraction") as exc:
        require_contraction(P, th)
    assert exc.value.measured == pytest.approx(2.0)
    assert contraction_certificate(P, th).contractive is False


def test_relu_contracts_but_is_not_smooth_and_gru_has_no_certificate() -> None:
    g = torch.Generator().manual_seed(0)
    P, th = random_problem("elman-relu", n=3, d=2, T=5, generator=g, scale=0.5)
    cert = contraction_certificate(P, th)
    assert cert.lam == pytest.approx(float(torch.linalg.matrix_norm(P.cell_params(th)["W"], ord=2)))
    with pytest.raises(AssumptionViolated, match="smooth"):
        require_smooth(P)
    P, th = random_problem("gru", n=3, d=2, T=5, generator=g)
    with pytest.raises(AssumptionViolated, match="certificate"):
        contraction_certificate(P, th)


def test_lstm_certificate_is_linf_and_refused_for_the_l2_bounds() -> None:
    suite = {lab: (P, th, exp) for lab, P, th, exp in checker_suite(RunConfig().generator(salt=801))}
    P, th, _ = suite["lstm Prop. 5"]
    cert = contraction_certificate(P, th)
    assert cert.contractive and cert.norm == "linf" and cert.lam < 1 and cert.iterations >= 1
    assert "statement holds" in cert.detail
    with pytest.raises(AssumptionViolated, match="l2"):
        require_contraction(P, th)
    require_contraction(P, th, norm="linf")
    P, th, _ = suite["lstm large W"]
    assert not contraction_certificate(P, th).contractive


def test_bound_setting_premises() -> None:
    g = torch.Generator().manual_seed(1)
    P, th = contractive_problem("elman-tanh", lam=0.5, generator=g)
    require_bound_setting(P, th)
    th2 = th.clone()
    th2[P.layout["cell.b"].slice] = 0.1
    with pytest.raises(AssumptionViolated, match="phi_w"):
        require_bound_setting(P, th2)
    P2 = P.with_sequence(P.inputs, P.targets, s0=torch.ones(P.n, dtype=torch.float64))
    with pytest.raises(AssumptionViolated, match="h_0"):
        require_bound_setting(P2, th)
    Pb, thb = random_problem("linear", n=2, d=1, T=4, batch=(2,), generator=g)
    with pytest.raises(InvalidArgument, match="unbatched"):
        require_bound_setting(Pb, thb)
    Pc, thc = random_problem("linear", n=2, d=1, T=4, loss="cross-entropy", generator=g)
    with pytest.raises(InvalidArgument, match="squared error"):
        require_bound_setting(Pc, thc)


def test_constants_measure_the_instance() -> None:
    g = torch.Generator().manual_seed(2)
    P, th = contractive_problem("linear", lam=0.7, n=3, d=2, T=10, generator=g, input_bound=1.3)
    c = truncation_constants(P, th)
    prm, ro = P.cell_params(th), P.readout_params(th)
    nU = float(torch.linalg.matrix_norm(prm["U"], ord=2))
    nV = float(torch.linalg.matrix_norm(ro["V"], ord=2))
    Bh = nU * 1.3 / 0.3
    assert c.lam == pytest.approx(0.7) and c.B_x == pytest.approx(1.3) and c.L_x == pytest.approx(nU)
    assert c.L_w == pytest.approx((Bh**2 + 1.3**2) ** 0.5)
    resid = float(torch.linalg.vector_norm(ro["c"] - P.targets[-1]))
    assert c.L_p == pytest.approx(nV * (nV * Bh + resid)) and c.beta_p == pytest.approx(nV**2)
    with pytest.raises(InvalidArgument, match="outside"):
        truncation_constants(P, th, omega=(0.5, 10.0))
    with pytest.raises(AssumptionViolated, match="Omega"):
        truncation_constants(P, th, omega=(1.5, 10.0))


def _run_checker(config: RunConfig, certificate: CertFn) -> tuple[bool, list[dict[str, Any]]]:
    """The assumption checker's suite and witnesses as the check draws them (salts 801, 802)."""
    return run_checker(certificate, checker_suite(config.generator(salt=801)), config.generator(salt=802))


def test_checker_suite_and_mutant_certificates() -> None:
    ok, rows = _run_checker(RunConfig(), contraction_certificate)
    assert ok, rows
    for name in ("certificate.spectral-radius", "certificate.linf-norm"):
        m = next(m for m in MUTANTS if m.name == name)
        mok, mrows = _run_checker(RunConfig(), m.part)
        assert not mok
        assert any(r["instance"].startswith("linear non-normal") and not r["ok"] for r in mrows)
