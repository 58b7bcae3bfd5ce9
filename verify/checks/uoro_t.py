"""The judge of the ``uoro-anbn-t`` sweep: UORO-T on aⁿbⁿ(1, 32) (Tallec & Ollivier 2017, §3, §4 Fig. 4(b), Fig. 5).

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043: §3 "Multi-step UORO"
(Algorithm 1 applied to :math:`F^T`, the last T steps backpropagated exactly, "reduces the noise"); §4, Fig. 4(b)
(UORO-T learning curves on aⁿbⁿ(1, 32)) and Fig. 5 (UORO-2: LSTM 0.140, GRU 0.162; UORO-16: LSTM 0.154, GRU 0.147
bpc, against UORO's 0.142 and 0.151): "UORO-T reduces early noise but does not consistently improve the final
loss". The runs are :func:`verify.uoro.char_learning.run_char_learner` of
:func:`verify.uoro.char_reproduction.uorot_design`: UORO-1, -2, -16, GRU and LSTM, three seeds each (a seed fixes
the stream and the initialisation: paired comparisons).

Criteria, fixed before the run:

* (L) every UORO-T run learned context: final loss (last fifth) below the unigram entropy by the design's margin
  (0.1 bpc), as ``uoro.anbn-sweep``'s criterion (L);
* (E, Fig. 4(b): "reduces early noise", read as its visible effect: a lower loss early in training) for T = 2 and
  T = 16, UORO-T's mean loss over the first fifth of the stream is below UORO's in the (cell, seed) pairs: a
  one-sided exact sign test at :data:`ALPHA` over the 6 pairs (6 of 6 needed: p = 1/64). False-PASS rate <= ALPHA;
  false-FAIL rate 1 - q^6 where each pair favours UORO-T with probability q (q = 0.99: 0.06).

Controls: UORO-2 and UORO-16 fed the shuffled stream (each cell) judged by (L) must FAIL. Not judged
(``data["not_judged"]``): Fig. 5's end levels and "does not consistently improve the final loss" (the final
losses are reported beside UORO's; at a reduced scale no run reaches the paper's levels).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verify.checks.uoro_char import learned_context
from verify.uoro.char_reproduction import PAPER_FIG5, CharDesign
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["ALPHA", "judge_uorot_sweep"]

#: the level of the sign tests (one-sided)
ALPHA = 0.05


def _sign_p(wins: int, n: int) -> float:
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2.0**n


def _not_judged(design: CharDesign) -> list[str]:
    out = ["Fig. 5: the UORO-T end levels (UORO-2 LSTM 0.140, GRU 0.162; UORO-16 LSTM 0.154, GRU 0.147) and "
           "'does not consistently improve the final loss' (the final losses are reported beside UORO's)",
           "Fig. 4(b): the curves' noise itself (judged through the early loss only)"]  # fmt: skip
    if design.scale != "paper":
        out.insert(0, f"the paper's scale: {design.specs[0].hidden} units and {design.specs[0].chars} characters "
                      "here (64 units and 1e7 characters in the paper)")  # fmt: skip
    return out


def judge_uorot_sweep(
    claim_id: str, design: CharDesign, values: Mapping[str, Mapping[str, Any]], errors: Mapping[str, str]
) -> CheckResult:
    """Judge ``design``'s runs (``values`` by spec label) -- see the module."""
    missing = [s.label() for s in design.specs if s.label() not in values]
    if errors or missing:
        return CheckResult(claim_id, Verdict.FAIL, f"{len(missing)} run(s) missing: the sweep is incomplete",
                           reason="\n".join(f"{k}: {e}" for k, e in errors.items()) or ", ".join(missing))  # fmt: skip
    runs = {(s.cell, s.seed, s.truncation): values[s.label()] for s in design.runs()}
    pairs = sorted({(c, k) for c, k, _ in runs})
    criteria, early = _criteria(design, runs, pairs)
    controls = _controls(design, values)
    ok = all(c["ok"] for c in criteria) and all(c.ok for c in controls)
    bad = [f"{c['criterion']} ({c['run']}): {c['value']:.3f} vs {c['level']:.3f}" for c in criteria if not c["ok"]]
    bad += [f"control {c.name} came out {c.observed}" for c in controls if not c.ok]

    def mean(key: str, c: str, T: int) -> float:
        xs = [float(runs[(cc, k, T)][key]) for cc, k in pairs if cc == c]
        return round(sum(xs) / len(xs), 4)

    table = [
        [c, f"uoro-{T}" if T > 1 else "uoro", mean("early_bpc", c, T), mean("final_bpc", c, T),
         PAPER_FIG5[("uoro", T)][0 if c == "lstm" else 1]]
        for c in ("gru", "lstm") for T in (1, 2, 16)
    ]  # fmt: skip
    ref = next(iter(runs.values()))
    summary = (
        f"UORO-T on a^n b^n(1, 32) at {design.scale} scale ({design.specs[0].hidden} units, {design.specs[0].chars} "
        f"characters, {len(pairs) // 2} seeds), mean early / final bpc: "
        + "; ".join(f"{r[0]} {r[1]} {r[2]:.3f} / {r[3]:.3f}" for r in table)
        + "; early loss below UORO's: " + ", ".join(f"T={T} {e['wins']}/{e['pairs']} (p={e['p']:.3g})"
                                                    for T, e in early.items())
        + f" (unigram {ref['unigram']:.3f}, memoryless {ref['memoryless_rate']:.3f}, entropy rate "
        f"{ref['entropy_rate']:.3f})"
    )  # fmt: skip
    return CheckResult(
        claim_id,
        Verdict.PASS if ok else Verdict.FAIL,
        summary,
        alpha=ALPHA,
        reason=None if ok else "; ".join(bad),
        seed=design.seed,
        controls=tuple(controls),
        data={
            "scale": design.scale,
            "criteria": criteria,
            "early": {str(T): e for T, e in early.items()},
            "not_judged": _not_judged(design),
            "levels": {k: ref[k] for k in ("entropy_rate", "memoryless_rate", "unigram")},
            "figures": [
                {
                    "kind": "table",
                    "title": "UORO-T on a^n b^n(1, 32): mean over seeds of the early (first fifth) and final (last "
                    "fifth) loss, bpc",
                    "columns": ["cell", "learner", "early bpc", "final bpc", "paper (Fig. 5)"],
                    "rows": table,
                }
            ],
        },
    )


def _criteria(
    design: CharDesign, runs: Mapping[tuple[str, int, int], Mapping[str, Any]], pairs: list[tuple[str, int]]
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """(L) for every UORO-T run and (E) for T = 2 and 16 (the module); E's counts by T."""
    criteria: list[dict[str, Any]] = []
    for (c, k, T), v in runs.items():
        if T > 1:
            criteria.append({"criterion": "L: learned context", "run": f"{c} uoro-{T} seed {k}",
                             "ok": learned_context(v, design.margin), "value": v["final_bpc"],
                             "level": v["unigram"] - design.margin})  # fmt: skip
    early: dict[int, dict[str, Any]] = {}
    for T in (2, 16):
        wins = sum(runs[(c, k, T)]["early_bpc"] < runs[(c, k, 1)]["early_bpc"] for c, k in pairs)
        p = _sign_p(wins, len(pairs))
        early[T] = {"wins": wins, "pairs": len(pairs), "p": p}
        criteria.append({"criterion": f"E: UORO-{T}'s early loss below UORO's (sign test)", "run": f"T={T}",
                         "ok": p <= ALPHA, "value": float(wins), "level": float(len(pairs))})  # fmt: skip
    return criteria, early


def _controls(design: CharDesign, values: Mapping[str, Mapping[str, Any]]) -> list[Control]:
    """UORO-T fed the shuffled stream, judged by (L): each must FAIL."""
    controls = []
    for s in design.controls():
        v = values[s.label()]
        detail = f"final {v['final_bpc']:.3f} vs unigram {v['unigram']:.3f} - {design.margin:g}"
        observed = "PASS" if learned_context(v, design.margin) else "FAIL"
        name = f"{s.label()}: UORO-{s.truncation} fed the shuffled stream, judged by (L)"
        controls.append(Control(name, "FAIL", observed, detail))
    return controls
