r"""The judge of the ``marschall-mimic`` sweep: Marschall, Cho & Savin 2020's online learners on the Mimic task.

Paper: O. Marschall, K. Cho, C. Savin, JMLR 21(135) (2020), arXiv:1907.02649; the runs are
:func:`verify.rtrl.marschall_mimic.run_cell`, one sweep cell per (realization, learning rate), every learner of a
realization on the same target, θ₀ and sequences. A learner's final loss and learning rate are chosen as for the Add
task (:mod:`verify.checks.marschall_add`: the grid's lowest median final loss).

What the paper states, from its abstract (its experiments section was not available here): the performances of the
algorithms cluster according to its criteria on two task families, the Add task and this one; alignment with exact
methods does not explain ultimate performance. The clustering is measured, not judged (as for the Add task).

Criteria, fixed before the run (after a pilot that chose the target's gain, :mod:`verify.rtrl.marschall_mimic`);
each a one-sided exact sign test over the R realizations at level :data:`~verify.checks.marschall_add.ALPHA`:

* (T0, exact RTRL uses the inputs' past) RTRL's final loss below its realization's ``memory-1`` baseline (the best
  predictor from the last two inputs);
* (T1, learning the recurrent weights pays) RTRL's final loss below the readout-only learner's (a trained readout on
  the fixed random student network) in the same realization.

Controls, through the same tests, must FAIL: the learner whose gradient is zeroed (θ never moves) judged by T0 and by
T1. (The readout-only learner is not a control of T0: a random reservoir has memory of its own and may go below
``memory-1``; its loss is reported.) PASS = T0, T1 and both controls FAIL.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from verify.checks.marschall_add import ALPHA, _curves, _fmt, _pick, _spearman, sign_test
from verify.rtrl.marschall_add import CONTROLS, LEARNERS, STOCHASTIC
from verify.rtrl.marschall_mimic import BASELINE_NAMES, MimicScale
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["judge_mimic_sweep", "not_judged"]


def not_judged(scale: str, sc: MimicScale) -> list[str]:
    """What of the paper's result the criteria do not judge at ``scale``."""
    out = [
        "the clustering of the algorithms' final performance by the paper's criteria (measured: the table)",
        "the clustering of their gradient alignment, and whether alignment with RTRL explains final performance "
        "(measured: the median alignment and its rank correlation with the final loss)",
        "the paper's target network, output function and loss (not available here: this instance's Elman tanh target "
        f"of {sc.n} units at recurrent gain {sc.target_gain:g}, linear outputs, squared error)",
    ]
    if scale != "paper":
        out.insert(0, f"the paper's sizes: {sc.n} units, {sc.steps} steps per run, {sc.realizations} realizations")
    return out


def _below(finals: list[float], levels: list[float]) -> tuple[bool, int, float]:
    """The sign test of ``finals[r] < levels[r]`` over the realizations (a non-finite final loss never wins)."""
    wins = sum(1 for x, lv in zip(finals, levels, strict=True) if math.isfinite(x) and x < lv)
    p = sign_test(wins, len(finals))
    return p <= ALPHA, wins, p


def _decide(
    fin: Mapping[str, list[float]], mem1: list[float], R: int
) -> tuple[list[dict[str, Any]], list[Control], bool, str]:
    """T0, T1 and the controls through the same tests (the module); the verdict and its reason."""
    ro = fin["readout-only"]
    t0, w0, p0 = _below(fin["rtrl"], mem1)
    t1, w1, p1 = _below(fin["rtrl"], ro)
    criteria = [
        {"name": "T0 exact RTRL uses the inputs' past: final loss below the memory-1 baseline",
         "passed": t0, "detail": f"{w0}/{R} (p={p0:.3g})"},
        {"name": "T1 learning the recurrent weights pays: RTRL's final loss below the readout-only learner's",
         "passed": t1, "detail": f"{w1}/{R} (p={p1:.3g})"},
    ]  # fmt: skip
    controls = []
    if "frozen" in fin:
        for crit, levels, what in (("T0", mem1, "the memory-1 baseline"), ("T1", ro, "the readout-only learner")):
            ok, w, p = _below(fin["frozen"], levels)
            controls.append(Control(f"its gradient zeroed (theta never moves) judged by {crit}: below {what}", "FAIL",
                                    "PASS" if ok else "FAIL", f"{w}/{R} (p={p:.3g})"))  # fmt: skip
    passed = all(c["passed"] for c in criteria) and bool(controls) and all(c.ok for c in controls)
    reason = "; ".join(str(c["name"]) for c in criteria if not c["passed"])
    bad = [c.name for c in controls if not c.ok] or ([] if controls else ["the frozen control was not run"])
    if bad:
        reason += ("; " if reason else "") + "control(s) did not FAIL: " + "; ".join(bad)
    return criteria, controls, passed, reason


def judge_mimic_sweep(
    claim_id: str,
    scale: str,
    sc: MimicScale,
    values: Mapping[tuple[int, float], Mapping[str, Any]],
    errors: Mapping[Any, str],
) -> CheckResult:
    """Judge the cells ``values`` ((realization, lr) -> :func:`~verify.rtrl.marschall_mimic.run_cell`'s dict)."""
    keys = [(r, lr) for r in range(sc.realizations) for lr in sc.lrs]
    missing = [k for k in keys if k not in values]
    if errors or missing:
        return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} cell(s) missing: the sweep is incomplete",
                           reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or str(missing))  # fmt: skip
    R = sc.realizations
    base = [values[(r, sc.lrs[0])]["baselines"] for r in range(R)]
    mem1 = [float(b["memory-1"]) for b in base]
    names = [x for x in (*LEARNERS, *CONTROLS) if x in values[keys[0]]["learners"]]
    lr_of = {k: _pick(values, sc, k) for k in names}
    cell = {k: [values[(r, lr_of[k])]["learners"][k] for r in range(R)] for k in names}
    fin = {k: [float(c["final"]) for c in cell[k]] for k in names}
    align = {k: [c["alignment"] for c in cell[k]] for k in names}
    criteria, controls, passed, reason = _decide(fin, mem1, R)
    med, med_align, rho, summary, rows = _describe(sc, names, fin, align, lr_of, base, mem1)
    return CheckResult(
        claim_id,
        Verdict.PASS if passed else Verdict.FAIL,
        summary,
        alpha=ALPHA,
        reason=None if passed else reason,
        controls=tuple(controls),
        data={
            "scale": scale,
            "criteria": criteria,
            "not_judged": not_judged(scale, sc),
            "baselines": base,
            "lr": lr_of,
            "final_median": med,
            "final": fin,
            "alignment_median": med_align,
            "alignment_final_rank_correlation": rho,
            "curves": _curves(values, sc, names, lr_of),
            "figures": [{
                "kind": "table",
                "title": "Marschall et al. Mimic task: per learner at its learning rate (median over realizations)",
                "columns": ["learner", "kind", "lr", "final loss", "below memory-1", "alignment"],
                "rows": rows,
            }],
        },
    )  # fmt: skip


def _describe(
    sc: MimicScale,
    names: list[str],
    fin: Mapping[str, list[float]],
    align: Mapping[str, list[Any]],
    lr_of: Mapping[str, float],
    base: list[Mapping[str, float]],
    mem1: list[float],
) -> tuple[dict[str, float], dict[str, float | None], float | None, str, list[list[Any]]]:
    """The medians, the alignment's rank correlation with the final loss, the summary and the table's rows."""
    R = sc.realizations
    med = {k: float(np.median(fin[k])) for k in names}
    med_align = {k: float(np.median([a for a in align[k] if a is not None])) if any(a is not None for a in align[k])
                 else None for k in names}  # fmt: skip
    approx = [k for k in LEARNERS if k in names and k != "rtrl"]
    rho = _spearman([med_align[k] or math.nan for k in approx], [med[k] for k in approx])
    med_base = {b: float(np.median([x[b] for x in base])) for b in BASELINE_NAMES}
    below = {k: _below(fin[k], mem1)[1] for k in names}
    summary = (
        f"Marschall et al. Mimic task, Elman tanh n={sc.n} mimicking a random Elman tanh target of {sc.n} units "
        f"(gain {sc.target_gain:g}), {R} realizations x {sc.steps} steps, SGD lr grid "
        f"{', '.join(f'{x:g}' for x in sc.lrs)}; median baselines mean {med_base['mean']:.4g} / input-only "
        f"{med_base['input-only']:.4g} / memory-1 {med_base['memory-1']:.4g}; median final loss (lr; below memory-1 "
        "in; median alignment with RTRL) "
        + "; ".join(f"{k} {_fmt(med[k])} ({lr_of[k]:g}; {below[k]}/{R}; {_fmt(med_align[k])})" for k in names)
        + f"; rank correlation of alignment with final loss over the approximations {_fmt(rho)}"
    )
    rows = [[k, "stochastic" if k in STOCHASTIC else ("control" if k in CONTROLS else "deterministic"),
             f"{lr_of[k]:g}", _fmt(med[k]), f"{below[k]}/{R}", _fmt(med_align[k])] for k in names]  # fmt: skip
    return med, med_align, rho, summary, rows
