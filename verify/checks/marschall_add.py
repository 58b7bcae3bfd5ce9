r"""The judge of the ``marschall-add`` sweep: Marschall, Cho & Savin 2020's online learners on the Add task.

Paper: O. Marschall, K. Cho, C. Savin, JMLR 21(135) (2020), arXiv:1907.02649; the runs are
:func:`verify.rtrl.marschall_add.run_cell`, one sweep cell per (realization, learning rate), every learner of a
realization on the same θ₀ and sequences. A learner's *final loss* is its expected test loss at the end of training;
its learning rate is the one of the grid with the lowest median final loss over the realizations (the same grid for
every learner; chosen on the test sequence, which favours every learner alike).

What the paper states, from its abstract (the text of its experiments section was not available here): "Testing
these algorithms on two parametric task families shows that performances cluster according to our criteria.
Although a similar clustering is also observed for pairwise gradient alignment, alignment with exact methods does
not explain ultimate performance" (arXiv: "does not alone explain ultimate performance, especially for stochastic
algorithms"); and the Add task's design (the authors' code, after Pitis 2016): a learner that learns neither
dependency sits at the mean baseline, one that learns the first only at the t1-only baseline, and only one that
learns both goes below it (:func:`verify.rtrl.marschall_add.add_baselines`).

Criteria, fixed before the run; each a one-sided exact sign test over the R realizations at level :data:`ALPHA`
(R = 5: all 5, p = 0.031; R = 9: 8 of 9, p = 0.020):

* (T0, the premise: exact RTRL learns both dependencies) RTRL's final loss below the t1-only baseline;
* (T1, RTRL learns at least the first) RTRL's final loss below the mean baseline.

Controls, through the same tests, must FAIL: the learner whose gradient is zeroed (θ never moves) judged by T0 and
by T1, and the readout-only learner (RTRL's gradient with the cell's entries zeroed: a fixed random network) judged
by T0. PASS = T0, T1 and every control FAILs.

Measured, not judged (``data["not_judged"]``): the clustering of the algorithms' final losses and of their alignment
with RTRL, and whether alignment explains final performance (the abstract's statements: a statement that something
does *not* explain something is not one a significance test can PASS; the table reports, per learner, the median
final loss, the realizations below each baseline and the median alignment, and the rank correlation of alignment
with final loss over the approximate learners); and at a reduced scale the paper's sizes.

False-FAIL rate: if each realization independently goes below the baseline with probability q, a criterion FAILs
with probability 1 - q^5 at R = 5 (q = 0.99: 0.049) and 1 - q^9 - 9q^8(1 - q) at R = 9 (q = 0.99: 0.003).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from verify.rtrl.marschall_add import CONTROLS, LEARNERS, STOCHASTIC, AddScale, add_baselines
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["ALPHA", "Runs", "collect", "incomplete", "judge_add_sweep", "not_judged", "sign_test", "sweep_result"]

#: the level of every sign test (one-sided)
ALPHA = 0.05


def sign_test(wins: int, n: int) -> float:
    """One-sided exact sign test: P(X >= wins) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2.0**n


def _fmt(x: float | None) -> str:
    return "--" if x is None else ("inf" if not math.isfinite(x) else f"{x:.3g}")


def not_judged(scale: str, sc: AddScale) -> list[str]:
    """What of the paper's result the criteria do not judge at ``scale``."""
    out = [
        "the clustering of the algorithms' final performance by the paper's criteria (measured: the table)",
        "the clustering of their gradient alignment, and whether alignment with RTRL explains final performance "
        "(measured: the median alignment and its rank correlation with the final loss)",
        "the Mimic task (the paper's second task family): its own sweep, marschall-mimic",
    ]
    if scale != "paper":
        out.insert(0, f"the paper's sizes: t1, t2 = {sc.t1}, {sc.t2}, {sc.n} units, {sc.steps} steps per run, "
                      f"{sc.realizations} realizations (the paper's t1, t2, size and length were not available "
                      "here)")  # fmt: skip
    return out


class _Grid(Protocol):
    """What the learning-rate choice and the curves read of a scale (the Add and the Mimic task's alike)."""

    @property
    def realizations(self) -> int: ...
    @property
    def lrs(self) -> tuple[float, ...]: ...


def _pick(values: Mapping[tuple[int, float], Mapping[str, Any]], sc: _Grid, name: str) -> float:
    """The learner's learning rate: the lowest median final loss over the realizations."""
    best, best_lr = math.inf, sc.lrs[0]
    for lr in sc.lrs:
        med = float(np.median([values[(r, lr)]["learners"][name]["final"] for r in range(sc.realizations)]))
        if med < best:
            best, best_lr = med, lr
    return best_lr


def _below(finals: list[float], level: float) -> tuple[bool, int, float]:
    wins = sum(1 for x in finals if math.isfinite(x) and x < level)
    p = sign_test(wins, len(finals))
    return p <= ALPHA, wins, p


def _spearman(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or any(not math.isfinite(v) for v in x + y):
        return None
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def _decide(
    fin: Mapping[str, list[float]], base: Mapping[str, float], R: int
) -> tuple[list[dict[str, Any]], list[Control], bool, str]:
    """T0, T1 and the controls through the same tests (the module); the verdict and its reason."""
    t0, w0, p0 = _below(fin["rtrl"], base["t1-only"])
    t1, w1, p1 = _below(fin["rtrl"], base["mean"])
    criteria = [
        {"name": f"T0 exact RTRL learns both dependencies: final loss below the t1-only baseline "
                 f"{base['t1-only']:.4f}", "passed": t0, "detail": f"{w0}/{R} (p={p0:.3g})"},
        {"name": f"T1 RTRL learns at least the first: final loss below the mean baseline {base['mean']:.4f}",
         "passed": t1, "detail": f"{w1}/{R} (p={p1:.3g})"},
    ]  # fmt: skip
    controls = []
    for k, level, crit in (("frozen", "t1-only", "T0"), ("frozen", "mean", "T1"), ("readout-only", "t1-only", "T0")):
        if k not in fin:
            continue
        ok, w, p = _below(fin[k], base[level])
        what = (
            "its gradient zeroed (theta never moves)" if k == "frozen" else "readout only (the cell's gradient zeroed)"
        )
        controls.append(Control(f"{what} judged by {crit}: below the {level} baseline", "FAIL",
                                "PASS" if ok else "FAIL", f"{w}/{R} (p={p:.3g})"))  # fmt: skip
    passed = all(c["passed"] for c in criteria) and all(c.ok for c in controls)
    reason = "; ".join(str(c["name"]) for c in criteria if not c["passed"])
    bad = [c.name for c in controls if not c.ok]
    if bad:
        reason += ("; " if reason else "") + "control(s) did not FAIL: " + "; ".join(bad)
    return criteria, controls, passed, reason


@dataclass(frozen=True)
class Runs:
    """The learners of a sweep, each at its learning rate (:func:`_pick`): final losses, alignments and medians."""

    names: list[str]
    lr_of: dict[str, float]
    fin: dict[str, list[float]]
    align: dict[str, list[Any]]
    med: dict[str, float]
    med_align: dict[str, float | None]
    rho: float | None  # the rank correlation of alignment with final loss over the approximations


def incomplete(
    claim_id: str, sc: _Grid, values: Mapping[tuple[int, float], Any], errors: Mapping[Any, str]
) -> CheckResult | None:
    """FAIL naming the missing cells and the errors of an incomplete sweep; None when every cell is there."""
    keys = [(r, lr) for r in range(sc.realizations) for lr in sc.lrs]
    missing = [k for k in keys if k not in values]
    if not (errors or missing):
        return None
    return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} cell(s) missing: the sweep is incomplete",
                       reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or str(missing))  # fmt: skip


def collect(values: Mapping[tuple[int, float], Mapping[str, Any]], sc: _Grid) -> Runs:
    """Every learner's runs at its learning rate, with the medians over the realizations (the Add and Mimic tasks')."""
    R = sc.realizations
    names = [x for x in (*LEARNERS, *CONTROLS) if x in values[(0, sc.lrs[0])]["learners"]]
    lr_of = {k: _pick(values, sc, k) for k in names}
    cell = {k: [values[(r, lr_of[k])]["learners"][k] for r in range(R)] for k in names}
    fin = {k: [float(c["final"]) for c in cell[k]] for k in names}
    align = {k: [c["alignment"] for c in cell[k]] for k in names}
    med = {k: float(np.median(fin[k])) for k in names}
    med_align = {k: float(np.median([a for a in align[k] if a is not None])) if any(a is not None for a in align[k])
                 else None for k in names}  # fmt: skip
    approx = [k for k in LEARNERS if k in names and k != "rtrl"]
    rho = _spearman([med_align[k] or math.nan for k in approx], [med[k] for k in approx])
    return Runs(names, lr_of, fin, align, med, med_align, rho)


def sweep_result(
    claim_id: str,
    decided: tuple[bool, str, list[Control], str],
    runs: Runs,
    values: Mapping[tuple[int, float], Mapping[str, Any]],
    sc: _Grid,
    data: dict[str, Any],
    table: tuple[str, list[str], list[list[Any]]],
) -> CheckResult:
    """The sweep's result: ``decided`` = (passed, reason, controls, summary), the task's ``data`` (scale, criteria,
    ...), the runs' medians and curves, and ``table`` = (title, columns, rows) as its figure."""
    passed, reason, controls, summary = decided
    title, columns, rows = table
    return CheckResult(
        claim_id,
        Verdict.PASS if passed else Verdict.FAIL,
        summary,
        alpha=ALPHA,
        reason=None if passed else reason,
        controls=tuple(controls),
        data={
            **data,
            "lr": runs.lr_of,
            "final_median": runs.med,
            "final": runs.fin,
            "alignment_median": runs.med_align,
            "alignment_final_rank_correlation": runs.rho,
            "curves": _curves(values, sc, runs.names, runs.lr_of),
            "figures": [{"kind": "table", "title": title, "columns": columns, "rows": rows}],
        },
    )


def judge_add_sweep(
    claim_id: str,
    scale: str,
    sc: AddScale,
    values: Mapping[tuple[int, float], Mapping[str, Any]],
    errors: Mapping[Any, str],
) -> CheckResult:
    """Judge the cells ``values`` ((realization, lr) -> :func:`~verify.rtrl.marschall_add.run_cell`'s dict)."""
    bad = incomplete(claim_id, sc, values, errors)
    if bad is not None:
        return bad
    base = add_baselines()
    runs = collect(values, sc)
    criteria, controls, passed, reason = _decide(runs.fin, base, sc.realizations)
    summary, rows = _describe(sc, runs, base)
    data = {"scale": scale, "criteria": criteria, "not_judged": not_judged(scale, sc), "baselines": base}
    title = "Marschall et al. Add task: per learner at its learning rate (median over realizations)"
    columns = ["learner", "kind", "lr", "final loss", "below t1-only", "below mean", "alignment"]
    return sweep_result(claim_id, (passed, reason, controls, summary), runs, values, sc, data, (title, columns, rows))


def _describe(sc: AddScale, runs: Runs, base: Mapping[str, float]) -> tuple[str, list[list[Any]]]:
    """The summary and the table's rows."""
    R, names, fin, med, med_align, lr_of = sc.realizations, runs.names, runs.fin, runs.med, runs.med_align, runs.lr_of
    summary = (
        f"Marschall et al. Add task (t1={sc.t1}, t2={sc.t2}), Elman tanh n={sc.n}, {R} realizations x {sc.steps} "
        f"steps, SGD lr grid {', '.join(f'{x:g}' for x in sc.lrs)}; baselines mean {base['mean']:.4f} / t1-only "
        f"{base['t1-only']:.4f} / both {base['both']:.4f}; median final loss (lr; below t1-only in; median alignment "
        "with RTRL) " + "; ".join(f"{k} {_fmt(med[k])} ({lr_of[k]:g}; {_below(fin[k], base['t1-only'])[1]}/{R}; "
                                   f"{_fmt(med_align[k])})" for k in names)
        + f"; rank correlation of alignment with final loss over the approximations {_fmt(runs.rho)}"
    )  # fmt: skip
    rows = [[k, "stochastic" if k in STOCHASTIC else ("control" if k in CONTROLS else "deterministic"),
             f"{lr_of[k]:g}", _fmt(med[k]), f"{_below(fin[k], base['t1-only'])[1]}/{R}",
             f"{_below(fin[k], base['mean'])[1]}/{R}", _fmt(med_align[k])] for k in names]  # fmt: skip
    return summary, rows


def _curves(
    values: Mapping[tuple[int, float], Mapping[str, Any]], sc: _Grid, names: list[str], lr_of: Mapping[str, float]
) -> dict[str, Any]:
    """The median learning curve (expected test loss against time steps) of every learner at its learning rate."""
    first = values[(0, sc.lrs[0])]
    out: dict[str, Any] = {"steps": first["curve_steps"]}
    for k in names:
        cs = [values[(r, lr_of[k])]["learners"][k]["curve"] for r in range(sc.realizations)]
        L = len(first["curve_steps"])
        padded = [c + [math.inf] * (L - len(c)) for c in cs]  # a diverged run: infinite from then on
        out[k] = [float(np.median([c[i] for c in padded])) for i in range(L)]
    return out
