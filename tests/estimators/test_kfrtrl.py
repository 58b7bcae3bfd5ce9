"""KF-RTRL (Mujika, Meier & Steger 2018, arXiv:1805.10842): unbiasedness exactly and statistically, mutants, variance.

* the expectation over all 2^(2t) sign patterns (c1, c2 per step) of u_t ⊗ A_t and g̃_t equals exact float64
  RTRL (influence matrices, per-step BPTT gradients) to round-off (≤ 1e-12), tanh and relu, batched or not;
* two wrong Kronecker factors (mutants) are told apart by the same enumeration;
* the statistical unbiasedness test (α = 1e-4, δ = 0.02) passes at n·T = 64;
* the paper's variance claim vs UORO, which is asymptotic in n: measured lower at n = 16, and (the honest
  other side) higher at n = 4 on the same problem family.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.estimators.helpers import small_problem
from verify.errors import InvalidArgument
from verify.estimators import UORO, enumerate_expectation, run_estimator
from verify.estimators.kfrtrl import KFRTRL
from verify.impl.mutants.kfrtrl import KFRTRLNewStateFactor, KFRTRLNoDerivative
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.stats.variance import compare_second_moments, squared_errors
from verify.testing.assertions import assert_unbiased
from verify.testing.strategies import random_problem
from verify.verdict import Verdict

TOL = 1e-12


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(a - b)) / float(torch.linalg.vector_norm(b))


def enum_errors(est: KFRTRL, kind: str, batch: tuple[int, ...], seed: int, T: int = 4) -> tuple[float, float]:
    P, th = random_problem(kind, n=3, d=2, T=T, k=2, batch=batch, generator=torch.Generator().manual_seed(seed))
    E = enumerate_expectation(est, P, th)
    assert E.patterns == 2 ** (2 * T) and E.influence is not None
    return rel(E.gradients, per_step_gradients(P, th)), rel(E.influence, influence_matrices(P, th))


@settings(max_examples=examples(12))
@given(
    kind=st.sampled_from(("elman-tanh", "elman-relu")),
    batch=st.sampled_from(((), (2,))),
    seed=st.integers(0, 2**31 - 1),
)
def test_enumerated_kfrtrl_is_exact(kind: str, batch: tuple[int, ...], seed: int) -> None:
    e_g, e_i = enum_errors(KFRTRL(), kind, batch, seed)
    assert e_g <= TOL and e_i <= TOL


@pytest.mark.parametrize("mutant", [KFRTRLNewStateFactor(), KFRTRLNoDerivative()], ids=lambda m: m.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_enumeration_tells_a_wrong_kronecker_factor(mutant: KFRTRL, seed: int) -> None:
    e_g, e_i = enum_errors(mutant, "elman-tanh", (), seed)
    assert e_g > 1e-3 and e_i > 1e-3  # measured: 0.05 .. 0.2; round-off is 1e-16


def test_unbiased_statistically_at_n_times_T_64() -> None:
    P, th = random_problem("elman-tanh", n=4, d=2, T=16, k=2, generator=torch.Generator().manual_seed(5))
    res = assert_unbiased(KFRTRL(), P, th, alpha=1e-4, delta=0.02, seed=0, max_samples=200_000)
    assert res.verdict is Verdict.PASS


def test_statistical_check_fails_a_wrong_kronecker_factor() -> None:
    P, th = random_problem("elman-tanh", n=4, d=2, T=16, k=2, generator=torch.Generator().manual_seed(5))
    with pytest.raises(AssertionError, match="is biased"):
        assert_unbiased(KFRTRLNewStateFactor(), P, th, alpha=1e-4, delta=0.02, seed=0, max_samples=200_000)


def _variance_ratio(n: int) -> tuple[float, tuple[float, float], float]:
    """E||g̃_T - g_T||² of KF-RTRL over UORO's (Rademacher, rank 1), 2000 draws each, elman-tanh, T = 16."""
    P, th = random_problem("elman-tanh", n=n, d=2, T=16, k=2, generator=torch.Generator().manual_seed(0))
    g = per_step_gradients(P, th)[-1]
    q = [
        squared_errors(run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=2000)[-1], g)
        for est in (KFRTRL(), UORO())
    ]
    c = compare_second_moments(q[0], q[1], alpha=1e-4)
    return c.ratio, c.ratio_ci, c.pvalue


def test_variance_below_uoro_at_n_16() -> None:
    ratio, ci, pvalue = _variance_ratio(16)
    assert ci[1] < 0.5 and pvalue < 1e-4, (ratio, ci)  # measured 0.29 (0.28, 0.31)


def test_variance_claim_is_asymptotic_not_at_n_4() -> None:
    # the paper's claim is asymptotic in n (§5); at n = 4 KF-RTRL is measured noisier than UORO (ratio 1.58)
    ratio, ci, pvalue = _variance_ratio(4)
    assert ci[0] > 1.0 and pvalue < 1e-4, (ratio, ci)


def test_refuses_a_cell_without_the_kronecker_structure() -> None:
    P, th = small_problem("gru")
    with pytest.raises(InvalidArgument, match=r"problem.cell.*Elman"):
        KFRTRL().init(P, th, torch.Generator())


@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_bad_eps_is_named(eps: float) -> None:
    with pytest.raises(InvalidArgument, match="eps"):
        KFRTRL(eps=eps)


def test_supports_names_the_cells_it_is_defined_for() -> None:
    P, _ = small_problem("gru")
    why = KFRTRL().supports(P)
    assert why is not None and "Elman" in why
    Q, _ = small_problem("elman-tanh")
    assert KFRTRL().supports(Q) is None
