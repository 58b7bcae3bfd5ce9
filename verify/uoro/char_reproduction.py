"""UORO §4 distant brackets and aⁿbⁿ as sweep designs: the runs of each scale and the levels that judge them.

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, §4, Fig. 3b
(distant brackets (1, 5, 5, 10), UORO vs TBPTT-4, GRU and LSTM, α = 0.015, γ = 1e-3) and Fig. 4, 5
(aⁿbⁿ(1, 32), UORO vs TBPTT-1, -2, -16, α = 0.03, γ = 1e-3, 9.9e6 characters).

* ``paper``: 64 units, 1e7 characters (Fig. 5's 9.9e6; the authors' code's default ``--max 1e7``
  for the brackets, whose figure gives no length), the paper's schedule.
* ``ci``: 16 units, 5000 characters, GRU and LSTM; γ = 3e-3 for the brackets (at γ = 1e-3 a
  16-unit UORO LSTM barely leaves the unigram level in 5000 characters). What such a run can
  show is that each learner learned context, not the paper's end levels.

Each design also runs, per (cell, learner), the control that cannot learn: the same learner fed
the shuffled stream (:mod:`verify.uoro.char_learning`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verify.errors import InvalidArgument
from verify.uoro.char_learning import CharLearnerSpec

__all__ = ["CHAR_SCALES", "PAPER_FIG5", "UOROT_SEEDS", "CharDesign", "char_design", "uorot_design", "uorot_paper_cost"]

CHAR_SCALES = ("ci", "paper")

#: UORO §4 Fig. 5: recent loss (bpc) after 9.9e6 characters on aⁿbⁿ(1, 32), (learner, T) -> (LSTM, GRU)
PAPER_FIG5: dict[tuple[str, int], tuple[float, float]] = {
    ("uoro", 1): (0.142, 0.151),
    ("uoro", 2): (0.140, 0.162),
    ("uoro", 16): (0.154, 0.147),
    ("tbptt", 1): (0.163, 0.215),
    ("tbptt", 2): (0.154, 0.269),
    ("tbptt", 16): (0.143, 0.204),
}

#: ms per character of one run at 64 units (a^n b^n, GRU and LSTM alike within 10%), measured with one torch
#: thread over 400 characters on a 2-core machine at load ~7 (so an upper estimate); the paper scale's cost
#: statement (``paper_cost``) uses it
MS_PER_CHAR_64 = {"uoro": 1.5, "tbptt": 0.75}


@dataclass(frozen=True)
class CharDesign:
    """The runs of one task at one scale, the judged margin and the UORO-vs-TBPTT factor."""

    task: str
    scale: str
    seed: int
    specs: tuple[CharLearnerSpec, ...]
    #: "learned context" means a final loss below the unigram entropy by this many bpc
    margin: float = 0.1
    #: ci: UORO's gain over the unigram level must be at least this fraction of TBPTT's
    factor: float = 0.25
    main_truncation: int = 4

    def runs(self) -> tuple[CharLearnerSpec, ...]:
        return tuple(s for s in self.specs if s.feed == "stream")

    def controls(self) -> tuple[CharLearnerSpec, ...]:
        return tuple(s for s in self.specs if s.feed == "shuffled")

    def paper_cost(self) -> dict[str, float]:
        """Estimated CPU core-hours of the paper-scale runs (from :data:`MS_PER_CHAR_64`)."""
        sec = sum(s.chars * MS_PER_CHAR_64[s.learner] / 1e3 for s in self.specs)
        return {"core_hours": sec / 3600, "runs": len(self.specs)}


def char_design(task: str, scale: str, seed: int = 0) -> CharDesign:
    """The ``brackets`` or ``anbn`` design at ``scale`` (:data:`CHAR_SCALES`)."""
    if scale not in CHAR_SCALES:
        raise InvalidArgument("--scale", scale, f"must be one of {CHAR_SCALES} for the UORO §4 character sweeps")
    truncs: tuple[int, ...]
    if task == "brackets":
        params: tuple[tuple[str, int], ...] = (("a", 10), ("k_max", 5), ("k_min", 5), ("s", 1))
        alpha, truncs = 0.015, (4,)
    elif task == "anbn":
        params = (("k", 1), ("l", 32))
        alpha, truncs = 0.03, ((16,) if scale == "ci" else (1, 2, 16))
    else:
        raise InvalidArgument("task", task, "must be 'brackets' or 'anbn'")
    if scale == "paper":
        hidden, chars, gamma = 64, 10_000_000, 1e-3
    else:
        hidden, chars, gamma = 16, 5000, (3e-3 if task == "brackets" else 1e-3)
    specs: list[CharLearnerSpec] = []
    for cell in ("gru", "lstm"):
        learners = [("uoro", 1)] + [("tbptt", T) for T in truncs]
        for feed in ("stream", "shuffled"):
            chosen = learners if feed == "stream" else learners[:1] + learners[-1:]
            for learner, T in chosen:
                specs.append(
                    CharLearnerSpec(task=task, task_params=params, cell=cell, hidden=hidden, learner=learner,
                                    truncation=T, chars=chars, gamma=gamma, alpha=alpha, feed=feed, seed=seed)
                )  # fmt: skip
    return CharDesign(task, scale, seed, tuple(specs), main_truncation=truncs[-1])


#: seeds of the UORO-T design (each (cell, seed) pair is one paired comparison of UORO-T with UORO)
UOROT_SEEDS = 3
#: UORO-T's cost per character relative to UORO's (measured at 16 units, GRU, one thread: 0.68 ms for T = 2,
#: 1.7 ms for T = 16 against 0.65 ms for T = 1: each step of a block backpropagates through the block so far)
UOROT_COST = {1: 1.0, 2: 1.05, 16: 2.6}


def uorot_design(scale: str, seed: int = 0) -> CharDesign:
    """UORO-T on aⁿbⁿ(1, 32) (§3 "Multi-step UORO"; §4, Fig. 4(b), Fig. 5's UORO-T rows): UORO-1, UORO-2 and
    UORO-16 on GRU and LSTM, :data:`UOROT_SEEDS` seeds each (the same stream and initialisation per seed), and the
    shuffled-stream control of UORO-2 and UORO-16 per cell; the sizes of :func:`char_design`'s aⁿbⁿ at ``scale``."""
    base = char_design("anbn", scale, seed)
    ref = base.specs[0]
    specs: list[CharLearnerSpec] = []
    for cell in ("gru", "lstm"):
        for k in range(UOROT_SEEDS):
            for T in (1, 2, 16):
                specs.append(dataclasses.replace(ref, cell=cell, learner="uoro", truncation=T, seed=seed + k))
        for T in (2, 16):
            specs.append(dataclasses.replace(ref, cell=cell, learner="uoro", truncation=T, feed="shuffled", seed=seed))
    return CharDesign("anbn", scale, seed, tuple(specs), main_truncation=16)


def uorot_paper_cost(design: CharDesign) -> float:
    """Estimated CPU core-hours of ``design`` at 64 units (:data:`MS_PER_CHAR_64` times :data:`UOROT_COST`)."""
    return sum(s.chars * MS_PER_CHAR_64["uoro"] * UOROT_COST[s.truncation] / 1e3 for s in design.specs) / 3600
