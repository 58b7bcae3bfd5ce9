"""Where a detected UORO bias lies (issue 37): the sample mean per parameter block as a multiple of the truth, and
the part of Tallec & Ollivier 2017, eq. (5)-(6) it points at -- checked on the toolkit's mutants and on a UORO
written elsewhere (tests/trial) whose θ̃ draws its own ν' (no noise hook: only the statistical test can judge it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from verify.checks.uoro_common import mutant
from verify.impl.loader import load_object
from verify.uoro.cases import problem_case
from verify.uoro.unbiased import block_ratios, claim_options, unbiased_family

CASE = problem_case("elman-tanh", 4, 16, 0, 410)
TRIAL = Path(__file__).resolve().parents[1] / "trial" / "impls"


def _family(est: object, seed: int = 0) -> str:
    res = unbiased_family(
        est,  # type: ignore[arg-type]
        CASE,
        (2, 9, 16),
        claim_options(1e-3),
        torch.Generator().manual_seed(seed),
        40_000,
        influence_steps=(16,),
    )
    assert res.failed, res.summary()
    assert res.summary().count(res.extra["diagnosis"]) == 1  # the FAIL's summary carries it
    return str(res.extra["diagnosis"])


def test_block_ratios_are_the_projection_on_the_truth_and_skip_zero_blocks() -> None:
    P = CASE.problem
    g = torch.randn(P.p, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    cell = P.layout.entries[0]
    g[cell.slice] = 0.0
    err = torch.zeros(P.p, dtype=torch.float64)
    other = P.layout.entries[1]
    err[other.slice] = -0.5 * g[other.slice]  # that block's mean is half its truth
    r = block_ratios(err, g, P)
    assert cell.name not in r
    assert r[other.name] == pytest.approx(0.5)
    assert all(v == pytest.approx(1.0) for k, v in r.items() if k != other.name)


def test_an_independent_nu_for_theta_tilde_is_named() -> None:
    """θ̃ updated with a second draw ν' (Gaussian, drawn by the step itself): E[s̃ θ̃ᵀ] = 0, so E g̃ ~ 0 on the
    cell while the readout's is exact."""
    obj, _ = load_object("trial", f"{TRIAL / 'torchfunc_uoro.py'}:TrialTorchFuncUOROFreshNu")
    words = _family(obj)
    assert "E g~ ~ 0 on the cell's parameters" in words and "nu'" in words, words


@pytest.mark.parametrize("seed", [0, 1])
def test_a_noise_of_the_wrong_variance_is_a_scale_not_the_shared_nu(seed: int) -> None:
    words = _family(mutant("uoro.noise-gaussian-variance", "test"), seed)
    assert "a scale, not a direction" in words and "E[nu nu^T] != I" in words, words
    assert "nu'" not in words


@pytest.mark.parametrize("name", ["uoro.noise-reused", "uoro.theta-tilde-scaled", "uoro.rho1-asymmetric"])
def test_other_biases_get_the_ratios_without_a_wrong_pointer(name: str) -> None:
    words = _family(mutant(name, "test"))
    assert words.startswith("the mean per block as a multiple of the truth in ")
    assert "nu'" not in words and "a scale, not a direction" not in words, words
