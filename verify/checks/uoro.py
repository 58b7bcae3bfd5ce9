"""Deterministic checks of the ``uoro`` family (claims in :mod:`theory.claims.uoro`).

``uoro.exact-expectation``: UORO's Proposition 1 verified by computation -- the
expectation over every Rademacher sign pattern (:mod:`verify.estimators.enumerate`)
of s̃_t ⊗ θ̃_t and g̃_t equals the float64 references, for the implementation under
test (``config.impls.uoro``: UORO, rank-r UORO and UORO-T where its factory takes
``rank=``/``block=``, preactivation-space UORO). It needs the noise hook of
:mod:`verify.estimators.noise` (without it the claim is SKIPPED, saying so). Its
controls come from :mod:`verify.impl.mutants.estimators`: three biased mutants must FAIL;
three unbiased ones (normalizer changes the expectation cannot see) must PASS.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from verify.checks import register
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.estimators.enumerate import Enumerable, enumerate_expectation
from verify.estimators.noise import require_noise_hook
from verify.impl import UOROImpl, build
from verify.impl.mutants import get as get_mutant
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.oracles.bptt import influence_matrices, per_step_gradients
from verify.oracles.budget import conditioning, roundoff_budget, unit_roundoff
from verify.verdict import CheckResult, Control, Verdict

#: DESIGN.md target for the enumerated expectation vs the references (relative)
TARGET = 1e-12
#: ceiling on the patterns of one enumeration in this check
MAX_PATTERNS = 4096

NEGATIVE = ("uoro.noise-zero-one", "uoro.rho0-one-factor", "uoro.rho1-asymmetric")
POSITIVE = ("uoro.rho0-inverted", "uoro.rho0-previous-step", "uoro.rho1-constant")


@dataclass(frozen=True)
class Case:
    label: str
    estimator: Enumerable
    problem: Problem
    theta: torch.Tensor
    limit: int  #: most patterns enumerated for this case


def _steps(est: Enumerable, problem: Problem, limit: int) -> int:
    """The largest number of steps (≤ T) whose patterns fit in ``limit``."""
    per = math.prod(est.noise_shape(problem))
    support = est.noise.support
    assert support is not None
    best = 0
    for t in range(1, problem.T + 1):
        if len(support) ** (est.noise_draws(t) * per) <= limit:
            best = t
    return best


def _variants(impl: UOROImpl, full: bool, elman: bool) -> tuple[list[Enumerable], list[str]]:
    """The estimators of ``impl`` the suite enumerates, and the variants its factories do not declare."""
    wanted: list[tuple[str, Any, dict[str, int]]] = [
        ("uoro", impl.uoro, {}),
        ("uoro", impl.uoro, {"rank": 2}),
        ("uoro", impl.uoro, {"block": 2}),
        ("uoro", impl.uoro, {"block": 2, "rank": 2}),
    ]
    if full:
        wanted += [("uoro", impl.uoro, {"block": 3}), ("uoro", impl.uoro, {"rank": 3})]
    if elman:
        wanted += [("preactivation", impl.preactivation, {}), ("preactivation", impl.preactivation, {"rank": 2})]
    ests: list[Enumerable] = []
    missing: list[str] = []
    for part, factory, kw in wanted:
        try:
            est = build(factory, "uoro.exact-expectation", **kw)
        except NotApplicable:
            missing.append(f"{part}({', '.join(f'{k}={v}' for k, v in kw.items())})")
            continue
        ests.append(require_noise_hook(est, "uoro.exact-expectation"))  # type: ignore[arg-type]
    return ests, missing


def suite(config: RunConfig, missing: list[str] | None = None) -> list[Case]:
    """UORO, rank 2, UORO-T (T=2), preactivation UORO of ``config.impls.uoro`` over every cell; n = 2 (LSTM: H = 1).

    ``ci``: up to 4096 patterns on the Elman-tanh problem, 256 on the others;
    ``full``: 2^14 everywhere, T = 5, and UORO-T3 / rank 3 as well. Variants the
    implementation's factories do not take are left out and appended to ``missing``.
    """
    gen = config.generator(salt=61)
    T = 5 if config.full else 4
    cases = []
    for i, (kind, loss, batch) in enumerate(
        (
            ("elman-tanh", "squared-error", ()),
            ("elman-relu", "cross-entropy", ()),
            ("linear", "squared-error", ()),
            ("lstm", "cross-entropy", ()),
            ("gru", "squared-error", (2,)),
        )
    ):
        n = 1 if kind == "lstm" else 2
        P, th = random_problem(kind, n=n, d=1, T=T, k=2, loss=loss, batch=batch, generator=gen)
        label = f"{kind}/{loss}" + ("/batch2" if batch else "")
        limit = 2**14 if config.full else (MAX_PATTERNS if i == 0 else 256)
        ests, lacking = _variants(config.impls.uoro, config.full, kind.startswith("elman"))
        if missing is not None:
            missing.extend(m for m in lacking if m not in missing)
        for est in ests:
            if _steps(est, P, limit) >= 1:
                cases.append(Case(f"{label}: {est.name}", est, P, th, limit))
    return cases


@dataclass(frozen=True)
class References:
    """The float64 references of one problem, computed once."""

    gradients: torch.Tensor
    influence: torch.Tensor
    kappa_grad: float
    kappa_influence: float

    @staticmethod
    def of(problem: Problem, theta: torch.Tensor) -> References:
        cond = conditioning(problem, theta)
        return References(
            per_step_gradients(problem, theta),
            influence_matrices(problem, theta),
            cond.kappa_grad,
            cond.kappa_influence,
        )


def compare_enumeration(est: Enumerable, case: Case, refs: References) -> dict[str, Any]:
    P, th, limit = case.problem, case.theta, case.limit
    steps = _steps(est, P, limit)
    E = enumerate_expectation(est, P, th, steps=steps, max_patterns=limit)
    G = refs.gradients[:steps]
    I_ref = refs.influence
    zero = torch.zeros_like(I_ref[0])
    I_at = torch.stack([I_ref[s - 1] if s > 0 else zero for s in E.influence_steps])
    u = unit_roundoff(P.dtype)
    depth = P.n + P.cell.input_size + P.readout.output_size + E.coordinates
    k_g = float(torch.linalg.vector_norm(E.gradients_abs)) / max(float(torch.linalg.vector_norm(G)), 1e-300)
    k_i = (
        0.0
        if E.influence_abs is None
        else float(torch.linalg.vector_norm(E.influence_abs)) / max(float(torch.linalg.vector_norm(I_at)), 1e-300)
    )
    b_g = roundoff_budget(u, depth, steps, max(refs.kappa_grad, 1.0) * max(k_g, 1.0))
    b_i = roundoff_budget(u, depth, steps, max(refs.kappa_influence, 1.0) * max(k_i, 1.0))
    e_g = _rel(E.gradients, G)
    e_i = 0.0 if E.influence is None else _rel(E.influence, I_at)
    within = e_g <= b_g and e_i <= b_i
    ok = within and e_g <= TARGET and e_i <= TARGET
    return {
        "case": case.label,
        "estimator": est.name,
        "steps": steps,
        "patterns": E.patterns,
        "gradient_error": e_g,
        "gradient_budget": b_g,
        "influence_error": e_i,
        "influence_budget": b_i,
        "kappa_noise": max(k_g, k_i),
        "influence_compared": E.influence is not None,
        "within_budget": within,
        "passed": ok,
    }


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    den = float(torch.linalg.vector_norm(b))
    num = float(torch.linalg.vector_norm(a - b))
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


@register("uoro.exact-expectation", uses=("uoro.uoro", "uoro.preactivation"))
def check_exact_expectation(config: RunConfig) -> CheckResult:
    """UORO Prop. 1 (App. A) by enumeration: E[s̃⊗θ̃] = ∂s/∂θ, E[g̃] = ∂ℓ/∂θ (Algorithm 1, §3, preactivation UORO).

    Every Rademacher pattern of the first t steps is one sample (≤ 4096 in ``ci``);
    the mean is compared with :func:`verify.oracles.bptt.influence_matrices` and
    :func:`verify.oracles.bptt.per_step_gradients` against a round-off budget that
    includes the cancellation among patterns, and the DESIGN target 1e-12.
    Controls: ν ∈ {0,1}, ρ₀ on one factor, ν-asymmetric ρ₁ must FAIL; inverted ρ₀,
    previous-step ρ₀ and ρ₁ ≡ 1 must PASS (unbiased: invisible to this check).
    """
    t0 = time.perf_counter()
    missing: list[str] = []
    cases = suite(config, missing)
    if not cases:
        raise NotApplicable("uoro.exact-expectation", "no variant of the implementation under test can be enumerated")
    refs: dict[int, References] = {}
    for c in cases:
        if id(c.problem) not in refs:
            refs[id(c.problem)] = References.of(c.problem, c.theta)
    rows = [compare_enumeration(c.estimator, c, refs[id(c.problem)]) for c in cases]
    base = cases[0]  # elman-tanh, plain UORO
    controls = []
    controls_on = bool(config.option("controls", True))
    for name in NEGATIVE + POSITIVE if controls_on else ():
        mutant = get_mutant(name)
        r = compare_enumeration(build(mutant.part, "control"), base, refs[id(base.problem)])
        # a biased mutant must miss the exact equality; an unbiased one must stay within its
        # round-off budget (its normalizers may inflate the magnitudes that cancel, so the
        # 1e-12 target is not asked of it: e.g. a stale rho0 = eps at the second step)
        ok_flag = r["passed"] if name in NEGATIVE else r["within_budget"]
        controls.append(
            Control(
                f"mutant {name}" + (" (unbiased: invisible to an expectation check)" if name in POSITIVE else ""),
                "FAIL" if name in NEGATIVE else "PASS",
                "PASS" if ok_flag else "FAIL",
                f"gradient error {r['gradient_error']:.2e}, influence error {r['influence_error']:.2e} "
                f"(budgets {r['gradient_budget']:.1e}, {r['influence_budget']:.1e}; cancellation "
                f"{r['kappa_noise']:.1e}; {r['patterns']} patterns)",
            )
        )
    ok = all(bool(r["passed"]) for r in rows)

    def ratio(r: dict[str, Any]) -> float:
        return max(
            float(r["gradient_error"]) / min(float(r["gradient_budget"]), TARGET),
            float(r["influence_error"]) / min(float(r["influence_budget"]), TARGET),
        )

    worst = max(rows, key=ratio)
    stat = max(float(worst["gradient_error"]), float(worst["influence_error"]))
    thr = min(float(worst["gradient_budget"]), float(worst["influence_budget"]), TARGET)
    summary = (
        f"{len(rows)} enumerations (UORO, rank 2, UORO-T, preactivation; up to "
        f"{max(int(r['patterns']) for r in rows)} patterns); worst relative error {stat:.2e} "
        f"({worst['case']}) vs threshold {thr:.1e} (budget and design target 1e-12); "
        f"{sum(c.ok for c in controls[: len(NEGATIVE)])}/{len(NEGATIVE)} biased mutants caught, "
        f"{len(POSITIVE)} unbiased normalizer mutants pass as they must"
    )
    if missing:
        summary += f"; not declared by the implementation under test (left out): {', '.join(missing)}"
    if not all(bool(r["influence_compared"]) for r in rows):
        summary += "; gradients only where the estimator has no influence_estimate(problem, state)"
    bad = [c.name for c in controls if not c.ok]
    if bad:
        summary += "; CONTROLS NOT AS EXPECTED: " + ", ".join(bad)
    return CheckResult(
        claim_id="uoro.exact-expectation",
        verdict=Verdict.PASS if ok and not bad else Verdict.FAIL,
        summary=summary,
        statistic=stat,
        threshold=thr,
        seed=config.seed,
        samples_used=sum(int(r["patterns"]) for r in rows),
        controls=tuple(controls),
        data={"enumerations": rows, "target": TARGET},
        wall_time=time.perf_counter() - t0,
    )
