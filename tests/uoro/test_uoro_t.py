"""UORO-T in the character learner and the ``uoro-anbn-t`` judge (Tallec & Ollivier 2017, §3, §4 Fig. 4(b), 5)."""

from __future__ import annotations

import math

import pytest

from verify.checks.uoro_t import judge_uorot_sweep
from verify.run.sweep.definitions import SweepOptions, get_definition
from verify.uoro import char_learning
from verify.uoro.char_learning import CharLearnerSpec, run_char_learner
from verify.uoro.char_reproduction import UOROT_SEEDS, uorot_design, uorot_paper_cost
from verify.verdict import Verdict


def test_uoro_t_updates_once_per_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """UORO-T is Algorithm 1 on F^T: one Adam step per block of T characters (a trailing partial block too)."""
    steps: list[int] = []
    real = char_learning.PaperAdam.update

    def spy(self, theta, g, state, chars):  # type: ignore[no-untyped-def]
        steps.append(chars)
        return real(self, theta, g, state, chars)

    monkeypatch.setattr(char_learning.PaperAdam, "update", spy)
    out = run_char_learner(CharLearnerSpec(hidden=3, chars=22, truncation=4))
    assert steps == [4, 8, 12, 16, 20, 22] and out["label"].split()[2] == "uoro-4"
    steps.clear()
    run_char_learner(CharLearnerSpec(hidden=3, chars=20, truncation=1))
    assert steps == list(range(1, 21))
    assert math.isfinite(out["early_bpc"]) and math.isfinite(out["final_bpc"])


def test_design_pairs_and_controls() -> None:
    d = uorot_design("ci")
    assert len(d.runs()) == 2 * UOROT_SEEDS * 3 and len(d.controls()) == 4
    assert {s.truncation for s in d.controls()} == {2, 16}
    assert uorot_paper_cost(uorot_design("paper")) > 100  # core-hours: the paper's scale is not a CPU-minute run
    assert len(get_definition("uoro-anbn-t").build(SweepOptions(scale="ci")).cells) == len(d.specs)


def _values(early_gap: float = 0.05, control_learns: bool = False) -> dict[str, dict]:
    d = uorot_design("ci")
    out = {}
    for s in d.specs:
        shuffled = s.feed == "shuffled"
        final = 1.25 if shuffled and not control_learns else 0.5
        early = 0.9 - (early_gap if s.truncation > 1 else 0.0)
        out[s.label()] = {"final_bpc": final, "early_bpc": early, "unigram": 1.259, "memoryless_rate": 0.286,
                          "entropy_rate": 0.143}  # fmt: skip
    return out


def test_judge_passes_when_uoro_t_learns_and_starts_lower() -> None:
    res = judge_uorot_sweep("x", uorot_design("ci"), _values(), {})
    assert res.verdict is Verdict.PASS, res.reason
    assert res.data["not_judged"] and res.data["scale"] == "ci"


def test_judge_fails_when_uoro_t_is_not_lower_early() -> None:
    res = judge_uorot_sweep("x", uorot_design("ci"), _values(early_gap=-0.05), {})
    assert res.verdict is Verdict.FAIL and "E:" in (res.reason or "")


def test_judge_fails_when_a_shuffled_control_learns() -> None:
    res = judge_uorot_sweep("x", uorot_design("ci"), _values(control_learns=True), {})
    assert res.verdict is Verdict.FAIL and "control" in (res.reason or "")


def test_judge_fails_an_incomplete_sweep() -> None:
    vals = _values()
    vals.pop(next(iter(vals)))
    assert "incomplete" in judge_uorot_sweep("x", uorot_design("ci"), vals, {}).summary
