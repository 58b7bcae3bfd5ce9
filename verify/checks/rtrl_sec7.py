r"""Judges of the ``rtrl-sec71`` / ``rtrl-sec72`` sweeps: the RTRL convergence paper's §7.1-7.2 claims, rebuilt.

Paper: "Convergence Analysis of Real-time Recurrent Learning (RTRL) for a class of Recurrent Neural Networks"
(:data:`theory.papers.RTRL_CONVERGENCE`: preprint, 2024 or later; author line and arXiv id missing from the text
used, ``seeds/rtrl-convergence-analysis.md``), §7.1 (linear RNNs, Fig. 1-2: "Typically, RTRL performs better than
TBPTT. In several cases, TBPTT becomes unstable"; Fig. 2: "RTRL outperforms TBPTT, typically achieving a much
smaller loss") and §7.2 (Elman RNNs: ReLU Fig. 3-4, tanh Fig. 5-6, tanh at another Δ Fig. 7-8: "RTRL
outperforms TBPTT"). The runs and the statistics are :mod:`verify.rtrl.sec7`'s; this module decides.

Rules (seeds are independent teachers, data and θ₀; runs on one seed are paired):

* **learned** (premise, per seed): RTRL's best final long-run loss over the (η₀, schedule) panels lies below the
  readout-only floor (least squares on the readout with the cell frozen at θ₀). Not met on a seed -> FAIL.
* **RTRL beats TBPTT** (per group, one result): seed s favours RTRL when RTRL's final loss is below TBPTT(τ)'s on
  more than half of its panels (η₀, schedule, τ); one-sided exact sign test over the seeds (ties dropped) at
  α = :data:`ALPHA`: PASS when RTRL is favoured significantly, FAIL when TBPTT is, else INCONCLUSIVE ("not
  resolved at this power": the fewest favourable seeds the test can call significant is stated).
* **TBPTT unstable** (§7.1 only, one result): PASS when some panel (group, η₀, schedule, τ) has TBPTT unstable
  (diverged, or ended above its initial loss) on at least half of the seeds while RTRL at the same (η₀, schedule)
  is unstable on none of them; else FAIL ("not reproduced on this grid"), RTRL's own instabilities listed (a
  FINDING); INCONCLUSIVE instead of FAIL on a grid with a single η₀ (the ci grid), which cannot test the claim.
* **control** (every comparison): the same judge on the broken RTRL's runs (RTRL without ∂F/∂θ, mutant
  ``rtrl.no-immediate-term``, run through the same harness in RTRL's place) must FAIL. It does by construction:
  its cell parameters never move, so its loss cannot go below the readout-only floor (the premise).
"""

from __future__ import annotations

import math
from typing import Any

from verify.report.plots.rtrl import sec7_figures
from verify.rtrl.sec7 import Run, min_wins, sign_test, tabulate
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["ALPHA", "judge_comparison", "judge_instability", "judge_sec7"]

#: one-sided level of the sign test over seeds
ALPHA = 0.05


def judge_comparison(section: str, table: dict[str, Any], control: dict[str, Any] | None = None) -> CheckResult:
    """One group's "RTRL reaches lower loss than TBPTT" verdict (module docstring), with the control's verdict."""
    cid = f"rtrl.sec{section.replace('.', '')}-{table['name']}"
    per = table["per_seed"]
    not_learned = [p["seed"] for p in per if not p["learned"]]
    plus = sum(p["win"] > 0.5 for p in per)
    minus = sum(p["win"] < 0.5 for p in per)
    p_rtrl, p_tbptt = sign_test(plus, minus)
    need = min_wins(plus + minus, ALPHA)
    ratios = sorted(r for p in per for r in p["log_ratios"] if r is not None)
    med = ratios[len(ratios) // 2] if ratios else math.nan
    counts = (
        f"{plus} of {len(per)} seeds favour RTRL, {minus} TBPTT (sign test p = {p_rtrl:.3g} for RTRL, "
        f"{p_tbptt:.3g} for TBPTT); median log(L_TBPTT/L_RTRL) over panels {med:+.3f}"
    )
    if not_learned:
        verdict = Verdict.FAIL
        reason = (
            f"premise not met: RTRL's best final loss is not below the readout-only floor on seed(s) {not_learned} "
            "(the recurrence was not learned)"
        )
    elif p_rtrl <= ALPHA:
        verdict, reason = Verdict.PASS, None
    elif p_tbptt <= ALPHA:
        verdict, reason = Verdict.FAIL, "TBPTT reaches the lower loss, significantly (sign test over seeds)"
    else:
        verdict = Verdict.INCONCLUSIVE
        reason = (
            f"not resolved at this power: with {plus + minus} untied seeds the sign test needs "
            f"{need if need is not None else 'more seeds than'} favourable seeds for alpha = {ALPHA:g}"
        )
    controls: tuple[Control, ...] = ()
    if control is not None:
        bad = judge_comparison(section, control)
        controls = (
            Control(
                "broken RTRL (no dF/dtheta, only the readout learns) judged in RTRL's place",
                "FAIL",
                bad.verdict.value,
                bad.reason or bad.summary,
            ),
        )
    if verdict is Verdict.PASS and controls and not controls[0].ok:
        verdict, reason = Verdict.FAIL, "the control (broken RTRL) was not caught"
    figs = sec7_figures(f"§{section} {table['name']}", table["curves"])
    return CheckResult(
        cid,
        verdict,
        f"§{section} {table['name']}: {counts}; RTRL below the readout-only floor on "
        f"{len(per) - len(not_learned)}/{len(per)} seeds",
        statistic=p_rtrl,
        threshold=ALPHA,
        alpha=ALPHA,
        samples_used=len(per),
        reason=reason,
        controls=controls,
        data={"section": section, "table": _jsonable(table), "figures": figs},
    )


def judge_instability(section: str, tables: list[dict[str, Any]]) -> CheckResult:
    """§7.1's "TBPTT becomes unstable" for some (η₀, τ) where RTRL is stable (module docstring)."""
    hits, rtrl_bad = [], []
    for tab in tables:
        for row in tab["unstable"]:
            t_bad, r_bad = set(row["tbptt_unstable_seeds"]), set(row["rtrl_unstable_seeds"])
            where = f"{tab['name']} lr={row['lr']:g} {row['schedule']}"
            if 2 * len(t_bad) >= row["seeds"] and not (t_bad & r_bad):
                hits.append(f"{where} k={row['k']}: TBPTT unstable on {len(t_bad)}/{row['seeds']} seeds")
            if r_bad:
                rtrl_bad.append(f"{where}: RTRL unstable on seeds {sorted(r_bad)}")
    rtrl_bad = sorted(set(rtrl_bad))
    ok = bool(hits)
    lrs = {row["lr"] for tab in tables for row in tab["unstable"]}
    finding = (
        f"RTRL itself is unstable (diverged, or ended above its initial loss) in {len(rtrl_bad)} (group, eta0, "
        f"schedule) panel(s): {'; '.join(rtrl_bad)}"
    )
    # "for some learning rates": a grid with one eta0 cannot show it (the ci grid); that is no evidence either way
    verdict = Verdict.PASS if ok else (Verdict.FAIL if len(lrs) > 1 else Verdict.INCONCLUSIVE)
    return CheckResult(
        f"rtrl.sec{section.replace('.', '')}-tbptt-unstable",
        verdict,
        (f"{len(hits)} panel(s) with TBPTT unstable where RTRL is not: " + "; ".join(hits[:5]))
        if ok
        else "not reproduced on this grid: no panel has TBPTT unstable on half the seeds with RTRL stable there",
        statistic=float(len(hits)),
        threshold=1.0,
        comparison=">=",
        reason=None
        if ok
        else "no (eta0, schedule, k) panel meets the rule"
        + ("" if len(lrs) > 1 else " -- and the grid has one eta0: it cannot test 'for some learning rates'"),
        findings=(finding,) if rtrl_bad else (),
        data={"section": section, "panels": hits, "rtrl_unstable": rtrl_bad},
    )


def judge_sec7(
    section: str, runs: list[Run], values: dict[Run, dict[str, Any]], errors: dict[Run, str]
) -> list[CheckResult]:
    """A §7 sweep's results: one comparison per group (with its control), and §7.1's instability claim."""
    if errors:
        first = next(iter(errors.items()))
        return [
            CheckResult(
                f"rtrl.sec{section.replace('.', '')}-sweep",
                Verdict.FAIL,
                f"{len(errors)} run(s) raised, e.g. {first[0].label()}",
                reason=first[1],
            )
        ]
    tables = tabulate(runs, values)
    broken = tabulate(runs, values, rtrl_learner="broken-rtrl") if any(r.learner == "broken-rtrl" for r in runs) else {}
    out = [judge_comparison(section, tab, broken.get(key)) for key, tab in tables.items()]
    if section == "7.1":
        out.append(judge_instability(section, list(tables.values())))
    return out


def _jsonable(table: dict[str, Any]) -> dict[str, Any]:
    """The table without tuples as keys or non-finite floats (results.json is plain JSON)."""

    def fix(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return str(x)
        if isinstance(x, dict):
            return {str(k): fix(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [fix(v) for v in x]
        return x

    return {k: fix(v) for k, v in table.items() if k != "curves"} | {"curves": fix(table["curves"])}
