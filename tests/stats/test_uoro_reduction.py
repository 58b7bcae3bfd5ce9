"""Cooijmans & Martens's variance-reduction experiment (claim ``uoro.variance-reduction-optimal``): the exact side
(identities of the post, the optimum, the estimator against its exact moments), the check and its controls."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from theory.catalog import get_claim
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.estimators.framework import FrameworkUORO
from verify.impl.mutants import get
from verify.run.check import run_check
from verify.uoro.cases import problem_case
from verify.uoro.framework import (
    exact_moments,
    framework_terms,
    matrix_power,
    measure,
    optimal_alpha,
    optimal_coefficients,
    reduction_setup,
)
from verify.verdict import Verdict

CLAIM = "uoro.variance-reduction-optimal"


def _case(seed: int = 0):  # type: ignore[no-untyped-def]
    return problem_case("elman-tanh", 3, 5, seed, 520)


@pytest.mark.parametrize("form", ["post", "algorithm-1"])
def test_identities_and_exact_mean(form: str) -> None:
    """V(α, I) = tr(B) tr(I), V(α, B^{-1/4}) = tr(B^{1/2})², E Ĝ = g, to round-off (the post's printed B)."""
    terms = framework_terms(_case())
    coef = optimal_coefficients(terms, form)
    n = terms.b.shape[2]
    at_i = exact_moments(terms, coef.schedule(np.eye(n)), form, "gaussian")
    at_opt = exact_moments(terms, coef.schedule(), form, "gaussian")
    assert at_i.V == pytest.approx(n * np.trace(coef.B), rel=1e-12)
    assert at_opt.V == pytest.approx(np.trace(matrix_power(coef.B, 0.5)) ** 2, rel=1e-12)
    np.testing.assert_allclose(at_opt.mean, terms.g, rtol=0, atol=1e-12 * np.abs(terms.g).max())
    # c does not depend on Q under Gaussian noise: V is the whole Q-dependent part
    assert at_i.c == pytest.approx(at_opt.c, rel=1e-10)
    # alternation never increases V, and the optimum beats Q0 = I at the same alpha (Cauchy-Schwarz)
    h = coef.history
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(h))
    assert at_opt.V <= at_i.V


def test_optimal_alpha_is_a_minimum() -> None:
    """Perturbing the optimal α (for fixed Q0 = I) never lowers V (convex in log α²)."""
    terms = framework_terms(_case(1))
    n, T = terms.b.shape[2], terms.b.shape[0]
    a = optimal_alpha(terms, np.eye(n), "algorithm-1")
    best = exact_moments(terms, a[:, None, None] * np.eye(n)[None], "algorithm-1").V
    rng = np.random.default_rng(0)
    for _ in range(5):
        b = a * np.exp(0.1 * rng.standard_normal(T))
        assert exact_moments(terms, b[:, None, None] * np.eye(n)[None], "algorithm-1").V >= best * (1 - 1e-9)


@pytest.mark.parametrize("noise", ["rademacher", "gaussian"])
def test_estimator_matches_its_exact_variance(noise: str) -> None:
    """The recursion's measured mean and variance agree with the closed form (z within 4.5; level ~1e-5 each)."""
    case = _case(2)
    setup = reduction_setup(case, noise=noise)
    c = setup.coefficients
    est = FrameworkUORO(torch.tensor(c.alpha), torch.tensor(c.Q0), noise=noise)
    (m,) = measure([est], case, 6000, torch.Generator().manual_seed(3))
    pred = setup.predicted["optimal alpha, Q0 = B^(-1/4)"]
    assert abs(m.mean() - pred) / m.se() < 4.5
    assert float(m.bias_z.abs().max()) < 5.0


def test_bad_schedule_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="alpha"):
        FrameworkUORO(torch.tensor([1.0, -1.0], dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    with pytest.raises(InvalidArgument, match="Q0"):
        FrameworkUORO(torch.ones(2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64))
    with pytest.raises(InvalidArgument, match="alpha, Q0"):
        FrameworkUORO(torch.ones(2, dtype=torch.float64))
    with pytest.raises(InvalidArgument, match="form"):
        FrameworkUORO(form="nope")


def test_check_passes_with_controls_failing() -> None:
    res = run_check(get_claim(CLAIM), RunConfig(seed=0))
    assert res.verdict is Verdict.PASS, res.summary
    assert [c.observed for c in res.controls] == ["FAIL", "FAIL"]
    assert res.data["ratio_vs_plain"] < 1 and res.data["ratio_vs_greedy"] < 1
    assert res.data["figures"][0]["kind"] == "line"


@pytest.mark.parametrize(
    ("mutant", "failed"),
    [("uoro.framework-q0-inverted", "prediction"), ("uoro.framework-q-transposed", "unbiased")],
)
def test_broken_optimal_variant_fails(mutant: str, failed: str) -> None:
    """The harness rerun with a broken framework estimator FAILs, for the reason the mutant is built to show."""
    cfg = RunConfig(seed=0, implementations=get(mutant).implementations, options={"controls": False})
    res = run_check(get_claim(CLAIM), cfg)
    assert res.verdict is Verdict.FAIL
    assert res.data["tests"][failed] is False
    assert not res.findings  # a broken implementation is not a finding about the paper
