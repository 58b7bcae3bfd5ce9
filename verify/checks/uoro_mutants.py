r"""The UORO under test is Algorithm 1, and the UORO checks catch every mutant (claims in
:mod:`theory.claims.uoro_statistics`; the computations in :mod:`verify.uoro.conformance` and
:mod:`verify.uoro.power`).

* ``uoro.algorithm-1-conformance`` -- the noise law and the formulas of Algorithm 1
  under tabulated noise, against :func:`verify.oracles.algorithm1.algorithm1_reference`;
* ``uoro.mutants-caught`` -- the kill table of :mod:`verify.impl.mutants.uoro` over the checks of
  :mod:`verify.checks.uoro_statistics`, :mod:`verify.checks.uoro_variance` and this module, and the operating
  characteristic of the sequential test.

Error rates: α = the claim's share of the gate's budget, :func:`theory.gate.planned_alpha`. The implementation
under test is ``config.impls.uoro`` (:class:`verify.impl.UOROImpl`); shared machinery in
:mod:`verify.checks.uoro_common`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from verify.checks import CheckFn, judged_dtype, precision_name, register, registry
from verify.checks.uoro_common import alpha_of, controls_on, finish, options
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.impl import build, part_label
from verify.impl.capabilities import cover
from verify.impl.mutants import Mutant
from verify.impl.mutants.uoro import MUST_NOT_FAIL, MUTANTS, get
from verify.report.plots.uoro import kill_table_figure, power_figure
from verify.uoro.cases import Case, problem_case
from verify.uoro.conformance import (
    CONFORMANCE,
    CONFORMANCE_BUDGET,
    conformance_budget,
    conformance_runs,
    num_or_zero,
    variant_in_expectation,
    worst_row,
)
from verify.uoro.power import POWER_FRACTIONS, power_curve
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["CONFORMANCE_BUDGET", "POWER_MUTANTS", "check_algorithm1_conformance", "check_mutants_caught"]

#: the check modules whose claims the kill table runs (this one included)
STATISTICAL_MODULES = (
    "verify.checks.uoro_statistics",
    "verify.checks.uoro_variance",
    "verify.checks.uoro_variance_matches",
    __name__,
)
#: draws per problem of a must-not-FAIL run: a false FAIL would show at any look, a PASS is not required
_NOT_FAIL_BUDGET = {"ci": 2_000, "full": 50_000}
#: the kill table's first look of a sequential unbiasedness test (a biased mutant FAILs there; claims: 1000)
_KILL_FIRST = 250
#: biased mutants whose operating characteristic (bias vs draws to FAIL) the kill table measures
POWER_MUTANTS = ("uoro.no-delta-theta", "uoro.theta-tilde-scaled", "uoro.noise-zero-one")
_POWER_BUDGET = {"ci": 20_000, "full": 400_000}


# ----------------------------------------------------------------- conformance
def _estimators(factory: Callable[..., Any], ranks: Sequence[int]) -> tuple[list[tuple[int, Any]], list[str]]:
    """``factory``'s estimators at ``ranks`` (rank 1: ``factory()``); the ranks it does not take are noted."""
    ests, missing = [], []
    for r in ranks:
        try:
            ests.append((r, build(factory, CONFORMANCE) if r == 1 else build(factory, CONFORMANCE, rank=r)))
        except NotApplicable:
            missing.append(f"rank {r}")
    if not ests:
        raise NotApplicable(CONFORMANCE, f"{part_label(factory)} takes none of rank {tuple(ranks)}")
    return ests, missing


def _variant_note(v_ok: bool, v_detail: str) -> str:
    return (
        "; VARIANT: g~ is computed from s~_t, theta~_t after the update (another unbiased form, not Algorithm 1's "
        f"(delta s . s~_(t-1)) theta~_(t-1) + delta theta); checked in expectation: {v_detail}"
        + ("" if v_ok else " -- NOT unbiased")
    )


def _conformance_summary(
    f_rows: Sequence[dict[str, Any]],
    law_rows: Sequence[dict[str, Any]],
    variant_note: str,
    missing: Sequence[str],
    budget: float = CONFORMANCE_BUDGET,
) -> str:
    names = {"rel_err_s_tilde": "s~", "rel_err_theta_tilde": "theta~", "rel_err_g": "g~"}
    per_quantity = {q: max((num_or_zero(r[k]) for r in f_rows), default=0.0) for k, q in names.items()}
    worst_in = ", ".join(f"{q} {v:.2e}" for q, v in per_quantity.items() if v > budget)
    law_fail = [r["test"] for r in law_rows if r["rejected"]]
    bad_form = [f"{r['problem']} rank {r['rank']}" for r in f_rows if r["rel_err_form"] == "neither"]
    exposed = all(bool(r["rel_err_factors_exposed"]) for r in f_rows)
    summary = (
        f"formulas: worst relative error {max(worst_row(r) for r in f_rows):.2e} vs budget {budget:.1e} "
        + ("(float32: judged at its round-off) " if budget > CONFORMANCE_BUDGET else "")
        + f"over {len(f_rows)} (problem, rank) runs with tabulated nu ("
        + ("s~, theta~ and g~" if exposed else "g~ only: s~, theta~ not exposed (uoro_factors or state fields)")
        + "); noise law: "
        + ("conforms" if not law_fail else "REJECTED " + ", ".join(law_fail))
        + variant_note
    )
    if worst_in:
        summary += f"; over budget: {worst_in}"
    why = next((f"{r['problem']} rank {r['rank']}: {r['normalizers']}" for r in f_rows if r.get("normalizers")), None)
    if why is not None:
        summary += f"; where s~, theta~ first differ ({why})"
    elif bad_form:
        summary += f"; g~ matches neither Algorithm 1's nor the post-update form on {', '.join(bad_form)}"
    if missing:
        summary += f"; not declared by the implementation under test: {', '.join(missing)}"
    return summary


def _conformance_control(
    cases: Sequence[Case], ranks: Sequence[int], gen: torch.Generator, alpha: float, budget: float
) -> Control:
    """Negative control: ``uoro.rho0-inverted`` (the stream ``gen`` continued) must FAIL (at ``budget``)."""
    bad_ests, _ = _estimators(get("uoro.rho0-inverted").part, ranks)
    bad_ok, _, bad_rows = conformance_runs(bad_ests, cases, gen, alpha, budget)
    worst_bad = max(worst_row(r) for r in bad_rows)
    return Control("mutant uoro.rho0-inverted", "FAIL", "PASS" if bad_ok else "FAIL", f"worst rel. err {worst_bad:.2e}")


@register("uoro.algorithm-1-conformance", uses=("uoro.uoro",))
def check_algorithm1_conformance(config: RunConfig) -> CheckResult:
    r"""The UORO under test is Algorithm 1 (Tallec & Ollivier, Algorithm 1, eq. (5)-(6)): its noise law and formulas.

    Needs the noise hook of :mod:`verify.estimators.noise` (else SKIPPED, saying so).
    (a) Noise: draws of the estimator's ν must be signs ±1, fair, independent across
    coordinates, steps, samples and pairs (binomial tests, Bonferroni, level α).
    (b) Formulas: with a tabulated ν (fixed sign sequences, 6 per problem) what Algorithm 1
    determines given ν -- s̃_t and θ̃_t (hence the normalizers ρ₀, ρ₁) where the estimator
    exposes them, and g̃_t at every t -- must equal :func:`algorithm1_reference` --
    Algorithm 1 written out with dense Jacobians (``jacrev``) -- within a relative error of 1e-12
    (two float64 evaluations in different orders: round-off u ≈ 1.1e-16 per operation, grown
    by at most T ≤ 12 steps of products of O(1)-conditioned factors and the ρ normalizations
    (square roots halve relative errors); measured ≤ 3e-16, so the budget has a ≥ 1e3 margin,
    and it is ~1e10 below any formula mistake, which changes results at O(1)). A g̃ in the
    post-update form (from s̃_t, θ̃_t) is another unbiased estimate: it is named a *variant* and
    checked in expectation (exact enumeration), not failed. On Elman-tanh, LSTM and GRU, rank 1
    and rank 2 (where the factory takes ``rank=``). This sees the mean-invisible mutants (any
    ρ₀/ρ₁ other than the paper's). Negative control: ``uoro.rho0-inverted`` must FAIL.
    """
    t0 = time.perf_counter()
    alpha = alpha_of(config, "uoro.algorithm-1-conformance")
    factory = config.impls.uoro.uoro
    T = 12 if config.full else 6
    kinds = (("elman-tanh", 3), ("lstm", 2), ("gru", 3))
    cases = [problem_case(k, n, T, config.seed, 480 + i) for i, (k, n) in enumerate(kinds)]
    quick = bool(config.option("kill_table", False))
    if quick:
        cases = cases[:1]
    gen = config.generator(481)
    # in the kill table rank 2 alone: its formulas contain rank 1's, and it tests the pairs
    ranks = (2,) if quick else (1, 2)
    ests, missing = _estimators(factory, ranks)
    cases, coverage = cover(CONFORMANCE, cases, lambda c: (c.label, ests[0][1], c.problem, c.theta))
    dtype = judged_dtype(config, "uoro.algorithm-1-conformance")
    budget = conformance_budget(dtype)
    ok, law_rows, f_rows = conformance_runs(ests, cases, gen, alpha, budget)
    variants = sorted({str(r["rel_err_form"]) for r in f_rows if r["rel_err_form"] == "post-update"})
    variant_note = ""
    if variants and ok:
        small = problem_case("elman-tanh", 2, 3, config.seed, 485)
        v_ok, v_detail = variant_in_expectation(build(factory, CONFORMANCE), small, dtype)
        ok = ok and v_ok
        variant_note = _variant_note(v_ok, v_detail)
    controls = [_conformance_control(cases, ranks, gen, alpha, budget)] if controls_on(config) else []
    return finish(
        "uoro.algorithm-1-conformance",
        config,
        t0,
        Verdict.PASS if ok else Verdict.FAIL,
        _conformance_summary(f_rows, law_rows, variant_note, missing, budget),
        statistic=max(worst_row(r) for r in f_rows),
        threshold=budget,
        dtype=precision_name(dtype),
        comparison="<=",
        controls=controls,
        coverage=coverage,
        data={"formulas": f_rows, "noise_law": law_rows, "variant": variants[0] if variants else None},
        alpha=alpha,
    )


# ----------------------------------------------------------------- kill table
def _run_as(
    checks: dict[str, CheckFn], config: RunConfig, cid: str, m: Mutant, extra: tuple[Any, ...]
) -> tuple[str, str]:
    """Run check ``cid`` with mutant ``m`` as the implementation under test, controls off: (verdict, summary)."""
    cfg = RunConfig(
        profile=config.profile,
        seed=config.seed,
        options=(*config.options, ("controls", False), ("kill_table", True), *extra),
        implementations=m.implementations,
    )
    try:
        res = checks[cid](cfg)
        return res.verdict.value, res.summary
    except Exception as exc:  # a crash is neither a kill nor a clean run: the table shows it
        return f"ERROR {type(exc).__name__}: {exc}", ""


def _kill_row(
    checks: dict[str, CheckFn], mine: set[str], config: RunConfig, m: Mutant, nf_budget: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Mutant ``m``'s row of the kill table (every visible check must FAIL, every must-not-FAIL one must not), and
    its rows of the report's negative-controls table."""
    must_not = tuple(c for c in MUST_NOT_FAIL.get(m.name, ()) if c in mine)
    klass = "unbiased" if m.name in MUST_NOT_FAIL else "biased"
    row: dict[str, Any] = {"mutant": m.name, "target": m.target, "class": klass, "checks": {}, "must_not_fail": {}}
    report_rows: list[dict[str, Any]] = []
    targets = [c for c in m.visible_to if c in mine]
    for cid in targets:
        row["checks"][cid] = _run_as(checks, config, cid, m, (("first", _KILL_FIRST),))[0]
        report_rows.append({"mutant": m.name, "expected": "FAIL", "observed": row["checks"][cid], "detail": cid})
    for cid in must_not:  # the claim's alpha shared by its must-not-FAIL tests (Bonferroni)
        nf_alpha = alpha_of(config, "uoro.mutants-caught") / len(MUST_NOT_FAIL)
        verdict, summary = _run_as(checks, config, cid, m, (("max_samples", nf_budget), ("alpha", nf_alpha)))
        row["must_not_fail"][cid] = verdict
        report_rows.append(
            {
                "mutant": m.name,
                "expected": "not FAIL",
                "observed": "not FAIL" if verdict in ("PASS", "INCONCLUSIVE") else verdict,
                "detail": f"{cid}: {verdict} ({summary[:160]})",
            }
        )
    row["killed"] = bool(targets) and all(v == "FAIL" for v in row["checks"].values())
    row["clean"] = all(v in ("PASS", "INCONCLUSIVE") for v in row["must_not_fail"].values())
    return row, report_rows


def _power_curves(config: RunConfig, budget: int) -> list[dict[str, Any]]:
    """The operating characteristic on each of :data:`POWER_MUTANTS` (Elman-tanh, n = 2, T = 3), each mixed into
    the UORO under test, ``config.impls.uoro.uoro()``."""
    case = problem_case("elman-tanh", 2, 3, config.seed, 410)
    good = build(config.impls.uoro.uoro, "uoro.mutants-caught (operating characteristic)")
    rows = []
    for name in POWER_MUTANTS:
        gens = [config.generator(470 + i) for i in range(len(POWER_FRACTIONS))]
        rows += power_curve(
            name, get(name).part(), case, options(config, "uoro.mutants-caught"), gens, budget, good=good
        )
    return rows


@register("uoro.mutants-caught", uses=("uoro.uoro",))
def check_mutants_caught(config: RunConfig) -> CheckResult:
    """Every mutant of the UORO catalog FAILs the checks it is visible to, and no unbiased mutant FAILs an
    unbiasedness test (DESIGN.md 'Numerical policy': the tester is tested; Tallec & Ollivier Algorithm 1 and
    App. A for what each mutant breaks; issue 14: both sides of the kill table).

    For each mutant of :mod:`verify.impl.mutants.uoro`, every check of the statistical UORO modules
    (:data:`STATISTICAL_MODULES`) named in its
    ``visible_to`` runs with the mutant as the implementation under test
    (``RunConfig(implementations=mutant.implementations)``, controls off) and must
    report FAIL; every check named in :data:`verify.impl.mutants.uoro.MUST_NOT_FAIL` for it (the
    unbiasedness tests of the unbiased mutants) runs with a small budget of draws and must *not*
    FAIL (PASS or INCONCLUSIVE). The kill table is in ``data["kill_table"]``. (Claims of other
    modules in ``visible_to``, e.g. ``uoro.exact-expectation``, are run by their own tests.) The
    data also hold the operating characteristic of the sequential test on three biased mutants, each mixed
    into the UORO under test (:func:`verify.uoro.power.power_curve`): bias/‖g‖ against draws to FAIL, as a figure.
    """
    t0 = time.perf_counter()
    checks = registry()
    mine = {c for c in checks if checks[c].__module__ in STATISTICAL_MODULES and c != "uoro.mutants-caught"}
    nf_budget = _NOT_FAIL_BUDGET["full" if config.full else "ci"]
    rows: list[dict[str, Any]] = []
    report_rows: list[dict[str, Any]] = []
    for m in MUTANTS:
        row, reported = _kill_row(checks, mine, config, m, nf_budget)
        rows.append(row)
        report_rows += reported
    power_budget = _POWER_BUDGET["full" if config.full else "ci"]
    curves = _power_curves(config, power_budget)
    n_killed = sum(r["killed"] for r in rows)
    nf_rows = [r for r in rows if r["must_not_fail"]]
    n_clean = sum(r["clean"] for r in nf_rows)
    missed = [r["mutant"] for r in rows if not r["killed"]]
    false_alarms = [r["mutant"] for r in nf_rows if not r["clean"]]
    summary = (
        f"{n_killed}/{len(rows)} mutants FAIL every check they are visible to; {n_clean}/{len(nf_rows)} unbiased "
        f"mutants not FAILed by the unbiasedness test (PASS or INCONCLUSIVE, {nf_budget} draws per problem)"
        + (f"; NOT caught: {', '.join(missed)}" if missed else "")
        + (f"; FALSE ALARM on unbiased: {', '.join(false_alarms)}" if false_alarms else "")
        + f"; operating characteristic on {len(POWER_MUTANTS)} biased mutants in data['power_curves']"
    )
    return finish(
        "uoro.mutants-caught",
        config,
        t0,
        Verdict.PASS if not missed and not false_alarms else Verdict.FAIL,
        summary,
        statistic=float(n_killed + n_clean),
        threshold=float(len(rows) + len(nf_rows)),
        comparison=">=",
        data={
            "kill_table": rows,
            "mutants": report_rows,
            "power_curves": curves,
            "figures": [kill_table_figure(rows), power_figure(curves, power_budget)],
        },
        alpha=alpha_of(config, "uoro.mutants-caught"),
    )
