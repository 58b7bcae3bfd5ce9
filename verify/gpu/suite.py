r"""What ``device.float32-standin`` and ``device.cuda-parity`` compute: the parity suite and its comparisons.

DESIGN.md "GPU paths" (issue 8): every algorithm of :mod:`verify.gpu.parity` -- BPTT, truncated
BPTT, the truncated model (Miller & Hardt eq. (3)), RTRL (Tallec & Ollivier, arXiv:1702.05043,
eq. (4)), UORO (their Algorithm 1), preactivation UORO and FPP's per-sample gradients eq. (7) --
run by a candidate runner in another arithmetic and compared with the CPU reference within the
parity budget of :mod:`verify.oracles.budget` §2:

.. math:: \|\hat r_{row} - r_{row}\| \le C\,(u_{cand}+u_{ref})\,\sqrt{m L_{eff} + T_{sum}}\,\|\bar r_{row}\| .
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from verify.gpu.parity import (
    ALGORITHMS,
    Arithmetic,
    ParityAlgorithm,
    ParityComparison,
    ParityReference,
    Runner,
    applicable_algorithms,
    compare,
    hidden_permutation,
    parity_reference,
)
from verify.model.builders import random_problem
from verify.model.problem import Problem

__all__ = ["ParityCase", "SuiteSetup", "control_comparison", "parity_suite", "run_parity"]


@dataclass(frozen=True)
class ParityCase:
    """One problem of the parity suite; ``reorder`` asks for the permuted-order comparisons too."""

    label: str
    problem: Problem
    theta: torch.Tensor
    reorder: bool


@dataclass(frozen=True)
class SuiteSetup:
    """The suite's size: ``full`` (every cell × both losses, bigger problems) or the small ci suite."""

    full: bool = False


def parity_suite(generator: torch.Generator, setup: SuiteSetup) -> list[ParityCase]:
    """Every cell kind (both losses under ``full``) + one batched GRU; ci sizes are small."""
    gen = generator
    specs: list[tuple[str, str, tuple[int, ...]]]
    if setup.full:
        n, d, T, k = 6, 3, 20, 3
        specs = [
            (kind, loss, ())
            for kind in ("elman-tanh", "elman-relu", "linear", "lstm", "gru")
            for loss in ("squared-error", "cross-entropy")
        ]
        specs.append(("gru", "cross-entropy", (2,)))
        reorder = {i for i in range(len(specs))}
    else:
        n, d, T, k = 3, 2, 5, 2
        specs = [
            ("elman-tanh", "squared-error", ()),
            ("elman-relu", "cross-entropy", ()),
            ("linear", "squared-error", ()),
            ("lstm", "cross-entropy", ()),
            ("gru", "squared-error", (2,)),
        ]
        reorder = {0, 3}
    cases = []
    for i, (kind, loss, batch) in enumerate(specs):  # reorder: the permuted-order comparisons run on these
        P, th = random_problem(kind, n=n, d=d, T=T, k=k, loss=loss, batch=batch, generator=gen)
        b = f"/batch{batch[0]}" if batch else ""
        cases.append(ParityCase(f"{kind}/{loss}{b}", P, th, i in reorder))
    return cases


def run_parity(
    cases: Sequence[ParityCase],
    arithmetics: Sequence[Arithmetic],
    generator: torch.Generator,
    *,
    algorithms: Sequence[ParityAlgorithm] = ALGORITHMS,
    runner: Runner | None = None,
    reorder: bool = True,
) -> list[ParityComparison]:
    """Every applicable algorithm on every case in every arithmetic (+ permuted orders where asked)."""
    out: list[ParityComparison] = []
    for case in cases:
        for alg in applicable_algorithms(case.problem, algorithms):
            inputs = alg.prepare(case.problem, case.theta, generator)
            refs: dict[torch.dtype, ParityReference] = {}
            for ar in arithmetics:
                key = torch.float32 if ar.dtype in (torch.float32, torch.float16, torch.bfloat16) else torch.float64
                if key not in refs:
                    mags = next(iter(refs.values())).magnitudes if refs else None
                    refs[key] = parity_reference(alg, inputs, key, magnitudes=mags)
                out.append(compare(refs[key], ar, runner=runner, label=case.label))
                if reorder and case.reorder and ar.device.type == "cpu":
                    perm = hidden_permutation(case.problem, generator)
                    out.append(compare(refs[key], ar, permutation=perm, runner=runner, label=case.label))
    return out


def control_comparison(
    runner: Runner, case: ParityCase, algorithm: ParityAlgorithm, arithmetic: Arithmetic, generator: torch.Generator
) -> ParityComparison:
    """``runner`` as the candidate on one comparison (a negative control's run: a mutant must exceed the budget)."""
    inputs = algorithm.prepare(case.problem, case.theta, generator)
    ref = parity_reference(algorithm, inputs, torch.float32 if arithmetic.dtype != torch.float64 else torch.float64)
    return compare(ref, arithmetic, runner=runner, label=case.label)
