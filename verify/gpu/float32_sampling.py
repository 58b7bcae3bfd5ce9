r"""float32 sampling for the unbiasedness tests, with its rounding accounted so it cannot fake a verdict.

The statistical claims compare the mean of an estimator's draws with a float64 truth
(:mod:`verify.stats.unbiased`). Drawing in float32 halves the bytes a bandwidth-bound sampler
moves (issue 15), but the float32 draws :math:`X^{32}` are not the float64 draws :math:`X^{64}`:
their mean is off by a rounding bias :math:`b = E X^{32} - E X^{64}`. This module makes that bias
part of the test's arithmetic:

1. **The problem is rounded first.** θ, the inputs, targets and :math:`s_0` are rounded to float32
   and the truth :math:`g` is computed in float64 *on the rounded problem* -- the claim is then made
   about that problem (an instance as good as any), and only arithmetic rounding separates
   :math:`X^{32}` from :math:`X^{64}` (the convention of the parity budget, :mod:`verify.oracles.budget` §2).
2. **Rounding budget.** A pilot of paired draws -- the float32 and the float64 sampler fed the *same*
   noise (same generator state: the samplers draw ν identically in both dtypes) -- measures
   :math:`e_j = \|X^{32}_j - X^{64}_j\|` per draw for each quantity j. The allowance is
   :math:`\varepsilon_j = m\,(\bar e_j + z_{\beta_0/J}\,s_j/\sqrt{n_0})`: the margin
   m = :data:`MARGIN` (the parity budget's calibration margin) times an upper confidence bound on
   :math:`E\|e_j\| \ge \|b_j\|` at level :math:`\beta_0` (valid under the engine's own premise,
   i.i.d. draws with finite variance). The parity model's prediction
   :math:`C(u_{32}+u_{64})\sqrt{D}` is reported beside it (:func:`parity_factor`).
3. **PASS side.** The float32 test runs with :math:`\delta' = \delta - \max_j\varepsilon_j/\|g_j\|`:
   a certificate :math:`\|E X^{32}_j - g_j\| < \delta'\|g_j\|` implies
   :math:`\|E X^{64}_j - g_j\| < \delta\|g_j\|`. The float32 mean may differ from the float64 one by
   the allowance: ``truth_rtol`` = :math:`\max_j\varepsilon_j/\|g_j\|` puts it inside the round-off
   budget of every statistic (:mod:`verify.stats.roundoff`; the budget is part of the bound as well,
   so the certificate is conservative twice over).
4. **FAIL side.** A float32 FAIL stands only if a failing quantity's bias exceeds the allowance beyond
   its confidence radius, :math:`\|\bar X_j - g_j\| - r_j > \varepsilon_j` (then
   :math:`\|E X^{64}_j - g_j\| > 0` with probability ≥ 1 − β₃₂); otherwise the quantities are tested
   again in float64, and that test decides.
5. **Off where it would eat δ.** If :math:`\max_j\varepsilon_j/\|g_j\| >` :data:`MAX_SHARE` · δ, or the
   sampler has no float32 path, the whole test runs in float64 (``precision="auto"``).

Error rates: β is split three ways (pilot bound, float32 certificate, float64 fallback certificate)
and α two ways (a confirmed float32 FAIL is wrong with probability ≤ β₃₂ ≤ α/2; the float64
fallback runs at α/2): family-wise ≤ α and ≤ β, as for a plain float64 test.

Hook the engine could offer (not used here; :mod:`verify.stats` is not changed by this module): a
per-quantity known-bias allowance in :class:`~verify.stats.unbiased.TestOptions` (FAIL only when the
lower confidence bound on ‖E X − g‖ exceeds it; PASS against δ‖g‖ − allowance) would replace steps
3-4 and the float64 fallback with one test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.estimators.fused import sampler_for
from verify.estimators.sampling import reference_truths
from verify.model.problem import Problem
from verify.oracles.budget import C_PARITY, CALIBRATION_MARGIN, accumulation_length, unit_roundoff
from verify.stats import dist
from verify.stats.unbiased import TestOptions, UnbiasednessResult, sequential_test
from verify.verdict import Verdict

__all__ = [
    "MARGIN",
    "MAX_SHARE",
    "PRECISIONS",
    "Float32Outcome",
    "RoundingAllowance",
    "parity_factor",
    "rounded",
    "rounding_allowance",
    "run_with_precision",
    "sequential_test_with_precision",
]

#: safety factor on the measured rounding (the parity budget's calibration margin)
MARGIN = CALIBRATION_MARGIN
#: float32 sampling is off when its allowance would take more than this share of δ
MAX_SHARE = 0.1
PRECISIONS = ("auto", "float64", "float32")


def rounded(problem: Problem, theta: torch.Tensor) -> tuple[Problem, torch.Tensor, Problem, torch.Tensor]:
    """(P32, θ32, P64, θ64): the problem and θ rounded to float32, and the same values in float64."""
    P32 = problem.to(dtype=torch.float32)
    th32 = theta.detach().to(torch.float32)
    return P32, th32, P32.to(dtype=torch.float64), th32.to(torch.float64)


def parity_factor(problem: Problem, summed: int = 1) -> float:
    r"""The parity model's per-magnitude factor :math:`C(u_{32}+u_{64})\sqrt{m T + T_{sum}}` (L_eff ≤ T)."""
    D = accumulation_length(problem) * problem.T + summed
    return C_PARITY * (unit_roundoff(torch.float32) + unit_roundoff(torch.float64)) * math.sqrt(D)


@dataclass(frozen=True)
class RoundingAllowance:
    """Allowance ε_j ≥ ‖E X32_j − E X64_j‖ per quantity (absolute and relative to ‖g_j‖)."""

    absolute: tuple[float, ...]
    relative: tuple[float, ...]
    measured_mean: tuple[float, ...]
    measured_max: tuple[float, ...]
    pilot: int
    margin: float
    beta: float

    @property
    def worst_relative(self) -> float:
        return max(self.relative)

    def to_data(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def rounding_allowance(
    sampler32: Any,
    sampler64: Any,
    truths: Sequence[torch.Tensor],
    *,
    pilot: int,
    beta: float,
    generator: torch.Generator,
    margin: float = MARGIN,
) -> RoundingAllowance:
    """Paired pilot (same noise) of the float32 and float64 samplers → the allowance (module docstring, 2)."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    X32 = sampler32(pilot, torch.Generator().manual_seed(seed))
    X64 = sampler64(pilot, torch.Generator().manual_seed(seed))
    J = len(truths)
    z = float(dist.norm_isf(beta / J))
    ab, rel, mean, mx = [], [], [], []
    for j in range(J):
        e = torch.linalg.vector_norm(X32[j].double().cpu() - X64[j].double().cpu(), dim=1)
        m, sd = float(e.mean()), float(e.std()) if pilot > 1 else 0.0
        eps = margin * (m + z * sd / math.sqrt(pilot))
        gn = float(torch.linalg.vector_norm(truths[j]))
        ab.append(eps)
        rel.append(eps / gn if gn > 0 else math.inf)
        mean.append(m)
        mx.append(float(e.max()))
    return RoundingAllowance(tuple(ab), tuple(rel), tuple(mean), tuple(mx), pilot, margin, beta)


@dataclass(frozen=True)
class Float32Outcome:
    """The test's result and how it was drawn (``precision`` actually used, the allowance, the fallback)."""

    result: UnbiasednessResult
    precision: str
    allowance: RoundingAllowance | None
    note: str

    def to_data(self) -> dict[str, Any]:
        return {
            "sampling_precision": self.precision,
            "rounding_allowance": None if self.allowance is None else self.allowance.to_data(),
            "note": self.note,
        }


def sequential_test_with_precision(
    estimator: Any,
    problem: Problem,
    theta: torch.Tensor,
    *,
    steps: Sequence[int],
    quantities: Sequence[str],
    options: TestOptions,
    generator: torch.Generator,
    max_samples: int,
    precision: str = "auto",
    pilot: int = 512,
    first: int = 1000,
    growth: float = 1.1,
    min_step: int = 4000,
    device: torch.device | None = None,
) -> Float32Outcome:
    """The sequential unbiasedness test of ``estimator`` with float32 draws where sound, else float64.

    ``precision``: ``"float64"`` (plain test), ``"float32"`` or ``"auto"`` (float32 on a CUDA
    device, float64 on the CPU, where the draws at the claims' sizes are bound by per-call
    overhead and the statistics engine, not by bytes). With float32 the truth is computed in
    float64 on the float32-rounded problem (module docstring) and float32 is still refused
    where its allowance would exceed :data:`MAX_SHARE`·δ.
    """
    if precision not in PRECISIONS:
        raise InvalidArgument("precision", precision, f"must be one of {PRECISIONS}")
    dev = device if device is not None else problem.device
    if precision == "auto":
        precision = "float32" if dev.type == "cuda" else "float64"
    P32, th32, P64, th64 = rounded(problem, theta)
    if precision == "float64":
        P64, th64 = problem.to(dtype=torch.float64), theta.detach().to(torch.float64)
    ts = tuple(steps)
    truths = reference_truths(P64, th64, ts, tuple(quantities))
    _, names, _ = sampler_for(estimator, P64, th64, steps=ts, quantities=quantities)

    def make(dtype: torch.dtype) -> Any:
        P, th = (P32, th32) if dtype == torch.float32 else (P64, th64)
        return sampler_for(estimator, P.to(device=dev), th.to(dev), steps=ts, quantities=quantities)[0]

    return run_with_precision(
        make,
        truths,
        names,
        options=options,
        generator=generator,
        max_samples=max_samples,
        precision=precision,
        pilot=pilot,
        first=first,
        growth=growth,
        min_step=min_step,
    )


def _sequential_test(
    sampler: Any,
    truths: Sequence[torch.Tensor],
    names: Sequence[str],
    options: TestOptions,
    generator: torch.Generator,
    schedule: dict[str, Any],
) -> UnbiasednessResult:
    """:func:`~verify.stats.unbiased.sequential_test` of ``sampler`` with the looks of ``schedule``."""
    return sequential_test(
        sampler,
        list(truths),
        options=options,
        generator=generator,
        max_samples=schedule["max_samples"],
        first=schedule["first"],
        growth=schedule["growth"],
        min_step=schedule["min_step"],
        chunk=schedule["chunk"],
        names=list(names),
    )


def _float32_options(options: TestOptions, allow: RoundingAllowance, beta3: float) -> TestOptions:
    """The float32 test's options: β₃₂ = min(β/3, α/2), δ' = δ − the allowance, the allowance as truth tolerance."""
    beta32 = min(beta3, options.alpha / 2)
    return dataclasses.replace(
        options,
        beta=beta32,
        delta=options.delta - allow.worst_relative,
        # the float32 draws' mean may sit up to the allowance from the float64 estimator's: inside the
        # round-off budget of every statistic (conservative: delta' already gives the allowance up as well)
        truth_rtol=max(options.truth_rtol, allow.worst_relative),
    )


def _float32_note(allow: RoundingAllowance, opts32: TestOptions, options: TestOptions) -> str:
    return (
        f"float32 draws, rounding allowance <= {allow.worst_relative:.2g}*||g|| (measured mean "
        f"{max(allow.measured_mean):.2g}, pilot {allow.pilot}, margin {allow.margin:g}); certified at "
        f"delta' = {opts32.delta:.4g}, i.e. delta = {options.delta:g} for the float64 estimator"
    )


def _confirmed_failures(res32: UnbiasednessResult, allow: RoundingAllowance) -> list[str]:
    """The float32 FAILs whose bias exceeds the allowance beyond their confidence radius (module docstring, 4)."""
    return [
        q.name
        for q, eps in zip(res32.quantities, allow.absolute, strict=True)
        if q.verdict is Verdict.FAIL and q.bias_norm - q.radius > eps
    ]


def run_with_precision(
    make_sampler: Any,
    truths: Sequence[torch.Tensor],
    names: Sequence[str],
    *,
    options: TestOptions,
    generator: torch.Generator,
    max_samples: int,
    precision: str,
    pilot: int = 512,
    first: int = 1000,
    growth: float = 1.1,
    min_step: int = 4000,
    chunk: int | None = None,
) -> Float32Outcome:
    """The mechanism of the module docstring for any pair of samplers: ``make_sampler(dtype)`` -> ``sampler(m, rng)``.

    ``make_sampler(torch.float32)`` must draw on the float32-rounded problem and
    ``make_sampler(torch.float64)`` on the same rounded values in float64, both consuming the
    generator identically; ``truths`` are float64 on that problem. ``precision`` is
    ``"float64"`` or ``"float32"``.
    """
    if precision not in ("float32", "float64"):
        raise InvalidArgument("precision", precision, "must be 'float32' or 'float64' here")
    s64 = make_sampler(torch.float64)
    schedule = {"max_samples": max_samples, "first": first, "growth": growth, "min_step": min_step, "chunk": chunk}

    def plain(opts: TestOptions) -> UnbiasednessResult:
        return _sequential_test(s64, truths, names, opts, generator, schedule)

    if precision == "float64":
        return Float32Outcome(plain(options), "float64", None, "float64 draws")
    s32 = make_sampler(torch.float32)
    beta3 = options.beta / 3
    allow = rounding_allowance(s32, s64, truths, pilot=pilot, beta=beta3, generator=generator)
    if allow.worst_relative > MAX_SHARE * options.delta:
        note = (
            f"float32 off: its rounding allowance {allow.worst_relative:.2g}·‖g‖ exceeds {MAX_SHARE:g}·delta; "
            "float64 draws"
        )
        return Float32Outcome(plain(options), "float64", allow, note)
    opts32 = _float32_options(options, allow, beta3)
    res32 = _sequential_test(s32, truths, names, opts32, generator, schedule)
    note = _float32_note(allow, opts32, options)
    if res32.verdict is not Verdict.FAIL:
        return Float32Outcome(res32, "float32", allow, note)
    confirmed = _confirmed_failures(res32, allow)
    if confirmed:
        return Float32Outcome(res32, "float32", allow, note + f"; FAIL confirmed beyond rounding on {confirmed}")
    res64 = plain(dataclasses.replace(options, alpha=options.alpha / 2, beta=beta3))
    return Float32Outcome(
        res64,
        "float64",
        allow,
        note + "; the float32 FAIL was within the rounding allowance: re-tested in float64, which decides",
    )
