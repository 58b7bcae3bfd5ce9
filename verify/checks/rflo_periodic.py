r"""The judge of the ``rflo-fig2`` sweep: Murray 2019, Fig. 2, the periodic output task trained by RFLO and BPTT.

J. M. Murray, "Local online learning in recurrent networks with random feedback", eLife 8:e43299 (2019), Fig. 2
(a)-(d) and its caption. The runs are :func:`verify.rtrl.rflo_periodic.run_period`, one sweep cell per period;
every learner runs on the same R realizations (W, W_out, B shared: paired comparisons). A learner's *final loss*
is its mean trial loss over the last 5% of the trials (a diverged run: infinite).

Criteria, fixed before the run. Each is a one-sided exact sign test over the R realizations at level
:data:`ALPHA` (R = 9: at least 8 of 9 realizations, p = 0.0195); a criterion over several periods must hold at
each (an intersection-union test: its false-PASS rate stays <= :data:`ALPHA`).

* (T0, premise) BPTT learns the recurrent weights: its final loss below the readout-only learner's (W frozen, the
  fixed random reservoir) at every period;
* (T1, Fig. 2(a, b): "RFLO learns the task") RFLO's final loss below the readout-only learner's at every period
  (so below the untrained loss, Fig. 2(b)'s gray line, too: both are reported);
* (T2, Fig. 2(b): the loss grows with the period, faster for RFLO than for BPTT) per realization, the
  least-squares slope over the periods of log RFLO-final on log period is > 0 (T2a), and so is the slope of
  log(RFLO-final / BPTT-final) (T2b);
* (T3, Fig. 2(c): the readout aligns with the feedback B) RFLO's alignment cos(W_out, B) at the end is above its
  start in the realizations, at every period, and its median at the end exceeds 2/sqrt(N) (twice the spread of
  the cosine of two random directions).

Controls, run through the same criteria, must FAIL: the frozen network (no update; its final loss is the
untrained one) and BPTT with its recurrent update sign-flipped (gradient ascent on W, the readout learned) judged
by T1; BPTT's readout alignment with B (which BPTT never uses) judged by T3; and T2b on BPTT against BPTT of the
next realization (no systematic gap; this control PASSes by chance with probability <= :data:`ALPHA`).
PASS = T0-T3 and every control FAILs. Not judged (``data["not_judged"]``): Fig. 2(d)'s two partial
approximations (measured and reported: the caption states no outcome for them), the curves' shapes, and at a
reduced scale the paper's trial count.

False-FAIL rate: if each realization independently favours a statement with probability q, one period's sign test
FAILs with probability 1 - q^9 - 9 q^8 (1 - q) (q = 0.99: 0.003; q = 0.95: 0.071), so a criterion over P periods
at most P times that; where every realization favours it (a large effect), none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from verify.rtrl.rflo_periodic import PeriodicScale
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["ALPHA", "judge_periodic_sweep", "not_judged", "sign_test"]

#: the level of every sign test (one-sided)
ALPHA = 0.05


def sign_test(wins: int, n: int) -> float:
    """One-sided exact sign test: P(X >= wins) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2.0**n


def _fmt(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{x:.3g}"


def _beats(a: list[float], b: list[float]) -> tuple[int, float]:
    """Realizations where a < b (a finite), and the sign test's p-value."""
    wins = sum(1 for x, y in zip(a, b, strict=True) if math.isfinite(x) and x < y)
    return wins, sign_test(wins, len(a))


def _slopes(periods: list[int], series: list[list[float]]) -> list[float]:
    """Per realization: the least-squares slope of log(series) on log(period) (nan where a value is not finite)."""
    x = np.log(np.asarray(periods, dtype=float))
    out = []
    for ys in zip(*series, strict=True):
        y = np.asarray(ys, dtype=float)
        if not np.all(np.isfinite(y)) or np.any(y <= 0):
            out.append(float("nan"))
            continue
        out.append(float(np.polyfit(x, np.log(y), 1)[0]))
    return out


def _positive(slopes: list[float]) -> tuple[int, float]:
    wins = sum(1 for s in slopes if math.isfinite(s) and s > 0)
    return wins, sign_test(wins, len(slopes))


def not_judged(scale: str, sc: PeriodicScale) -> list[str]:
    """What of Fig. 2 the criteria do not judge at ``scale``."""
    out = [
        "Fig. 2(d): how RFLO with locality only and with random feedback only compare with RFLO and BPTT at "
        f"T = {sc.fig2d} tau (their final losses are reported; the caption states no outcome for them)",
        "Fig. 2(a): the learning curves' shapes and speeds",
    ]
    if scale != "paper":
        out.insert(0, f"the paper's training length: {sc.trials} trials per run here, fewer than the 10 000 of "
                      "--scale paper (the authors' example's count; the paper's is not in the caption); periods "
                      f"{', '.join(str(p) for p in sc.periods)} tau")  # fmt: skip
    return out


class _Runs:
    """The cells of one sweep, by period: final losses, untrained losses and alignments per learner."""

    def __init__(self, sc: PeriodicScale, values: Mapping[int, Mapping[str, Any]]) -> None:
        self.sc, self.periods = sc, list(sc.periods)
        self.L = {p: values[p]["learners"] for p in self.periods}
        self.fin = {p: {k: [float(x) for x in v["final"]] for k, v in self.L[p].items()} for p in self.periods}
        self.untrained = {p: [float(x) for x in self.L[p]["rflo"]["untrained"]] for p in self.periods}
        self.R = len(self.fin[self.periods[0]]["rflo"])
        self.threshold = 2.0 / math.sqrt(sc.n)

    def below(self, a: str | None, b: str = "readout") -> tuple[bool, list[str]]:
        """At every period, ``a``'s final loss (None: the untrained one) below ``b``'s by the sign test."""
        ok, parts = True, []
        for p in self.periods:
            w, pv = _beats(self.untrained[p] if a is None else self.fin[p][a], self.fin[p][b])
            ok &= pv <= ALPHA
            parts.append(f"T={p}tau {w}/{self.R} (p={pv:.3g})")
        return ok, parts

    def aligned(self, learner: str) -> tuple[bool, list[str]]:
        """At every period, ``learner``'s cos(W_out, B) rose in the realizations (sign test) to a median above
        :attr:`threshold`."""
        ok, parts = True, []
        for p in self.periods:
            a0, a1 = self.L[p][learner]["align_start"], self.L[p][learner]["align_end"]
            w = sum(1 for x, y in zip(a0, a1, strict=True) if y > x)
            med = float(np.median(a1))
            ok &= sign_test(w, self.R) <= ALPHA and med > self.threshold
            parts.append(f"T={p}tau {float(np.median(a0)):.2f}->{med:.2f}, up in {w}/{self.R}")
        return ok, parts

    def growth(self, a: str, b: str | None = None, shift: int = 0) -> tuple[list[float], int, float]:
        """Per realization, the slope of log(a-final [/ b-final of the realization ``shift`` on]) on log period;
        the realizations where it is > 0 and the sign test's p-value."""
        series = []
        for p in self.periods:
            xs = self.fin[p][a]
            ys = list(np.roll(self.fin[p][b], shift)) if b else [1.0] * self.R
            series.append([x / y if y > 0 else float("nan") for x, y in zip(xs, ys, strict=True)])
        slopes = _slopes(self.periods, series)
        wins, pv = _positive(slopes)
        return slopes, wins, pv

    def med(self, p: int, k: str) -> str:
        return _fmt(float(np.median(self.fin[p][k])))


def _controls(runs: _Runs) -> tuple[Control, ...]:
    """The learners that cannot learn, through the criteria they must FAIL (the module)."""
    frozen, frozen_parts = runs.below(None)
    flip, flip_parts = runs.below("bptt-flipped")
    align, align_parts = runs.aligned("bptt")
    _, w_null, p_null = runs.growth("bptt", "bptt", shift=1)
    return (
        Control("the frozen network (no update) judged by T1: below the readout-only learner", "FAIL",
                "PASS" if frozen else "FAIL", "; ".join(frozen_parts)),
        Control("BPTT with its recurrent update sign-flipped judged by T1", "FAIL", "PASS" if flip else "FAIL",
                "; ".join(flip_parts)),
        Control("BPTT's readout alignment with B (unused by BPTT) judged by T3", "FAIL",
                "PASS" if align else "FAIL", "; ".join(align_parts)),
        Control("T2b on BPTT against BPTT of the next realization (no systematic gap)", "FAIL",
                "PASS" if p_null <= ALPHA else "FAIL", f"slope > 0 in {w_null}/{runs.R} (p={p_null:.3g})"),
    )  # fmt: skip


def _criteria(runs: _Runs) -> tuple[list[dict[str, Any]], dict[str, list[float]], list[str]]:
    """T0-T3 (the module): the criteria, the per-realization slopes, T3's parts."""
    R = runs.R
    t0, t0_parts = runs.below("bptt")
    t1, t1_parts = runs.below("rflo")
    s_rflo, w2a, p2a = runs.growth("rflo")
    s_gap, w2b, p2b = runs.growth("rflo", "bptt")
    t3, t3_parts = runs.aligned("rflo")
    criteria = [
        {"name": "T0 premise: BPTT below the readout-only learner at every period", "passed": t0,
         "detail": "; ".join(t0_parts)},
        {"name": "T1 Fig. 2(a, b): RFLO below the readout-only learner at every period", "passed": t1,
         "detail": "; ".join(t1_parts)},
        {"name": "T2a Fig. 2(b): RFLO's final loss grows with the period (slope of log loss on log period > 0)",
         "passed": p2a <= ALPHA,
         "detail": f"{w2a}/{R} (p={p2a:.3g}); median slope {float(np.nanmedian(s_rflo)):.3g}"},
        {"name": "T2b Fig. 2(b): RFLO's loss grows faster than BPTT's (slope of log(RFLO/BPTT) > 0)",
         "passed": p2b <= ALPHA,
         "detail": f"{w2b}/{R} (p={p2b:.3g}); median slope {float(np.nanmedian(s_gap)):.3g}"},
        {"name": f"T3 Fig. 2(c): RFLO's readout aligns with B (up in the realizations, median > "
                 f"{runs.threshold:.3f})", "passed": t3, "detail": "; ".join(t3_parts)},
    ]  # fmt: skip
    return criteria, {"rflo": s_rflo, "rflo_over_bptt": s_gap}, t3_parts


def judge_periodic_sweep(
    claim_id: str,
    scale: str,
    sc: PeriodicScale,
    values: Mapping[int, Mapping[str, Any]],
    errors: Mapping[Any, str],
) -> CheckResult:
    """Judge the cells ``values`` (period -> :func:`~verify.rtrl.rflo_periodic.run_period`'s dict) (see the module)."""
    periods = list(sc.periods)
    missing = [p for p in periods if p not in values]
    if errors or missing:
        return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} period(s) missing: the sweep is incomplete",
                           reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or str(missing))  # fmt: skip
    runs = _Runs(sc, values)
    criteria, slopes, t3_parts = _criteria(runs)
    controls = _controls(runs)
    passed = all(c["passed"] for c in criteria) and all(c.ok for c in controls)
    reason = "; ".join(str(c["name"]) for c in criteria if not c["passed"])
    bad = [c.name for c in controls if not c.ok]
    if bad:
        reason += ("; " if reason else "") + "control(s) did not FAIL: " + "; ".join(bad)
    fin, untrained, d2 = runs.fin, runs.untrained, sc.fig2d
    fig2d = {k: float(np.median(fin[d2][k])) for k in ("bptt", "rflo", "local-only", "feedback-only", "readout")
             if d2 in fin and k in fin[d2]}  # fmt: skip
    summary = (
        f"Murray Fig. 2, N={sc.n}, tau={sc.tau}, {runs.R} realizations, {sc.trials} trials, eta={sc.eta:g}: median "
        "final loss (untrained / BPTT / RFLO / readout-only) "
        + "; ".join(f"T={p}tau {_fmt(float(np.median(untrained[p])))} / {runs.med(p, 'bptt')} / "
                    f"{runs.med(p, 'rflo')} / {runs.med(p, 'readout')}" for p in periods)
        + f"; RFLO alignment with B {'; '.join(t3_parts)}"
        + (f"; Fig. 2(d) at T={d2}tau: " + ", ".join(f"{k} {_fmt(v)}" for k, v in fig2d.items()) if fig2d else "")
    )  # fmt: skip
    return CheckResult(
        claim_id,
        Verdict.PASS if passed else Verdict.FAIL,
        summary,
        alpha=ALPHA,
        reason=None if passed else reason,
        controls=controls,
        data=_data(runs, scale, values, criteria, slopes, fig2d),
    )


def _data(
    runs: _Runs,
    scale: str,
    values: Mapping[int, Mapping[str, Any]],
    criteria: list[dict[str, Any]],
    slopes: dict[str, list[float]],
    fig2d: dict[str, float],
) -> dict[str, Any]:
    """The result's data: criteria, medians, slopes, Fig. 2(d)'s levels, the cells and the table."""
    sc, periods, fin, untrained = runs.sc, runs.periods, runs.fin, runs.untrained
    learners = list(runs.L[periods[0]])
    return {
        "scale": scale,
        "criteria": criteria,
        "not_judged": not_judged(scale, sc),
        "periods": periods,
        "final_median": {str(p): {k: float(np.median(v)) for k, v in fin[p].items()} for p in periods},
        "untrained_median": {str(p): float(np.median(untrained[p])) for p in periods},
        "slopes": slopes,
        "fig2d": fig2d,
        "rflo_flipped_alignment_end": {
            str(p): float(np.median(runs.L[p]["rflo-flipped"]["align_end"]))
            for p in periods
            if "rflo-flipped" in runs.L[p]
        },
        "cells": {str(p): dict(values[p]) for p in periods},
        "figures": [
            {
                "kind": "table",
                "title": "Murray 2019 Fig. 2(b): median final loss over the realizations, by period (in tau)",
                "columns": ["period", "untrained", *learners],
                "rows": [
                    [p, _fmt(float(np.median(untrained[p])))] + [runs.med(p, k) for k in learners] for p in periods
                ],
            }
        ],
    }
