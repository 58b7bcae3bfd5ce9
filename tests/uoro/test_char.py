"""UORO §4's character-level datasets, the online learner, the sweeps' judge and its control."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from verify.checks.uoro_char import judge_char_sweep, learned_context
from verify.errors import InvalidArgument
from verify.run.sweep.definitions import SweepOptions, definitions
from verify.uoro.char_learning import CharLearnerSpec, moving_average_bits, run_char_learner
from verify.uoro.char_reproduction import char_design
from verify.uoro.char_tasks import (
    AnBn,
    DistantBrackets,
    bayes_log_loss_bits,
    brackets_entropy_rate,
    make_task,
    unigram_entropy,
)
from verify.verdict import Verdict


def test_brackets_rate_is_the_printed_formula_for_fixed_k() -> None:
    for s, k, a in [(1, 5, 10), (2, 3, 4), (3, 0, 7)]:
        assert brackets_entropy_rate(s, k, k, a) == pytest.approx((s + k) * math.log2(a) / (2 * s + k + 5), rel=1e-15)
    assert DistantBrackets().entropy_rate() == pytest.approx(0.5 * math.log2(10), rel=1e-15)  # (1, 5, 5, 10)


def test_anbn_rate_corrected_and_printed_formula_undefined() -> None:
    t = AnBn(1, 32)
    assert t.entropy_rate() == pytest.approx(5 / 35, rel=1e-15)  # the paper's "0.14 bpc"
    assert t.memoryless_rate() == pytest.approx(10 / 35, rel=1e-15)  # "double, 0.28 bpc"
    assert t.printed_entropy_rate() is None  # log2(k - l + 1) = log2(-30)
    assert AnBn(3, 3).printed_entropy_rate() == 0.0 == AnBn(3, 3).entropy_rate()  # where both are defined


@pytest.mark.parametrize("task", [DistantBrackets(), DistantBrackets(2, 3, 3, 4), AnBn(), AnBn(3, 7)])
def test_bayes_predictor_pays_exactly_the_line_entropy(task: DistantBrackets | AnBn) -> None:
    """Over whole lines the Bayes predictor's -log2 p sums to the entropy of the lines (fixed k: exact)."""
    rng = np.random.default_rng(1)
    seq = task.sample(20_000, rng)
    ends = np.flatnonzero(seq == task.vocab - 1)
    ends = ends[1::2] if isinstance(task, AnBn) else ends  # a^n b^n: every second newline ends a line
    seq = seq[: int(ends[-1]) + 2]  # whole lines plus the next line's first symbol (certain: '[' or 'a')
    lines = len(ends)
    bits = -np.log2(task.bayes_probs(seq)).sum()
    per_line = math.log2(task.l - task.k + 1) if isinstance(task, AnBn) else task.s * math.log2(task.a)
    if isinstance(task, DistantBrackets):
        per_line += task.k_min * math.log2(task.a)
    # the first symbol (a line start) is not predicted; the trailing symbol starts a new line with certainty
    assert bits == pytest.approx(lines * per_line, rel=1e-9)


@pytest.mark.parametrize("task", [DistantBrackets(), DistantBrackets(2, 3, 6, 4), AnBn(), AnBn(3, 7)])
def test_empirical_entropy_rate_matches_formula(task: DistantBrackets | AnBn) -> None:
    """Renewal estimate: bits per line / chars per line; tolerance 5 standard errors of the mean line length."""
    n = 200_000
    seq = task.sample(n, np.random.default_rng(2))
    got = bayes_log_loss_bits(task, seq)
    if isinstance(task, AnBn):
        sd_len = 2 * math.sqrt(((task.l - task.k + 1) ** 2 - 1) / 12)
        mean_len = task.k + task.l + 2
    else:
        sd_len = math.sqrt(((task.k_max - task.k_min + 1) ** 2 - 1) / 12) + math.log2(task.a) * 0
        mean_len = 2 * task.s + (task.k_min + task.k_max) / 2 + 5
    lines = n / mean_len
    tol = 5 * task.entropy_rate() * (sd_len / mean_len) / math.sqrt(lines) + 2 * 8 / n + 1e-3 * (sd_len > 0)
    assert abs(got - task.entropy_rate()) <= tol


def test_samples_are_well_formed() -> None:
    seq = DistantBrackets(2, 3, 3, 4).sample(1300, np.random.default_rng(0))
    text = "".join(DistantBrackets(2, 3, 3, 4).symbols()[i] for i in seq)
    for line in text.split("\n")[:-1]:
        assert len(line) == 2 * 2 + 3 + 4 and line[0] == "[" and line[3] == "]" and line[1:3] == line[8:10]
    text = "".join("ab\n"[i] for i in AnBn().sample(5000, np.random.default_rng(0)))
    parts = text.split("\n")[:-1]
    for a, b in zip(parts[0::2], parts[1::2], strict=False):
        assert set(a) == {"a"} and set(b) == {"b"} and len(a) == len(b) and 1 <= len(a) <= 32


def test_unigram_entropy_of_anbn() -> None:
    f = np.array([16.5, 16.5, 2]) / 35
    assert unigram_entropy(AnBn()) == pytest.approx(float(-(f * np.log2(f)).sum()), rel=1e-14)


@pytest.mark.parametrize(
    ("call", "arg"),
    [
        (lambda: DistantBrackets(1, 5, 4, 10), "k_max"),
        (lambda: DistantBrackets(0, 5, 5, 10), "s"),
        (lambda: AnBn(5, 2), "l"),
        (lambda: make_task("dyck"), "task"),
        (lambda: CharLearnerSpec(cell="rnn"), "cell"),
        (lambda: CharLearnerSpec(learner="uoro", truncation=0), "truncation"),
        (lambda: CharLearnerSpec(feed="reversed"), "feed"),
        (lambda: char_design("anbn", "full"), "--scale"),
    ],
)
def test_bad_input_names_the_argument(call: object, arg: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        call()  # type: ignore[operator]
    assert arg in str(exc.value)


def test_moving_average_is_the_papers() -> None:
    x = np.array([4.0, 2.0, 1.0, 3.0])
    ma = moving_average_bits(x)
    want = [4.0, 2.0]  # L(2) = (1 - 1) L(1) + l_2
    want.append((1 - 1 / math.sqrt(2)) * want[-1] + 1.0 / math.sqrt(2))
    want.append((1 - 1 / math.sqrt(3)) * want[-1] + 3.0 / math.sqrt(3))
    assert ma.tolist() == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize("learner", ["uoro", "tbptt"])
def test_learner_learns_a_periodic_sequence(learner: str) -> None:
    """a^3 b^3 is periodic (entropy 0): both learners get far below the unigram entropy (1.41 bpc) in 1500 chars."""
    spec = CharLearnerSpec(task="anbn", task_params=(("k", 3), ("l", 3)), cell="gru", hidden=8, learner=learner,
                           truncation=1 if learner == "uoro" else 8, chars=1500, gamma=1e-2, alpha=0.0)  # fmt: skip
    r = run_char_learner(spec)
    assert r["entropy_rate"] == 0.0
    assert r["final_bpc"] < 0.5 * r["unigram"], r["final_bpc"]
    r_ctl = run_char_learner(dataclasses.replace(spec, feed="shuffled"))
    assert not learned_context(r_ctl, 0.1), r_ctl["final_bpc"]


def _small(design: object, chars: int = 600, hidden: int = 4) -> object:
    specs = tuple(dataclasses.replace(s, chars=chars, hidden=hidden, gamma=1e-2) for s in design.specs)  # type: ignore[attr-defined]
    return dataclasses.replace(design, specs=specs)  # type: ignore[type-var]


def test_judge_fails_when_the_learners_are_broken() -> None:
    """The harness rerun with broken learners (every learner fed the shuffled stream) FAILs (L) by construction."""
    design = _small(char_design("anbn", "ci", seed=3))
    values = {}
    for s in design.specs:  # type: ignore[attr-defined]
        values[s.label()] = run_char_learner(dataclasses.replace(s, feed="shuffled"))
        values[s.label()]["label"] = s.label()
    res = judge_char_sweep("uoro.anbn-sweep", design, values, {})  # type: ignore[arg-type]
    assert res.verdict is Verdict.FAIL
    assert "L: learned context" in (res.reason or "")
    assert all(c.ok for c in res.controls)  # the controls themselves still FAIL as they must


def test_judge_refuses_a_control_that_learned_and_an_incomplete_sweep() -> None:
    design = char_design("anbn", "ci")
    good = {"final_bpc": 0.4, "final_se": 0.02, "unigram": 1.259, "entropy_rate": 0.143, "memoryless_rate": 0.286,
            "curve": {}}  # fmt: skip
    values = {s.label(): {**good, "label": s.label(), "spec": s.params()} for s in design.specs}
    res = judge_char_sweep("uoro.anbn-sweep", design, values, {})
    assert res.verdict is Verdict.FAIL and any(not c.ok for c in res.controls)  # controls that "learned"
    for s in design.controls():
        values[s.label()] = {**values[s.label()], "final_bpc": 1.26}
    assert judge_char_sweep("uoro.anbn-sweep", design, values, {}).verdict is Verdict.PASS
    lost = dict(values)
    lost.pop(design.specs[0].label())
    res = judge_char_sweep("uoro.anbn-sweep", design, lost, {})
    assert res.verdict is Verdict.FAIL and "missing" in res.summary


def test_sweep_definitions() -> None:
    for name, n_ci, n_paper in (("uoro-brackets", 8, 8), ("uoro-anbn", 8, 12)):
        ci = definitions()[name].build(SweepOptions(scale="ci"))
        paper = definitions()[name].build(SweepOptions(scale="paper"))
        assert len(ci.cells) == n_ci and len(paper.cells) == n_paper
        assert {c.task for c in ci.cells} == {"uoro.char-run"}
        assert all(c.params["hidden"] == 64 and c.params["chars"] == 10_000_000 for c in paper.cells)
        with pytest.raises(InvalidArgument, match="--scale"):
            definitions()[name].build(SweepOptions(scale="full"))
