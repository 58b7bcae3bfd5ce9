r"""What the ``reference.*`` claims compute: the reference self-check over a suite of random problems.

DESIGN.md "Reference": two independent derivative computations must agree within a predicted
budget before anything else is trusted. :func:`verify.oracles.selfcheck.reference_self_check`
runs the pairs -- the explicit adjoint recursion against autograd BPTT (UORO, Tallec & Ollivier
arXiv:1702.05043, §1: backpropagation as a row vector times the step Jacobians), reverse- against
forward-mode influence matrices (their eq. (4)), complex-step and Richardson-extrapolated
differences of eq. (1) against reverse mode -- with the implementation under test (the adjoint
and the influence); this module runs one family of pairs over every cell kind and loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from verify.model.builders import CELL_KINDS, LOSS_KINDS, LabeledProblem, random_problem
from verify.oracles.selfcheck import AdjointFn, Comparison, InfluenceFn, SelfCheckReport, reference_self_check

__all__ = ["FamilyRun", "ReferenceParts", "SuiteCase", "SuiteSetup", "reference_suite", "run_family", "self_check"]


#: one problem of the reference suite (label, problem, θ)
SuiteCase = LabeledProblem


@dataclass(frozen=True)
class SuiteSetup:
    """``full``: bigger problems, three repetitions and full-Jacobian pairs for p ≤ 40."""

    full: bool = False

    @property
    def full_jacobian_max_p(self) -> int:
        return 40 if self.full else 0


class ReferenceParts(NamedTuple):
    """The implementation parts the pairs check: ``adjoint(problem, theta, per_step=False)``, ``influence``."""

    adjoint: AdjointFn
    influence: InfluenceFn


def reference_suite(generator: torch.Generator, setup: SuiteSetup) -> list[SuiteCase]:
    """Every cell kind × loss (+ one batched problem); larger and more seeds under ``full``."""
    gen = generator
    n, d, T, k = (6, 3, 40, 3) if setup.full else (3, 2, 8, 2)
    reps = 3 if setup.full else 1
    cases = []
    for rep in range(reps):
        for kind in CELL_KINDS:
            for loss in LOSS_KINDS:
                P, th = random_problem(kind, n=n, d=d, T=T, k=k, loss=loss, generator=gen)
                cases.append(SuiteCase(f"{kind}/{loss}/{rep}", P, th))
    P, th = random_problem("gru", n=n, d=d, T=T, k=k, loss="cross-entropy", batch=(2,), generator=gen)
    cases.append(SuiteCase("gru/cross-entropy/batch2", P, th))
    return cases


def self_check(
    family: str,
    case: SuiteCase,
    gen: torch.Generator,
    parts: ReferenceParts,
    fj: int = 0,
    dtype: torch.dtype = torch.float64,
    shared: dict[str, object] | None = None,
) -> SelfCheckReport:
    """The pairs of ``family`` on one case with ``parts`` (full-Jacobian pairs for p ≤ ``fj``), judged at the
    precision ``dtype`` the parts compute in; ``shared``: the case's memo (:func:`reference_self_check`)."""
    return reference_self_check(
        case.problem,
        case.theta,
        generator=gen,
        families=(family,),
        full_jacobian_max_p=fj,
        adjoint=parts.adjoint,
        influence=parts.influence,
        dtype=dtype,
        shared=shared,
    )


@dataclass
class FamilyRun:
    """The comparisons of one family over the suite: rows, errors, the worst error/budget, the cases left out."""

    rows: list[dict[str, object]] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    worst: Comparison | None = None
    skipped: list[str] = field(default_factory=list)


def run_family(
    family: str,
    suite: list[SuiteCase],
    gen: torch.Generator,
    parts: ReferenceParts,
    setup: SuiteSetup,
    dtype: torch.dtype = torch.float64,
    memos: list[dict[str, object]] | None = None,
) -> FamilyRun:
    """:func:`self_check` of ``family`` on every case (complex step: analytic cells only, the others skipped);
    ``memos``: one memo per case, kept across the families run on this suite (:func:`reference_self_check`)."""
    run = FamilyRun()
    for i, case in enumerate(suite):
        if family == "complex-step" and not case.problem.cell.analytic:
            run.skipped.append(case.label)
            continue
        rep = self_check(
            family, case, gen, parts, setup.full_jacobian_max_p, dtype, None if memos is None else memos[i]
        )
        for cmp in rep.by_family(family):
            run.rows.append(
                {
                    "problem": case.label,
                    "comparison": cmp.name,
                    "error": cmp.error,
                    "budget": cmp.budget,
                    "target": cmp.target,
                    "passed": cmp.passed,
                }
            )
            run.errors.append(cmp.error)
            if run.worst is None or cmp.ratio > run.worst.ratio:
                run.worst = cmp
    return run
