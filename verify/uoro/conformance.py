r"""The UORO under test is Algorithm 1 (Tallec & Ollivier 2017, Algorithm 1, eq. (5)-(6)): its noise law and, under
tabulated noise, its formulas.

The noise: Algorithm 1's "column vector of random signs ±1", read through the noise hook
(:mod:`verify.estimators.noise`) and put to binomial tests. The formulas: with ν tabulated, what Algorithm 1
determines given ν -- s̃_t, θ̃_t (hence the normalizers ρ₀, ρ₁) and g̃_t -- compared with
:func:`verify.oracles.algorithm1.algorithm1_reference` (dense Jacobians) to :data:`CONFORMANCE_BUDGET`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from verify.errors import NotApplicable
from verify.estimators.enumerate import enumerate_expectation
from verify.estimators.noise import factors, require_noise_hook, tabulated
from verify.estimators.uoro import UORO, Gaussian, Rademacher
from verify.model.problem import Problem
from verify.oracles.algorithm1 import StepJacobians, algorithm1_reference
from verify.oracles.algorithm1 import rademacher as _rademacher
from verify.oracles.bptt import per_step_gradients
from verify.oracles.budget import pair_unit, unit_roundoff
from verify.stats import dist
from verify.uoro.cases import Case, jacobians

__all__ = [
    "CONFORMANCE",
    "CONFORMANCE_BUDGET",
    "UNDECLARED_LAW",
    "conformance_budget",
    "conformance_runs",
    "formula_conformance",
    "gtilde_form",
    "noise_law",
    "noise_law_tests",
    "num_or_zero",
    "update_structure",
    "variant_in_expectation",
    "worst_row",
]

#: the claim these computations serve (named in NotApplicable and the noise hook's errors)
CONFORMANCE = "uoro.algorithm-1-conformance"
#: relative error allowed between two float64 evaluations of Algorithm 1 (see the check's docstring)
CONFORMANCE_BUDGET = 1e-12


def conformance_budget(dtype: torch.dtype = torch.float64) -> float:
    """The conformance budget of an estimator computing in ``dtype`` against the float64 reference: the float64
    budget counts ~9000 rounding units u₆₄ (:data:`CONFORMANCE_BUDGET`); at float32 the same count of the pair
    unit (u₃₂ + u₆₄)/2 (:func:`verify.oracles.budget.pair_unit`; :mod:`verify.impl.precision`) -- 2.7e-4, still
    ~1e3 below a formula mistake (which changes results at O(1))."""
    return CONFORMANCE_BUDGET * pair_unit(dtype) / unit_roundoff(torch.float64)


def _binom_p(k: int, n: int) -> float:
    return dist.binomtest_half_p(k, n) if n > 0 else 1.0


def noise_law_tests(
    est: Any, problem: Problem, gen: torch.Generator, samples: int = 64, draws: int = 16
) -> list[tuple[str, float, str]]:
    """Tests of Algorithm 1's "column vector of random signs ±1" on the estimator's noise source.

    ``est`` follows the noise protocol (:mod:`verify.estimators.noise`). Returns (name,
    p-value, detail): support ⊂ {−1, +1} (p = 0 if not), fair signs, and independence
    (sign agreement 1/2) between coordinates, consecutive draws, samples and -- where
    the draw's first axis is the estimator's ``rank`` r > 1 -- pairs.
    """
    hook = require_noise_hook(est, CONFORMANCE)
    noise = hook.noise
    shape = (samples, *hook.noise_shape(problem))
    prev = torch.zeros(shape, dtype=torch.float64)
    xs = []
    for i in range(draws):
        x = noise.draw(gen, shape, torch.float64, torch.device("cpu"), i, prev)
        xs.append(x)
        prev = x
    X = torch.stack(xs)  # (draws, M, *noise_shape)
    out: list[tuple[str, float, str]] = []
    support = bool(((X == 1.0) | (X == -1.0)).all())
    out.append(("support {-1, +1}", 1.0 if support else 0.0, f"values {torch.unique(X)[:6].tolist()}"))
    pos = int((X > 0).sum())
    out.append(("fair signs", _binom_p(pos, X.numel()), f"{pos}/{X.numel()} positive"))

    def agree(a: torch.Tensor, b: torch.Tensor, name: str) -> None:
        k = int((torch.sign(a) == torch.sign(b)).sum())
        out.append((f"independent {name}", _binom_p(k, a.numel()), f"{k}/{a.numel()} equal signs"))

    flat = X.reshape(draws, samples, -1)
    agree(X[1:], X[:-1], "steps")
    agree(flat[:, 1:], flat[:, :-1], "samples")
    if flat.shape[-1] > 1:
        agree(flat[..., 1:], flat[..., :-1], "coordinates")
    rank = int(getattr(est, "rank", 1))
    if rank > 1 and X.dim() > 3 and X.shape[2] == rank:
        agree(X[:, :, 1:], X[:, :, :-1], "pairs")
    return out


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    err = float((a - b).norm() / max(float(b.norm()), 1e-300))
    return err if math.isfinite(err) else math.inf


def _one_draw_per_step(est: Any, hook: Any, P: Problem) -> tuple[int, tuple[int, ...]]:
    """(r, shape): one draw of ``shape`` = r·n signs per step; else NotApplicable (e.g. UORO-T)."""
    T, n = P.T, P.n
    shape = tuple(hook.noise_shape(P))
    per = math.prod(shape)
    if per % n or hook.noise_draws(T) != T:
        raise NotApplicable(
            CONFORMANCE,
            f"{getattr(est, 'name', type(est).__name__)} draws {hook.noise_draws(T)} times of shape {shape} in {T} "
            f"steps; the formula conformance compares one draw of r x n = k*{n} signs per step (UORO-T is checked "
            "by uoro.truncated-unbiased)",
        )
    return per // n, shape


def _worst_errors(
    est: Any,
    case: Case,
    nus: torch.Tensor,
    shape: tuple[int, ...],
    jac: StepJacobians,
    samples: int,
    budget: float = CONFORMANCE_BUDGET,
) -> tuple[dict[str, float], bool, str | None]:
    """Run ``est`` on the tabulated ν; the worst relative errors against Algorithm 1 given ν, whether the
    factors s̃, θ̃ were exposed at every step, and (where they deviate) why (:func:`update_structure`)."""
    P, th = case.problem, case.theta
    T = P.T
    tab_est = tabulated(est, nus.reshape(T, samples, *shape))
    state = tab_est.init(P, th, torch.Generator().manual_seed(0), samples=samples)
    ref = algorithm1_reference(jac, nus)
    worst = {"g": 0.0, "g_post": 0.0, "s_tilde": 0.0, "theta_tilde": 0.0}
    exposed = True
    prev: tuple[torch.Tensor, torch.Tensor] | None = None
    normalizers: str | None = None
    for t in range(1, T + 1):
        state, g = tab_est.step(P, th, state, t, torch.Generator().manual_seed(0))
        worst["g"] = max(worst["g"], _rel_err(g, ref.g[t - 1]))
        worst["g_post"] = max(worst["g_post"], _rel_err(g, ref.g_post[t - 1]))
        f = factors(tab_est, P, state, samples)
        if f is None:
            exposed = False
            continue
        err_s, err_th = _rel_err(f[0], ref.s_tilde[t - 1]), _rel_err(f[1], ref.theta_tilde[t - 1])
        worst["s_tilde"] = max(worst["s_tilde"], err_s)
        worst["theta_tilde"] = max(worst["theta_tilde"], err_th)
        if normalizers is None and max(err_s, err_th) > budget:  # the first step that deviates
            normalizers = update_structure(prev, f, nus[t - 1], jac.J_s[t - 1], jac.J_th[t - 1], t, budget)
        prev = (f[0].to(torch.float64), f[1].to(torch.float64))
    return worst, exposed, normalizers


#: relative residual under which a factor counts as lying in the span of Algorithm 1's two update terms
STRUCTURE_RESIDUAL = 1e-9


def _coefficients(cols: Sequence[torch.Tensor], target: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Least-squares coefficients of ``target`` (M, r, k) in the columns ``cols`` (each (M, r, k)), per (sample,
    pair), and the worst relative residual."""
    A = torch.stack(list(cols), dim=-1)  # (M, r, k, c)
    sol = torch.linalg.lstsq(A, target.unsqueeze(-1)).solution  # (M, r, c, 1)
    fit = (A @ sol).squeeze(-1)
    return sol.squeeze(-1), _rel_err(fit, target)


def update_structure(
    prev: tuple[torch.Tensor, torch.Tensor] | None,
    now: tuple[torch.Tensor, torch.Tensor],
    nu: torch.Tensor,
    J_s: torch.Tensor,
    J_th: torch.Tensor,
    t: int,
    budget: float = CONFORMANCE_BUDGET,
) -> str:
    r"""Why the estimator's s̃_t, θ̃_t differ from Algorithm 1's at their first deviating step ``t``: its own update.

    From the estimator's own s̃_{t-1}, θ̃_{t-1} (``prev``; zeros at t = 1) and ν, Algorithm 1 (Tallec & Ollivier
    2017, eq. (5)-(6)) forms :math:`\tilde s_t = \rho_0 J_s\tilde s_{t-1} + \rho_1\nu` and
    :math:`\tilde\theta_t = \tilde\theta_{t-1}/\rho_0 + \nu^\top J_\theta/\rho_1`. The estimator's factors are
    fitted in those two terms (least squares per sample and pair). In the span, with coefficients (a, b) for s̃
    and (c, d) for θ̃: a·c = 1 and b·d = 1 is Algorithm 1's update with other normalizers (the order is right;
    still unbiased: s̃ θ̃ᵀ keeps its expectation), anything else is named. Out of the span: the update itself
    differs. ``budget``: the conformance budget (float32 code's is wider: so is the residual allowed).
    """
    tol = max(STRUCTURE_RESIDUAL, budget)
    s_now, th_now = now[0].to(torch.float64), now[1].to(torch.float64)
    s_prev = torch.zeros_like(s_now) if prev is None else prev[0]
    th_prev = torch.zeros_like(th_now) if prev is None else prev[1]
    a_col, b_col = s_prev @ J_s.T, nu
    c_col, d_col = th_prev, nu @ J_th
    first = prev is None or float(s_prev.abs().max()) == 0.0
    if first:  # s~_0 = 0, theta~_0 = 0: only the nu terms
        (xs, rs), (xt, rt) = _coefficients([b_col], s_now), _coefficients([d_col], th_now)
        xs, xt = torch.cat([torch.ones_like(xs), xs], -1), torch.cat([torch.ones_like(xt), xt], -1)
    else:
        (xs, rs), (xt, rt) = _coefficients([a_col, b_col], s_now), _coefficients([c_col, d_col], th_now)
    if max(rs, rt) > tol:
        which = " and ".join(q for q, r in (("s~", rs), ("theta~", rt)) if r > tol)
        return (
            f"at t = {t} its {which} is not of Algorithm 1's form (s~ = rho0 J s~ + rho1 nu, theta~ = theta~/rho0 + "
            f"nu^T dF/dtheta / rho1) from its own previous factors: relative residual {max(rs, rt):.1e}"
        )
    return _normalizer_words(xs, xt, (a_col, b_col, c_col, d_col), first, tol, t)


def _normalizer_words(
    xs: torch.Tensor, xt: torch.Tensor, cols: tuple[torch.Tensor, ...], first: bool, tol: float, t: int
) -> str:
    """:func:`update_structure`'s words for factors in the span: the fitted normalizers against Algorithm 1's
    (ρ₀, ρ₁ from the same factors, ε = 1e-7), consistent (s̃ θ̃ᵀ kept) or not."""
    a_col, b_col, c_col, d_col = cols
    eps = 1e-7
    n_th, n_s = torch.linalg.vector_norm(c_col, dim=-1), torch.linalg.vector_norm(a_col, dim=-1)
    n_nu, n_g = torch.linalg.vector_norm(b_col, dim=-1), torch.linalg.vector_norm(d_col, dim=-1)
    rho0 = torch.sqrt(n_th / (n_s + eps)) + eps
    rho1 = torch.sqrt(n_g / (n_nu + eps)) + eps
    prod0, prod1 = xs[..., 0] * xt[..., 0], xs[..., 1] * xt[..., 1]
    close = max(1e-8, 10 * tol)
    consistent = bool(((prod1 - 1).abs() <= close).all()) and (first or bool(((prod0 - 1).abs() <= close).all()))
    k = int(torch.argmax(((xs[..., 1] / rho1 - 1).abs() + (prod1 - 1).abs()).flatten()))
    rules = [("rho1", 1, rho1)] if first else [("rho0", 0, rho0), ("rho1", 1, rho1)]
    if consistent:
        said = ", ".join(
            f"{name} = {float(xs[..., i].flatten()[k]):.6g} where Algorithm 1's is {float(want.flatten()[k]):.6g}"
            + _relation(float(xs[..., i].flatten()[k]), float(want.flatten()[k]))
            for name, i, want in rules
            if abs(float(xs[..., i].flatten()[k]) / float(want.flatten()[k]) - 1) > tol
        )
        return (
            f"the order of Algorithm 1's update is right; the normalizers differ (first at t = {t}: {said}); s~ and "
            "theta~ use the same rho0, rho1, so s~ theta~^T keeps its expectation"
        )
    said = "; ".join(
        f"{name}: s~ x {float(xs[..., i].flatten()[k]):.6g}, theta~ / {1 / float(xt[..., i].flatten()[k]):.6g} "
        f"(Algorithm 1: {float(want.flatten()[k]):.6g} in both)"
        for name, i, want in rules
    )
    return f"at t = {t} s~ and theta~ are scaled by normalizers that do not cancel, so s~ theta~^T is rescaled ({said})"


def _relation(got: float, want: float) -> str:
    """How a normalizer found relates to Algorithm 1's: its reciprocal, a small difference (ε), or neither."""
    if abs(got * want - 1) <= 1e-6:
        return " (its reciprocal)"
    if abs(got / want - 1) <= 1e-2:
        return " (a small difference: eps placed otherwise?)"
    return ""


def formula_conformance(
    est: Any,
    case: Case,
    gen: torch.Generator,
    samples: int = 6,
    jac: StepJacobians | None = None,
    budget: float = CONFORMANCE_BUDGET,
) -> dict[str, Any]:
    r"""Run ``est`` on a tabulated ν; compare with what Algorithm 1 determines given ν (:func:`algorithm1_reference`).

    ``est`` needs the noise hook (:mod:`verify.estimators.noise`; one draw per step, of
    shape (r·n) per sample); else :class:`~verify.errors.NotApplicable`. Compared at every
    t: s̃_t and θ̃_t (which, given ν, fix the normalizers ρ₀, ρ₁) where the estimator exposes
    them (:func:`verify.estimators.noise.factors`), and g̃_t -- with Algorithm 1's form
    :math:`(\delta s\cdot\tilde s_{t-1})\tilde\theta_{t-1} + \delta\theta` or, failing that, the
    post-update form :math:`(\partial\ell_t/\partial s_t\cdot\tilde s_t)\tilde\theta_t +
    \partial\ell_t/\partial\theta|_{s_t}` (another unbiased estimate of the same gradient: a variant,
    not an error). Returns the worst relative errors, ``form`` ("algorithm-1",
    "post-update" or "neither", within ``budget``: :func:`conformance_budget`) and whether the factors were exposed.
    """
    P = case.problem
    jac = jacobians(case) if jac is None else jac
    hook = require_noise_hook(est, CONFORMANCE)
    r, shape = _one_draw_per_step(est, hook, P)
    nus = _rademacher(P.T, samples, r, P.n, gen)
    worst, exposed, normalizers = _worst_errors(est, case, nus, shape, jac, samples, budget)
    if worst["g"] <= budget:
        form = "algorithm-1"
    elif worst["g_post"] <= budget:
        form = "post-update"
    else:
        form = "neither"
    out: dict[str, Any] = {
        "g": worst["g_post"] if form == "post-update" else worst["g"],
        "s_tilde": worst["s_tilde"] if exposed else math.nan,
        "theta_tilde": worst["theta_tilde"] if exposed else math.nan,
        "form": form,
        "factors_exposed": exposed,
        "rank": r,
        "normalizers": normalizers,
    }
    return out


#: the forms of g̃ a UORO may use: declared (``gtilde = "pre" | "post"``) -> as :func:`formula_conformance` names them
GTILDE_FORMS = {"pre": "algorithm-1", "post": "post-update"}


def gtilde_form(est: Any, case: Case, gen: torch.Generator) -> tuple[str | None, str]:
    r"""Where the UORO ``est`` forms g̃: ``("algorithm-1" | "post-update" | "neither" | None, how it is known)``.

    Declared (an attribute ``gtilde = "pre"`` -- Algorithm 1's
    :math:`(\delta s\cdot\tilde s_{t-1})\tilde\theta_{t-1} + \delta\theta` -- or ``"post"``, from the updated
    :math:`\tilde s_t, \tilde\theta_t`), else found under tabulated noise (:func:`formula_conformance` on
    ``case``: needs the noise hook), else unknown (``None``).
    Both forms are unbiased (Tallec & Ollivier 2017, App. A) and have different variances: a variance
    comparison must use the matching reference.
    """
    declared = getattr(est, "gtilde", None)
    if declared in GTILDE_FORMS:
        return GTILDE_FORMS[declared], f"declared gtilde={declared!r}"
    try:
        form = str(formula_conformance(est, case, gen, samples=2)["form"])
    except NotApplicable as exc:
        return None, f"not declared and not detectable ({exc.reason})"
    return form, "found under tabulated noise"


#: how :func:`noise_law` says that ν's law is neither declared nor known from the noise source (then assumed)
UNDECLARED_LAW = "Algorithm 1's random signs (not declared otherwise)"


def noise_law(est: Any) -> tuple[str, str]:
    """ν's law of the UORO ``est``: ``("gaussian" | "rademacher", how it is known)``: declared (``noise_law =
    "gaussian"``), else its noise source (:class:`~verify.estimators.uoro.Gaussian`), else Algorithm 1's signs."""
    declared = getattr(est, "noise_law", None)
    if declared in ("gaussian", "rademacher"):
        return declared, f"declared noise_law={declared!r}"
    if isinstance(getattr(est, "noise", None), Gaussian):
        return "gaussian", "its noise source is Gaussian"
    if isinstance(est, UORO) and type(est.noise) is Rademacher:  # the toolkit's own Algorithm 1 (a control too)
        return "rademacher", "its noise source is Rademacher"
    return "rademacher", UNDECLARED_LAW


def variant_in_expectation(est: Any, case: Case, dtype: torch.dtype = torch.float64) -> tuple[bool, str]:
    """A g̃ of another unbiased form, checked in expectation: exact enumeration (n = 2, T = 3) vs the references
    (an estimator computing in float32: the same count of rounding units, of the pair unit)."""
    E = enumerate_expectation(est, case.problem, case.theta, steps=3, max_patterns=2**12)
    G = per_step_gradients(case.problem, case.theta)
    err = _rel_err(E.gradients, G)
    scale = float(E.gradients_abs.norm()) / max(float(G.norm()), 1e-300)
    budget = 1e-13 * max(scale, 1.0) * E.coordinates * pair_unit(dtype) / unit_roundoff(torch.float64)
    return err <= budget, f"exact E g~ over {E.patterns} sign patterns: rel. error {err:.2e} (budget {budget:.1e})"


def conformance_runs(
    ests: Sequence[tuple[int, Any]],
    cases: Sequence[Case],
    gen: torch.Generator,
    alpha: float,
    budget: float = CONFORMANCE_BUDGET,
) -> tuple[bool, list[dict[str, Any]], list[dict[str, Any]]]:
    """Noise law (on ``cases[0]``) and formulas (on every case) of the estimators ``ests`` (rank, estimator).

    Returns whether all conform (no noise-law test rejected at α/2, Bonferroni; every formula within
    ``budget`` -- :func:`conformance_budget` -- in a known form), the noise-law rows and the formula rows.
    """
    tests = [
        (f"rank {r}: {name}", pv, d) for r, est in ests for name, pv, d in noise_law_tests(est, cases[0].problem, gen)
    ]
    law_rows = [
        {"test": name, "pvalue": pv, "rejected": pv <= alpha / (2 * len(tests)), "detail": d} for name, pv, d in tests
    ]
    f_rows: list[dict[str, Any]] = []
    for case in cases:
        jac = jacobians(case)
        for r, est in ests:
            w = formula_conformance(est, case, gen, jac=jac, budget=budget)
            exp = [w[k] for k in ("g", "s_tilde", "theta_tilde") if not math.isnan(w[k])]
            ok = w["form"] != "neither" and all(v <= budget for v in exp)
            errs = {f"rel_err_{k}": w[k] for k in w if k not in ("rank", "normalizers")}
            f_rows.append({"problem": case.label, "rank": r, **errs, "normalizers": w["normalizers"], "ok": ok})
    ok = not any(r["rejected"] for r in law_rows) and all(r["ok"] for r in f_rows)
    return ok, law_rows, f_rows


def num_or_zero(x: Any) -> float:
    """``x`` as a float, NaN (a quantity not exposed) as 0."""
    v = float(x)
    return 0.0 if math.isnan(v) else v


def worst_row(r: dict[str, Any]) -> float:
    """The worst relative error of one formula row (g̃, s̃, θ̃; those not exposed left out)."""
    vals = [float(r[k]) for k in ("rel_err_g", "rel_err_s_tilde", "rel_err_theta_tilde") if not math.isnan(float(r[k]))]
    return max(vals)
