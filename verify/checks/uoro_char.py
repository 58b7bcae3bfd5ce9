"""The judge of UORO §4's character-level sweeps (``uoro-brackets``, ``uoro-anbn``).

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, §4,
Fig. 3b (distant brackets) and Fig. 4, 5 (aⁿbⁿ(1, 32)). The runs are computed by
:func:`verify.uoro.char_learning.run_char_learner` (one sweep cell each); here the levels are
compared and the verdict decided.

Criteria (every run's ``final_bpc`` is its mean loss over the last 20% of the stream):

* (L, both scales) every learner learned context: final loss below the unigram entropy by the
  design's margin (0.1 bpc, >= 4 standard errors of a final window at ci scale);
* (ci) UORO within a factor: UORO's gain over the unigram level is at least ``factor`` (1/4)
  of TBPTT's, per cell kind -- the paper's "UORO competes with TBPTT", at a scale where TBPTT's
  early speed (§4: "TBPTT-4 displays faster early convergence") still dominates;
* (paper) the paper's claims: UORO below the memoryless level (brackets: the repeats unknown,
  1.938 bpc; aⁿbⁿ: the "does not count" level, 0.286 bpc) with both cells, and on the brackets
  UORO's final loss at most TBPTT-4's ("UORO beats TBPTT-4 in the long run");
* controls: each learner fed the shuffled stream, judged by (L), must FAIL (it cannot beat the
  unigram entropy by construction). PASS needs all of these.

What a scale does not judge of the paper's result is listed in the result's ``data["not_judged"]``
(:func:`not_judged`; the experiments table, :mod:`verify.report.experiments`, must state it), and the aⁿbⁿ
sweep reports §4's misprinted entropy-rate formula as a FINDING
(:data:`verify.uoro.char_tasks.ANBN_PRINTED_FORMULA_NOTE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify.uoro.char_reproduction import PAPER_FIG5, CharDesign
from verify.uoro.char_tasks import ANBN_PRINTED_FORMULA_NOTE, AnBn, make_task
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["judge_char_sweep", "learned_context", "not_judged"]


def learned_context(value: Mapping[str, Any], margin: float) -> bool:
    """Criterion (L): the final loss lies below the unigram entropy by ``margin`` bpc."""
    return float(value["final_bpc"]) < float(value["unigram"]) - margin


def not_judged(design: CharDesign) -> list[str]:
    """The paper's statements (§4, Fig. 3b / Fig. 4, 5) that ``design``'s criteria do not judge."""
    truncs = sorted({s.truncation for s in design.specs if s.learner == "tbptt"})
    if design.task == "brackets":
        out = ["§4: UORO reaches near-optimal behaviour with both cells (the entropy rate)",
               "§4: TBPTT-4 converges faster early, GRU TBPTT-4 keeps learning, LSTM TBPTT-4 stays near the memoryless "
               "optimum (the learning curves' shapes)"]  # fmt: skip
        if design.scale != "paper":
            out.insert(0, "§4: UORO below the memoryless level and UORO beats TBPTT-4 in the long run (the paper's end "
                       "levels; judged at the paper's scale only)")  # fmt: skip
        return out
    out = ["§4: UORO reaches the entropy rate (judged at the paper's scale: below the 'does not count' level)",
           "§4: UORO reaches it after about 3 times TBPTT-16's characters (the speed)",
           "Fig. 4(b), Fig. 5: UORO-T (UORO with truncation 2 and 16; this sweep runs UORO with truncation 1, "
           "the uoro-anbn-t sweep judges UORO-T)"]  # fmt: skip
    if design.scale != "paper":
        out.insert(0, "§4, Fig. 5: UORO below the 'does not count' level (the paper's end levels; judged at the "
                   "paper's scale only)")  # fmt: skip
    missing = [T for T in (1, 2, 16) if T not in truncs]
    if missing:
        out.append("Fig. 5: TBPTT-" + ", TBPTT-".join(map(str, missing)) + " (not in this scale's runs)")
    return out


def _findings(design: CharDesign) -> tuple[str, ...]:
    """§4's aⁿbⁿ entropy-rate formula as printed against the rate of the task run (a misprint; the value holds)."""
    if design.task != "anbn":
        return ()
    task = make_task("anbn", **dict(design.specs[0].task_params))
    if not isinstance(task, AnBn):  # pragma: no cover - make_task("anbn") is an AnBn
        return ()
    printed = task.printed_entropy_rate()
    return (ANBN_PRINTED_FORMULA_NOTE,) if printed is None or abs(printed - task.entropy_rate()) > 1e-12 else ()


def _row(v: Mapping[str, Any], design: CharDesign) -> list[Any]:
    spec = v["spec"]
    paper = None
    if design.task == "anbn" and design.scale == "paper":
        pair = PAPER_FIG5.get((spec["learner"], int(spec["truncation"])))
        paper = None if pair is None else pair[0 if spec["cell"] == "lstm" else 1]
    return [v["label"], round(v["final_bpc"], 4), round(v["final_se"], 4), round(v["unigram"] - v["final_bpc"], 4),
            learned_context(v, design.margin), paper]  # fmt: skip


def judge_char_sweep(
    claim_id: str, design: CharDesign, values: Mapping[str, Mapping[str, Any]], errors: Mapping[str, str]
) -> CheckResult:
    """Judge ``design``'s runs (``values`` by spec label; ``errors`` of cells that did not run) -- see the module."""
    if errors or any(s.label() not in values for s in design.specs):
        missing = [s.label() for s in design.specs if s.label() not in values]
        return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} run(s) missing: the sweep is incomplete",
                           reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or ", ".join(missing))  # fmt: skip
    runs = {s.label(): values[s.label()] for s in design.runs()}
    ref = next(iter(runs.values()))
    criteria: list[dict[str, Any]] = []
    for label, v in runs.items():
        criteria.append({"criterion": "L: learned context", "run": label, "ok": learned_context(v, design.margin),
                         "value": v["final_bpc"], "level": v["unigram"] - design.margin})  # fmt: skip
    for cell in ("gru", "lstm"):
        u = next(v for s, v in zip(design.runs(), runs.values(), strict=True) if s.cell == cell and s.learner == "uoro")
        tb = next(
            v for s, v in zip(design.runs(), runs.values(), strict=True)
            if s.cell == cell and s.learner == "tbptt" and s.truncation == design.main_truncation
        )  # fmt: skip
        gain_u, gain_t = u["unigram"] - u["final_bpc"], tb["unigram"] - tb["final_bpc"]
        if design.scale == "ci":
            criteria.append({"criterion": f"UORO gain >= {design.factor:g} x TBPTT-{design.main_truncation}'s",
                             "run": cell, "ok": gain_u >= design.factor * gain_t, "value": gain_u,
                             "level": design.factor * gain_t})  # fmt: skip
        else:
            criteria.append({"criterion": "UORO below the memoryless level", "run": cell,
                             "ok": u["final_bpc"] < u["memoryless_rate"], "value": u["final_bpc"],
                             "level": u["memoryless_rate"]})  # fmt: skip
            if design.task == "brackets":
                criteria.append({"criterion": f"UORO <= TBPTT-{design.main_truncation} at the end", "run": cell,
                                 "ok": u["final_bpc"] <= tb["final_bpc"], "value": u["final_bpc"],
                                 "level": tb["final_bpc"]})  # fmt: skip
    controls = []
    for s in design.controls():
        v = values[s.label()]
        observed = "PASS" if learned_context(v, design.margin) else "FAIL"
        detail = f"final {v['final_bpc']:.3f} vs unigram {v['unigram']:.3f} - {design.margin:g}"
        controls.append(
            Control(f"{s.label()}: learner fed the shuffled stream, judged by (L)", "FAIL", observed, detail)
        )
    ok = all(c["ok"] for c in criteria) and all(c.ok for c in controls)
    bad = [f"{c['criterion']} ({c['run']}): {c['value']:.3f} vs {c['level']:.3f}" for c in criteria if not c["ok"]]
    bad += [f"control {c.name} came out {c.observed}" for c in controls if not c.ok]
    rows = [_row(values[s.label()], design) for s in design.specs]
    parts = [
        f"{sp.cell} {'uoro' if sp.learner == 'uoro' else f'tbptt-{sp.truncation}'}"
        f"{' (shuffled control)' if sp.feed == 'shuffled' else ''} {values[sp.label()]['final_bpc']:.3f}"
        for sp in design.specs
    ]
    summary = (
        f"{design.task} at {design.scale} scale (seed {design.seed}), final bpc: " + "; ".join(parts)
        + f" (entropy rate {ref['entropy_rate']:.3f}, memoryless {ref['memoryless_rate']:.3f}, "
        f"unigram {ref['unigram']:.3f})"
    )  # fmt: skip
    return CheckResult(
        claim_id,
        Verdict.PASS if ok else Verdict.FAIL,
        summary,
        statistic=max((v["final_bpc"] for v in runs.values()), default=None),
        threshold=ref["unigram"] - design.margin,
        reason=None if ok else "; ".join(bad),
        seed=design.seed,
        controls=tuple(controls),
        findings=_findings(design),
        data={
            "criteria": criteria,
            "not_judged": not_judged(design),
            "levels": {k: ref[k] for k in ("entropy_rate", "memoryless_rate", "unigram")},
            "curves": {lab: values[lab]["curve"] for lab in values},
            "figures": [
                {
                    "kind": "table",
                    "title": f"UORO §4 {design.task}: final loss (bpc, last 20%)",
                    "columns": ["run", "final bpc", "s.e.", "gain over unigram", "learned context", "paper (Fig. 5)"],
                    "rows": rows,
                }
            ],
        },
    )
