"""theory.truncation: every sympy-derived bound is re-derived numerically from the proofs' sums.

Miller & Hardt, Lemma 1, Lemma 2, Lemma 3, Prop. 2, Prop. 3, Prop. 4 (App. A). The
numerical side sums the proofs' finite sums directly in floats (no sympy), for finite
T, and compares with the closed forms: finite sums must lie below the closed forms
and approach them as T grows.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import pytest
import sympy as sp

from theory import truncation as tt

VALUES = {
    tt.L_x: 1.3,
    tt.B_x: 0.7,
    tt.L_p: 2.1,
    tt.L_w: 1.9,
    tt.beta_p: 0.8,
    tt.beta_wh: 1.1,
    tt.beta_hh: 0.6,
    tt.beta_hw: 1.4,
    tt.beta_ww: 0.5,
}
LAMS = (0.3, 0.6, 0.9)


def _num(expr: sp.Expr, lam: float, k: int | None = None) -> float:
    sub = {**VALUES, tt.lam: lam}
    if k is not None:
        sub[tt.k] = k
    return float(expr.subs(sub))


def _consts(lam: float) -> tt.TruncationConstants:
    v = {s.name: float(val) for s, val in VALUES.items()}
    return tt.TruncationConstants(
        lam, v["L_x"], v["B_x"], v["L_p"], v["L_w"], v["beta_p"], v["beta_wh"], v["beta_hh"], v["beta_hw"], v["beta_ww"]
    )


@pytest.mark.parametrize("lam", LAMS)
def test_lemma1_from_the_worst_case_recursion(lam: float) -> None:
    # ||h_t|| <= lam ||h_{t-1}|| + L_x B_x, h_0 = 0, iterated; then k contractions
    Lx, Bx = VALUES[tt.L_x], VALUES[tt.B_x]
    r = 0.0
    for _ in range(2000):
        r = lam * r + Lx * Bx
    for k in (0, 1, 4, 9):
        assert _num(tt.lemma1_bound(), lam, k) == pytest.approx(lam**k * r, rel=1e-12)
        assert tt.state_bound(_consts(lam), k) == pytest.approx(lam**k * r, rel=1e-12)


def _lemma2_sums(lam: float, k: int, T: int, printed: bool = False) -> dict[str, float]:
    """The four sums of the proof of Lemma 2, summed directly for finite T."""
    v = {s.name: float(val) for s, val in VALUES.items()}
    Bh = v["L_x"] * v["B_x"] / (1 - lam)

    def gap(s: int) -> float:  # ||h_s - h^k_s|| <= lam^(s - (T-k)) B_h
        return lam ** (s - (T - k)) * Bh

    window = range(T - k + 1, T + 1)
    long_term = v["L_p"] * v["L_w"] * sum(lam ** (T - t) for t in range(1, T - k + 1))
    a = sum(v["beta_p"] * gap(T) * lam ** (T - t) * v["L_w"] for t in window)
    b = sum(v["L_p"] * lam ** (T - t) * v["beta_wh"] * (gap(t) if printed else gap(t - 1)) for t in window)
    if printed:
        c = sum(v["L_p"] * v["L_w"] * v["beta_hh"] * lam**k * Bh / (1 - lam) for t in window)
    else:
        c = sum(
            v["L_p"] * v["L_w"] * sum(v["beta_hh"] * lam ** (T - t - 1) * gap(i) for i in range(t, T)) for t in window
        )
    return {"long_term": long_term, "a": a, "b": b, "c": c}


@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_lemma2_terms_match_the_proofs_sums(lam: float, k: int) -> None:
    terms = tt.lemma2_terms()
    for T in (k + 5, k + 400):
        sums = _lemma2_sums(lam, k, T)
        for name, val in sums.items():
            closed = _num(terms[name], lam, k)
            assert val <= closed * (1 + 1e-12), (name, T)
    # with T large the finite sums reach the closed forms (the tails are what the proof drops)
    sums = _lemma2_sums(lam, k, k + 2000)
    assert sums["long_term"] == pytest.approx(_num(terms["long_term"], lam, k), rel=1e-10)
    assert sums["b"] == pytest.approx(_num(terms["b"], lam, k), rel=1e-12)  # exactly k lam^(k-1) per unit
    # (a) and (c) drop a factor (1 - lam^k) and (1 - lam^(T-t)) respectively
    assert sums["a"] == pytest.approx(_num(terms["a"], lam, k) * (1 - lam**k), rel=1e-10)
    assert sums["c"] <= _num(terms["c"], lam, k)


@pytest.mark.parametrize("lam", LAMS)
def test_printed_exponent_is_one_power_of_lambda_smaller(lam: float) -> None:
    cor, pri = tt.lemma2_terms(), tt.lemma2_terms(printed=True)
    for name in ("b", "c"):
        assert sp.simplify(pri[name] / cor[name] - tt.lam) == 0
    for name in ("long_term", "a"):
        assert sp.simplify(pri[name] - cor[name]) == 0
    sums = _lemma2_sums(lam, 4, 500, printed=True)
    assert sums["b"] == pytest.approx(_num(pri["b"], lam, 4), rel=1e-12)


@pytest.mark.parametrize("lam", LAMS)
def test_gamma_bounds_the_proof_bound_for_every_k(lam: float) -> None:
    c = _consts(lam)
    g = tt.gamma(c)
    ratios = [tt.gradient_bound(c, k) / (k * lam**k) for k in range(1, 80)]
    assert max(ratios) == pytest.approx(g, rel=1e-12)  # attained at k = 1
    assert all(r1 >= r2 * (1 - 1e-12) for r1, r2 in itertools.pairwise(ratios))
    # the explicit formula of the docstring
    v = {s.name: float(val) for s, val in VALUES.items()}
    Bh = v["L_x"] * v["B_x"] / (1 - lam)
    want = (
        v["L_p"] * v["L_w"] / (1 - lam)
        + v["beta_p"] * v["L_w"] * Bh / (1 - lam)
        + v["L_p"] * v["beta_wh"] * Bh / lam
        + v["L_p"] * v["L_w"] * v["beta_hh"] * Bh / (lam * (1 - lam))
    )
    assert g == pytest.approx(want, rel=1e-12)
    assert tt.gradient_bound(c, 3, "gamma") == pytest.approx(want * 3 * lam**3, rel=1e-12)


def test_weakened_gamma_replaces_exactly_the_squared_factors() -> None:
    g, w = tt.lemma2_gamma_terms(), tt.lemma2_gamma_terms(weakened=True)
    for name in ("a", "c"):  # the two (1 - lambda)^-2 parts
        assert sp.simplify(w[name] - g[name] * (1 - tt.lam)) == 0
    for name in ("long_term", "b"):
        assert sp.simplify(w[name] - g[name]) == 0


@pytest.mark.parametrize("lam", LAMS)
def test_tbptt_bound_is_the_long_term_part(lam: float) -> None:
    c = _consts(lam)
    for k in (1, 3, 10):
        direct = VALUES[tt.L_p] * VALUES[tt.L_w] * sum(lam**j for j in range(k, 5000))
        assert tt.tbptt_bound(c, k) == pytest.approx(direct, rel=1e-10)
        assert tt.tbptt_bound(c, k) <= tt.gradient_bound(c, k, "gamma")


@pytest.mark.parametrize("lam", LAMS)
def test_lemma3_beta_from_the_proofs_sums(lam: float) -> None:
    v = {s.name: float(val) for s, val in VALUES.items()}
    geo = sum(lam**j for j in range(5000))
    jsum = sum(j * lam ** (j - 1) for j in range(1, 5000))
    lemma4 = v["L_w"] * geo
    want = (
        v["beta_p"] * lemma4 * v["L_w"] * geo
        + v["L_p"] * geo * (v["beta_wh"] * lemma4 + v["beta_ww"])
        + v["L_p"] * v["L_w"] * jsum * (v["beta_hw"] + v["beta_hh"] * lemma4)
    )
    assert tt.beta(_consts(lam)) == pytest.approx(want, rel=1e-10)
    assert jsum == pytest.approx(1 / (1 - lam) ** 2, rel=1e-10)


@pytest.mark.parametrize(("alpha", "beta", "N"), [(0.01, 3.0, 200), (0.5, 2.0, 50), (1.0, 0.1, 1000)])
def test_prop2_unwinding(alpha: float, beta: float, N: int) -> None:
    # the recurrence of the proof, iterated numerically, stays below both closed forms
    gk = 0.37  # gamma k lambda^k
    d, worst = 0.0, 0.0
    for i in range(1, N + 1):
        d = math.exp(alpha / i * beta) * d + alpha / i * gk
    g, lam, k = gk / (5 * 0.5**5), 0.5, 5
    sharp = tt.prop2_bound(alpha, g, beta, lam, k, N, "sum")
    printed = tt.prop2_bound(alpha, g, beta, lam, k, N, "printed")
    assert d <= sharp * (1 + 1e-12) <= printed * (1 + 1e-12)
    worst = max(worst, d / sharp)
    # the sympy Sum equals the numerical sum form
    expr = tt.prop2_bound_sum().subs({tt.alpha: alpha, tt.beta_s: beta, tt.gamma_s: g, tt.lam: lam, tt.k: k, tt.N: N})
    assert float(expr.doit()) == pytest.approx(sharp, rel=1e-10)
    # the general recurrence (1 + alpha_i beta) is below the exp form
    rec = tt.prop2_recurrence_bound([alpha / i for i in range(1, N + 1)], beta, gk)
    assert rec[-1] <= d * (1 + 1e-12)


def test_prop2_overflow_is_inf_not_an_error() -> None:
    assert tt.prop2_bound(0.01, 10.0, 1e6, 0.75, 35, 200) == math.inf


def test_prop3_closed_form_is_the_iteration() -> None:
    h = 0
    for t in range(1, 40):
        h = 2 * h + (1 if t == 1 else 0)
        assert int(tt.prop3_full_state(2, 1, t)) == h == 2 ** (t - 1)
        assert tt.prop3_truncation_error(2, 1, t) == h


@pytest.mark.parametrize("T", [2, 3, 5, 8])
def test_prop4_eq6_against_direct_derivative_and_finite_differences(T: int) -> None:
    a = sp.Symbol("a")
    assert sp.simplify(tt.prop4_gradient_closed_form(T) - tt.prop4_gradient(T)) == 0
    mpmath.mp.dps = 40
    for av in ("-0.7", "0.4", "1.3", "2.5"):
        x = mpmath.mpf(av)

        def loss(y: mpmath.mpf) -> mpmath.mpf:
            return (sum(y**i for i in range(T)) - 1) ** 2 / 2

        fd = mpmath.diff(loss, x)
        val = tt.prop4_gradient_closed_form(T, sp.Rational(av))
        assert abs(mpmath.mpf(sp.N(val, 40)) - fd) <= mpmath.mpf("1e-30") * abs(fd)
    assert tt.prop4_gradient(T).free_symbols == {a}


def test_constants_validation() -> None:
    with pytest.raises(ValueError, match="contraction factor"):
        tt.TruncationConstants(1.0, 1, 1, 1, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="finite"):
        tt.TruncationConstants(0.5, float("nan"), 1, 1, 1, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="form"):
        tt.gradient_bound(_consts(0.5), 1, "nope")


def test_truncation_length_keyword() -> None:
    """README: ``tt.gradient_bound(c, k=10)``; the pre-0.2 keyword ``k_`` still works, with a warning."""
    c = _consts(0.5)
    for fn in (tt.state_bound, tt.gradient_bound, tt.tbptt_bound):
        assert fn(c, k=10) == fn(c, 10)
        with pytest.warns(DeprecationWarning, match="k_"):
            assert fn(c, k_=10) == fn(c, 10)
        with pytest.raises(TypeError, match="both"):
            fn(c, 3, k_=3)
        with pytest.raises(TypeError, match="missing"):
            fn(c)
        for bad in (-1, -2, 2.5, True):
            with pytest.raises(ValueError, match=f"k={bad!r}"):
                fn(c, k=bad)
    assert tt.gradient_bound(c, k=10, form="gamma") == tt.gradient_bound(c, 10, "gamma")
