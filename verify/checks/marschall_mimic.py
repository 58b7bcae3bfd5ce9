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

from verify.checks.marschall_add import ALPHA, Runs, _fmt, collect, incomplete, sign_test, sweep_result
from verify.rtrl.marschall_add import CONTROLS, STOCHASTIC
from verify.rtrl.marschall_mimic import BASELINE_NAMES, MimicScale
from verify.verdict import CheckResult, Control

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
    bad = incomplete(claim_id, sc, values, errors)
    if bad is not None:
        return bad
    base = [values[(r, sc.lrs[0])]["baselines"] for r in range(sc.realizations)]
    mem1 = [float(b["memory-1"]) for b in base]
    runs = collect(values, sc)
    criteria, controls, passed, reason = _decide(runs.fin, mem1, sc.realizations)
    summary, rows = _describe(sc, runs, base, mem1)
    data = {"scale": scale, "criteria": criteria, "not_judged": not_judged(scale, sc), "baselines": base}
    title = "Marschall et al. Mimic task: per learner at its learning rate (median over realizations)"
    columns = ["learner", "kind", "lr", "final loss", "below memory-1", "alignment"]
    return sweep_result(claim_id, (passed, reason, controls, summary), runs, values, sc, data, (title, columns, rows))


def _describe(
    sc: MimicScale, runs: Runs, base: list[Mapping[str, float]], mem1: list[float]
) -> tuple[str, list[list[Any]]]:
    """The summary and the table's rows."""
    R, names, med, med_align, lr_of = sc.realizations, runs.names, runs.med, runs.med_align, runs.lr_of
    med_base = {b: float(np.median([x[b] for x in base])) for b in BASELINE_NAMES}
    below = {k: _below(runs.fin[k], mem1)[1] for k in names}
    summary = (
        f"Marschall et al. Mimic task, Elman tanh n={sc.n} mimicking a random Elman tanh target of {sc.n} units "
        f"(gain {sc.target_gain:g}), {R} realizations x {sc.steps} steps, SGD lr grid "
        f"{', '.join(f'{x:g}' for x in sc.lrs)}; median baselines mean {med_base['mean']:.4g} / input-only "
        f"{med_base['input-only']:.4g} / memory-1 {med_base['memory-1']:.4g}; median final loss (lr; below memory-1 "
        "in; median alignment with RTRL) "
        + "; ".join(f"{k} {_fmt(med[k])} ({lr_of[k]:g}; {below[k]}/{R}; {_fmt(med_align[k])})" for k in names)
        + f"; rank correlation of alignment with final loss over the approximations {_fmt(runs.rho)}"
    )
    rows = [[k, "stochastic" if k in STOCHASTIC else ("control" if k in CONTROLS else "deterministic"),
             f"{lr_of[k]:g}", _fmt(med[k]), f"{below[k]}/{R}", _fmt(med_align[k])] for k in names]  # fmt: skip
    return summary, rows
