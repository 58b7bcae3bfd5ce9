"""The judge of the ``uoro-ib-truncation`` sweep: UORO §4's "TBPTT requires a truncation above 200 to converge".

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, §4 (influence balancing,
the text after Fig. 3(a)): n = 23 units, 13 minus signs; "TBPTT-T fails to converge for any learning rate, even
for truncations largely above n"; "TBPTT requires a truncation above 200 to converge". The runs are
:func:`verify.uoro.influence_truncation.block_tbptt_run` (the paper's TBPTT-T read as blocks of k steps), one per
(k, η) of :func:`~verify.uoro.influence_truncation.truncation_grid`.

Criteria, fixed before the run. A run *converged* when it did not diverge and its mean online loss over the
last fifth is below ``uoro.influence-balancing-learning``'s level (0.05, a tenth of the initial loss); a k
converges when some η of the grid converges.

* (T0, premise) some k of the grid converges: the harness can learn;
* (T1, "fails [...] even for truncations largely above n") no k < 4n converges for any η;
* (T2, "requires a truncation above 200") no k <= 200 converges for any η of the grid.

Control, a learner that cannot learn run in the same harness: the block TBPTT at the largest k with its
estimate sign-flipped (gradient ascent) must not converge at any η. PASS = T0, T1, T2 and the control FAILs;
T1 or T2 not holding is a FAIL and a FINDING naming the smallest k that converged and its η.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from theory.claims.uoro_learning import CONVERGED_LOSS
from verify.uoro.influence_truncation import TruncationGrid
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["converged", "judge_truncation_sweep"]

#: the paper's threshold: "requires a truncation above 200"
PAPER_THRESHOLD = 200


def converged(value: Mapping[str, Any]) -> bool:
    """A run converged: no divergence and the last fifth's mean online loss below :data:`CONVERGED_LOSS`."""
    return value["diverged_at"] is None and float(value["final_loss"]) < CONVERGED_LOSS


def judge_truncation_sweep(
    claim_id: str,
    grid: TruncationGrid,
    values: Mapping[tuple[int, float, float], Mapping[str, Any]],
    errors: Mapping[Any, str],
) -> CheckResult:
    """Judge the runs ``values`` ((k, η, factor) -> :func:`block_tbptt_run`'s dict) of ``grid`` (see the module)."""
    runs = [(k, eta, 1.0) for k in grid.ks for eta in grid.etas]
    controls_keys = [(max(grid.ks), eta, -1.0) for eta in grid.etas]
    missing = [key for key in runs + controls_keys if key not in values]
    if errors or missing:
        return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} run(s) missing: the sweep is incomplete",
                           reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or str(missing))  # fmt: skip
    good = {k: [eta for eta in grid.etas if converged(values[(k, eta, 1.0)])] for k in grid.ks}
    conv_ks = [k for k in grid.ks if good[k]]
    k_min = min(conv_ks) if conv_ks else None
    largely = 4 * grid.n
    t0 = k_min is not None
    t1 = all(not good[k] for k in grid.ks if k < largely)
    t2 = all(not good[k] for k in grid.ks if k <= PAPER_THRESHOLD)
    flipped = [eta for eta in grid.etas if converged(values[(max(grid.ks), eta, -1.0)])]
    control = Control(
        f"block TBPTT at k = {max(grid.ks)} with its estimate sign-flipped (gradient ascent) converges at some eta",
        "FAIL",
        "PASS" if flipped else "FAIL",
        "converged at eta " + ", ".join(f"{e:g}" for e in flipped) if flipped else "no eta converged",
    )

    def best(k: int) -> str:
        finals = {eta: values[(k, eta, 1.0)] for eta in grid.etas}
        eta = min(finals, key=lambda e: float(finals[e]["final_loss"]))
        v = finals[eta]
        div = sum(finals[e]["diverged_at"] is not None for e in grid.etas)
        return f"k={k}: best {float(v['final_loss']):.3g} (eta {eta:g}), {div}/{len(grid.etas)} diverged"

    criteria = [
        {"name": "T0 premise: some k of the grid converges", "passed": t0, "detail": f"smallest k converged: {k_min}"},
        {"name": f"T1 no k < 4n = {largely} converges for any eta", "passed": t1,
         "detail": "; ".join(best(k) for k in grid.ks if k < largely)},
        {"name": f"T2 no k <= {PAPER_THRESHOLD} converges for any eta (the paper's 'above 200')", "passed": t2,
         "detail": "; ".join(f"k={k}: eta {', '.join(f'{e:g}' for e in good[k])}" for k in conv_ks) or "none"},
    ]  # fmt: skip
    findings: list[str] = []
    if t0 and not t2:
        findings.append(
            f"§4's 'TBPTT requires a truncation above {PAPER_THRESHOLD} to converge' (n = {grid.n}, "
            f"{grid.n - grid.p} minus) is not what is seen with block TBPTT-k: k = {k_min} converges at eta "
            + ", ".join(f"{e:g}" for e in good[k_min or 0])
            + f" ({grid.steps} steps, eta/(1 + sqrt t)); no k < {k_min} of the grid converges for any eta"
        )
    if t0 and not t1:
        findings.append(f"§4's 'fails even for truncations largely above n' is not what is seen: k = {k_min} < 4n "
                        "converges")  # fmt: skip
    passed = t0 and t1 and t2 and control.ok
    reason = "; ".join(str(c["name"]) for c in criteria if not c["passed"])
    reason += "" if control.ok else "; the sign-flipped control converged"
    summary = (
        f"influence balancing n={grid.n}, p={grid.p}, block TBPTT-k, {grid.steps} steps, eta in "
        f"{{{', '.join(f'{e:g}' for e in grid.etas)}}}/(1+sqrt t): smallest k converged {k_min} "
        f"(level {CONVERGED_LOSS:g}); " + "; ".join(best(k) for k in grid.ks)
        + f"; sign-flipped control at k = {max(grid.ks)}: {control.detail}"
    )  # fmt: skip
    table = [
        [k] + [round(float(values[(k, eta, 1.0)]["final_loss"]), 6) if values[(k, eta, 1.0)]["diverged_at"] is None
               else f"diverged at {values[(k, eta, 1.0)]['diverged_at']}" for eta in grid.etas]
        for k in grid.ks
    ]  # fmt: skip
    return CheckResult(
        claim_id,
        Verdict.PASS if passed else Verdict.FAIL,
        summary,
        statistic=float(k_min) if k_min is not None else None,
        threshold=float(PAPER_THRESHOLD),
        comparison=">",
        reason=None if passed else reason,
        controls=(control,),
        findings=tuple(findings),
        data={
            "criteria": criteria,
            "smallest_k_converged": k_min,
            "converged_etas": {str(k): good[k] for k in grid.ks},
            "runs": [dict(values[key]) for key in runs + controls_keys],
            "figures": [
                {
                    "kind": "table",
                    "title": "UORO §4 influence balancing, block TBPTT-k: last-fifth online loss by (k, eta)",
                    "columns": ["k", *(f"eta {e:g}" for e in grid.etas)],
                    "rows": table,
                }
            ],
        },
    )
