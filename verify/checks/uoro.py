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

import time
from typing import Any

import torch

from verify.checks import judged_dtype, precision_name, register, result
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.estimators.enumerate import Enumerable
from verify.estimators.noise import require_noise_hook
from verify.impl import build
from verify.impl.capabilities import cover
from verify.impl.mutants import get as get_mutant
from verify.uoro.enumeration import (
    CANCELLING,
    MAX_PATTERNS,
    SUITE,
    TARGET,
    EnumerationCase,
    References,
    compare_enumeration,
    enumeration_suite,
    row_thresholds,
)
from verify.verdict import CheckResult, Control

__all__ = ["check_exact_expectation", "suite"]

NEGATIVE = ("uoro.noise-zero-one", "uoro.rho0-one-factor", "uoro.rho1-asymmetric")
POSITIVE = ("uoro.rho0-inverted", "uoro.rho0-previous-step", "uoro.rho1-constant")


def _variants(uoro: Any, preactivation: Any, full: bool, elman: bool) -> tuple[list[Enumerable], list[str]]:
    """The estimators of the factories ``uoro`` and ``preactivation`` the suite enumerates, and the variants the
    factories do not declare."""
    wanted: list[tuple[str, Any, dict[str, int]]] = [
        ("uoro", uoro, {}),
        ("uoro", uoro, {"rank": 2}),
        ("uoro", uoro, {"block": 2}),
        ("uoro", uoro, {"block": 2, "rank": 2}),
    ]
    if full:
        wanted += [("uoro", uoro, {"block": 3}), ("uoro", uoro, {"rank": 3})]
    if elman:
        wanted += [("preactivation", preactivation, {}), ("preactivation", preactivation, {"rank": 2})]
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


def suite(config: RunConfig, missing: list[str] | None = None) -> list[EnumerationCase]:
    """UORO, rank 2, UORO-T (T=2), preactivation UORO of ``config.impls.uoro`` over every cell; n = 2 (LSTM: H = 1).

    ``ci``: up to 4096 patterns on the Elman-tanh problem, 256 on the others;
    ``full``: 2^14 everywhere, T = 5, and UORO-T3 / rank 3 as well. Variants the
    implementation's factories do not take are left out and appended to ``missing``.
    """

    def variants(elman: bool) -> list[Enumerable]:
        ests, lacking = _variants(config.impls.uoro.uoro, config.impls.uoro.preactivation, config.full, elman)
        if missing is not None:
            missing.extend(m for m in lacking if m not in missing)
        return ests

    limits = [2**14 if config.full else (MAX_PATTERNS if i == 0 else 256) for i in range(len(SUITE))]
    return enumeration_suite(variants, config.generator(salt=61), 5 if config.full else 4, limits)


def _control(name: str, base: EnumerationCase, refs: References, dtype: torch.dtype) -> Control:
    """Mutant ``name`` on the first case: a biased one must miss the exact equality, an unbiased one stay within
    its round-off budget (its normalizers may inflate the magnitudes that cancel, so the 1e-12 target is not
    asked of it: e.g. a stale rho0 = eps at the second step)."""
    r = compare_enumeration(build(get_mutant(name).part, "control"), base, refs, dtype)
    ok_flag = r["passed"] if name in NEGATIVE else r["within_budget"]
    return Control(
        f"mutant {name}" + (" (unbiased: invisible to an expectation check)" if name in POSITIVE else ""),
        "FAIL" if name in NEGATIVE else "PASS",
        "PASS" if ok_flag else "FAIL",
        f"gradient error {r['gradient_error']:.2e}, influence error {r['influence_error']:.2e} "
        f"(budgets {r['gradient_budget']:.1e}, {r['influence_budget']:.1e}; cancellation "
        f"{r['kappa_noise']:.1e}; {r['patterns']} patterns)",
    )


def _ratio(r: dict[str, Any]) -> float:
    """How close a row comes to its threshold (the smaller of its round-off budget and the 1e-12 target)."""
    tg, ti = row_thresholds(r)
    return max(float(r["gradient_error"]) / tg, float(r["influence_error"]) / ti)


def _summary(rows: list[dict[str, Any]], controls: list[Control], missing: list[str], stat: float, thr: float) -> str:
    worst = max(rows, key=_ratio)
    biased = [r for r in rows if not r["within_budget"]]
    head = ""
    if biased:
        b = max(biased, key=_ratio)
        which = "E g~" if float(b["gradient_error"]) / float(b["gradient_budget"]) >= 1 else "E[s~ x theta~]"
        head = (
            f"BIASED: the exact expectation {which} over all {b['patterns']} sign patterns misses the reference on "
            f"{b['case']} (relative error gradient {float(b['gradient_error']):.2e}, influence "
            f"{float(b['influence_error']):.2e}; round-off budgets {float(b['gradient_budget']):.1e}, "
            f"{float(b['influence_budget']):.1e}); "
        )
    summary = head + (
        f"{len(rows)} enumerations (UORO, rank 2, UORO-T, preactivation; up to "
        f"{max(int(r['patterns']) for r in rows)} patterns); worst relative error {stat:.2e} "
        f"({worst['case']}) vs threshold {thr:.1e} "
        + (
            "(the predicted float32 round-off budget: judged at float32); "
            if worst.get("dtype") == "float32"
            else f"(round-off budget, and the design target 1e-12 unless the patterns cancel by more than "
            f"{CANCELLING:.0e}); "
        )
        + f"{sum(c.ok for c in controls[: len(NEGATIVE)])}/{len(NEGATIVE)} biased mutants caught, "
        f"{len(POSITIVE)} unbiased normalizer mutants pass as they must"
    )
    if missing:
        summary += f"; not declared by the implementation under test (left out): {', '.join(missing)}"
    if not all(bool(r["influence_compared"]) for r in rows):
        summary += "; gradients only where the estimator has no influence_estimate(problem, state)"
    return summary


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
    dtype = judged_dtype(config, "uoro.exact-expectation")
    missing: list[str] = []
    cases = suite(config, missing)
    if not cases:
        raise NotApplicable("uoro.exact-expectation", "no variant of the implementation under test can be enumerated")
    cases, coverage = cover("uoro.exact-expectation", cases, lambda c: (c.label, c.estimator, c.problem, c.theta))
    refs: dict[int, References] = {}
    for c in cases:
        if id(c.problem) not in refs:
            refs[id(c.problem)] = References.of(c.problem, c.theta)
    rows = [compare_enumeration(c.estimator, c, refs[id(c.problem)], dtype) for c in cases]
    base = cases[0]  # elman-tanh, plain UORO
    controls_on = bool(config.option("controls", True))
    controls = [
        _control(name, base, refs[id(base.problem)], dtype) for name in (NEGATIVE + POSITIVE if controls_on else ())
    ]
    ok = all(bool(r["passed"]) for r in rows)
    worst = max(rows, key=_ratio)
    stat = max(float(worst["gradient_error"]), float(worst["influence_error"]))
    thr = min(row_thresholds(worst))
    return result(
        "uoro.exact-expectation",
        config,
        t0,
        ok,
        _summary(rows, controls, missing, stat, thr),
        controls=controls,
        coverage=coverage,
        statistic=stat,
        threshold=thr,
        samples_used=sum(int(r["patterns"]) for r in rows),
        dtype=precision_name(dtype),
        data={"enumerations": rows, "target": TARGET if dtype == torch.float64 else None},
    )
