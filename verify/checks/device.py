r"""Checks of the ``device`` family: GPU paths against CPU float64 within a predicted error budget.

DESIGN.md, "GPU paths": every algorithm run on CUDA (float32 and float64) agrees
with the CPU float64 reference within a predicted error budget. The budget is the
parity model of :mod:`verify.oracles.budget` (section 2), the algorithms and the comparison
machinery are in :mod:`verify.gpu.parity`, the suite and its runs in :mod:`verify.gpu.suite`:

.. math::
    \|\hat r_{row} - r_{row}\| \le C\,(u_{cand}+u_{ref})\,\sqrt{m L_{eff} + T_{sum}}\,\|\bar r_{row}\| .

* ``device.float32-standin`` -- runs everywhere (CI): CPU float32 vs CPU float64 on
  the same rounded inputs, CPU float32 with the hidden units permuted (another
  reduction order) and CPU float64 permuted vs float64 (a second device's float64
  round-off), for BPTT, truncated BPTT, the truncated model, RTRL, UORO (rank 1
  and 2, identical tabulated noise), preactivation UORO and FPP's per-sample
  gradients of eq. (7). Negative controls (:mod:`verify.impl.mutants.device`): a
  candidate that silently computes in float16, one in bfloat16, and a UORO that
  draws fresh instead of identical noise must each FAIL.
* ``device.cuda-parity`` -- the same algorithms on CUDA in float64 (round-off
  budget), float32 with TF32 off and float32 with TF32 on (u = 2⁻¹¹), each against
  the CPU float64 reference; the card, its compute capability, the dtype and the TF32
  settings are in the result. SKIPPED with the reason where there is no CUDA.
* ``device.gpu-unbiasedness`` -- Tallec & Ollivier Prop. 1 for the UORO under test, ``config.impls.uoro.uoro``,
  at a size a CPU cannot afford (Elman-tanh n = 256, T = 16, δ = 0.02, up to 4·10⁶ draws; the toolkit's UORO
  from the fused sampler in float32 with the rounding accounted, any other through its own steps:
  :mod:`verify.gpu.unbiasedness`), sequential test of :mod:`verify.stats.unbiased`; profile ``full``, SKIPPED
  without CUDA or naming the error where the estimator runs on the CPU only (numpy). Control: ``uoro.noise-zero-one``.

Which device the GPU claims use: :func:`verify.hardware.parity_device` -- an explicit
``cuda_device`` option, else the run's ``--device`` when it names CUDA, else
``cuda:0`` when CUDA is available (a plain ``rnn-verify run`` on a GPU machine
checks its GPU), else SKIPPED.

The candidate side is computed by the implementation under test,
``config.impls.device.runner`` (:class:`verify.impl.DeviceImpl`; the algorithm itself by
default); the mutants of :mod:`verify.impl.mutants.device` are other runners and must FAIL.
Options (``RunConfig.options``): ``controls`` (False skips the negative controls), ``cuda_device``;
for ``device.gpu-unbiasedness`` also ``standin`` (True: run on the CPU at the given small size, to
test the path; the result says so), ``n``, ``T``, ``max_samples``, ``delta``, ``directions``, ``chunk``,
``precision`` ("auto": float32 draws on CUDA where the rounding allowance is below δ/10; "float64"; "float32").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import torch

from verify.checks import register, result
from verify.config import RunConfig
from verify.gpu.parity import (
    ALGORITHMS,
    CI_ALGORITHMS,
    Arithmetic,
    ParityAlgorithm,
    ParityComparison,
    Runner,
    applicable_algorithms,
)
from verify.gpu.suite import ParityCase, SuiteSetup, control_comparison, parity_suite, run_parity
from verify.gpu.unbiasedness import ScaleRun, ScaleSetup, gpu_scale_unbiasedness
from verify.hardware import NO_CUDA_REASON, describe_device, device_record, matmul_tf32, parity_device
from verify.impl import build, describe_part
from verify.impl.mutants import get as get_any_mutant
from verify.impl.mutants.device import MUTANTS as DEVICE_MUTANTS
from verify.impl.mutants.device import get as get_mutant
from verify.oracles.budget import C_PARITY, CALIBRATED_MAX_RATIO, CALIBRATION_MARGIN, U_TF32
from verify.report.plots.device import parity_figures, unbiasedness_figures
from verify.verdict import CheckResult, Control, Verdict

__all__ = ["CUDA_CLAIMS", "cuda_parity", "float32_standin", "gpu_unbiasedness"]


#: the claims that need a CUDA device (SKIPPED without); ``device.float32-standin`` runs everywhere
CUDA_CLAIMS = ("device.cuda-parity", "device.gpu-unbiasedness")


# ------------------------------------------------------------------------ parity
def _algorithms(config: RunConfig) -> tuple[ParityAlgorithm, ...]:
    return ALGORITHMS if config.full else CI_ALGORITHMS


def _runner(config: RunConfig) -> tuple[Runner, str | None]:
    """The candidate's runner under test and, when it is not the toolkit's, what it is."""
    label = None if config.impls.is_default("device.runner") else describe_part(config.impls, "device.runner")
    return config.impls.device.runner, label


def _control(
    mutant: str, case: ParityCase, algorithm: ParityAlgorithm, arithmetic: Arithmetic, gen: torch.Generator
) -> tuple[Control, dict[str, Any]]:
    """Run one mutant as the candidate on one comparison: it must FAIL (ratio > 1, or the run breaks)."""
    cmp = control_comparison(get_mutant(mutant).impl.runner, case, algorithm, arithmetic, gen)
    observed = "PASS" if cmp.passed else "FAIL"
    detail = (
        f"{algorithm.name} on {case.label} [{arithmetic.label}]: error {cmp.error:.3g} vs budget {cmp.budget:.3g} "
        f"(measured/budget {cmp.ratio:.3g})" + (f"; {cmp.note}" if cmp.note else "")
    )
    return Control(mutant, "FAIL", observed, detail), {"mutant": mutant, "ratio": cmp.ratio, "detail": detail}


def _parity_summary(comparisons: list[ParityComparison], by_alg: dict[str, float], mutant: str | None) -> str:
    """The worst comparison, the worst ratio per algorithm, the candidate's runner and what went over budget."""
    worst = max(comparisons, key=lambda c: c.ratio)
    failed = [c for c in comparisons if not c.passed]
    # a comparison whose candidate broke (raised) has no error and no budget: say what it did instead
    what = f"no result: {worst.note}" if worst.note else f"error {worst.error:.3g} vs budget {worst.budget:.3g}"
    summary = (
        f"{len(comparisons)} comparisons ({len(by_alg)} algorithms): worst measured/budget "
        f"{worst.ratio:.3g} ({worst.algorithm} on {worst.problem} [{worst.arithmetic}, {worst.order}]: {what}); "
        "per algorithm " + ", ".join(f"{a} {r:.2g}" for a, r in by_alg.items())
    )
    if mutant:
        summary += f"; candidate computed by {mutant}"
    if failed:
        broken = [c for c in failed if c.note]
        summary += f"; {len(failed) - len(broken)} over budget" + (
            f", {len(broken)} without a result ({broken[0].note})" if broken else ""
        )
    return summary


def _parity_result(
    claim_id: str,
    config: RunConfig,
    t0: float,
    comparisons: list[ParityComparison],
    controls: tuple[list[Control], list[dict[str, Any]]],
    *,
    device: str,
    dtype: str,
    extra: dict[str, Any],
    prefix: str = "",
    mutant: str | None = None,
) -> CheckResult:
    """PASS when every comparison is within its budget (and every control FAILed); the worst ratio against 1."""
    by_alg: dict[str, float] = {}
    for c in comparisons:
        by_alg[c.algorithm] = max(by_alg.get(c.algorithm, 0.0), c.ratio)
    budget = {"C": C_PARITY, "calibrated_max_ratio": CALIBRATED_MAX_RATIO, "margin": CALIBRATION_MARGIN}
    data = {
        "comparisons": [c.row() for c in comparisons],
        "worst_ratio_by_algorithm": by_alg,
        "budget_constant": budget,
        "figures": parity_figures(comparisons, controls[1]),
        **extra,
    }
    return result(
        claim_id,
        config,
        t0,
        all(c.passed for c in comparisons),
        prefix + _parity_summary(comparisons, by_alg, mutant),
        controls=controls[0],
        statistic=max(c.ratio for c in comparisons),
        threshold=1.0,
        device=device,
        dtype=dtype,
        data=data,
    )


def _controls(
    cases: Sequence[ParityCase], device: torch.device, config: RunConfig, gen: torch.Generator
) -> tuple[list[Control], list[dict[str, Any]]]:
    if config.option("controls", True) is False:
        return [], []
    algs = {a.name: a for a in ALGORITHMS}
    f32 = Arithmetic(torch.float32, device)
    first = cases[0]
    lstm = next((c for c in cases if c.problem.cell.name == "lstm"), first)
    plan: list[tuple[str, ParityCase, ParityAlgorithm]] = [
        ("device.float16-silent", first, algs["rtrl"]),
        ("device.bfloat16-silent", lstm, algs["bptt"]),
        ("device.fresh-noise", first, algs["uoro"]),
    ]
    if config.full:
        plan = [
            (m.name, first, a)
            for m in DEVICE_MUTANTS
            for a in applicable_algorithms(first.problem)
            if m.name != "device.fresh-noise" or "uoro" in a.name
        ]
    controls, rows = [], []
    for mutant, case, alg in plan:
        c, r = _control(mutant, case, alg, f32, gen)
        controls.append(c)
        rows.append(r)
    return controls, rows


# -------------------------------------------------------------------- stand-in
@register("device.float32-standin", uses=("device.runner",))
def float32_standin(config: RunConfig) -> CheckResult:
    """CPU float32 (and reordered float64) vs CPU float64 within the parity budget, every algorithm.

    Source: DESIGN.md "GPU paths" / issue 8; budget model :mod:`verify.oracles.budget` §2
    (Higham §3.1 inner-product bound); algorithms UORO eq. (4) (RTRL), Algorithm 1
    (UORO), Miller & Hardt eq. (3) (truncated model), FPP eq. (7).

    .. math:: \\|\\hat r - r\\| \\le C\\,(u_{32} + u_{64})\\,\\sqrt{m L_{eff} + T_{sum}}\\,\\|\\bar r\\|
    """
    t0 = time.perf_counter()
    gen = config.generator(salt=802)
    runner, mutant = _runner(config)
    cases = parity_suite(config.generator(salt=801), SuiteSetup(full=config.full))
    algs = _algorithms(config)
    cpu = torch.device("cpu")
    comparisons = run_parity(cases, [Arithmetic(torch.float32, cpu)], gen, algorithms=algs, runner=runner)
    # float64 in another reduction order (what a second device's float64 would see)
    reordered = [c for c in cases if c.reorder][: None if config.full else 1]
    comparisons += [
        c
        for c in run_parity(reordered, [Arithmetic(torch.float64, cpu)], gen, algorithms=algs, runner=runner)
        if c.order != "natural"
    ]
    controls = _controls(cases, cpu, config, gen)
    extra = {"device_record": device_record(cpu)}
    return _parity_result(
        "device.float32-standin",
        config,
        t0,
        comparisons,
        controls,
        device="cpu",
        dtype="float32+float64",
        extra=extra,
        mutant=mutant,
    )


# ------------------------------------------------------------------------ CUDA
@register("device.cuda-parity", uses=("device.runner",))
def cuda_parity(config: RunConfig) -> CheckResult:
    """Every algorithm on CUDA (float64; float32 TF32 off and on) vs CPU float64 within the parity budget.

    Source: DESIGN.md "GPU paths" / issue 8; budget :mod:`verify.oracles.budget` §2 with
    u = 2⁻⁵³ (float64), 2⁻²⁴ (float32), 2⁻¹¹ (TF32 matmuls).

    .. math:: \\|\\hat r_{cuda} - r_{cpu}\\| \\le C\\,(u_{cand} + u_{64})\\,\\sqrt{m L_{eff} + T_{sum}}\\,\\|\\bar r\\|
    """
    t0 = time.perf_counter()
    override = config.option("cuda_device")
    standin = override == "cpu"
    dev = torch.device("cpu") if standin else parity_device(config.device, override)
    if dev is None:
        return result(
            "device.cuda-parity",
            config,
            t0,
            Verdict.SKIPPED,
            f"SKIPPED: {NO_CUDA_REASON}; the CPU stand-in device.float32-standin covers the logic. On a CUDA "
            "machine: rnn-verify run --device cuda --claims 'device.*'",
            reason=NO_CUDA_REASON,
            device=config.device,
        )
    gen = config.generator(salt=803)
    runner, mutant = _runner(config)
    cases = parity_suite(config.generator(salt=801), SuiteSetup(full=config.full))
    arith = [Arithmetic(torch.float64, dev), Arithmetic(torch.float32, dev)]
    settings: dict[str, Any] = {}
    if dev.type == "cuda":
        arith.append(Arithmetic(torch.float32, dev, tf32=True))
        for flag in (False, True):
            with matmul_tf32(flag) as s:
                settings[f"tf32={'on' if flag else 'off'}"] = s
    comparisons = run_parity(cases, arith, gen, algorithms=_algorithms(config), runner=runner, reorder=False)
    controls = _controls(cases, dev, config, gen)
    rec = device_record(dev)
    prefix = "STAND-IN on cpu (not a CUDA result): " if standin else f"{describe_device(dev)}: "
    extra = {"device_record": rec, "tf32_settings": settings, "tf32_rounding_unit": U_TF32, "standin": standin}
    dtype = "float64+float32" + ("+tf32" if dev.type == "cuda" else "")
    return _parity_result(
        "device.cuda-parity",
        config,
        t0,
        comparisons,
        controls,
        device=describe_device(dev),
        dtype=dtype,
        extra=extra,
        prefix=prefix,
        mutant=mutant,
    )


# ------------------------------------------------------- GPU-scale statistics
def _skipped_unbiasedness(config: RunConfig, t0: float) -> CheckResult:
    return result(
        "device.gpu-unbiasedness",
        config,
        t0,
        Verdict.SKIPPED,
        f"SKIPPED: {NO_CUDA_REASON}; needs a GPU (n = 256, T = 16, up to 4e6 draws). On a CUDA machine: "
        "rnn-verify run --profile full --device cuda --claims device.gpu-unbiasedness",
        reason=NO_CUDA_REASON,
        device=config.device,
    )


def _scale_setup(config: RunConfig, device: torch.device) -> ScaleSetup:
    """The sizes of the options (n = 256, T = 16, 4·10⁶ draws, δ = 0.02, K = 32 by default); α = β = 10⁻³."""
    return ScaleSetup(
        device=device,
        n=int(config.option("n", 256)),
        T=int(config.option("T", 16)),
        max_samples=int(config.option("max_samples", 4_000_000)),
        delta=float(config.option("delta", 0.02)),
        directions=int(config.option("directions", 32)),
        chunk=config.option("chunk"),
        alpha=1e-3,
        beta=1e-3,
        precision=str(config.option("precision", "auto")),
    )


#: the negative control of ``device.gpu-unbiasedness``: a catalog mutant rerun through the same test
NOISE_CONTROL = "uoro.noise-zero-one"


def _noise_control(config: RunConfig, setup: ScaleSetup) -> tuple[list[Control], dict[str, Any]]:
    """The mutant :data:`NOISE_CONTROL` (ν in {0, 1}), same size, ≤ 2·10⁵ draws, must FAIL (``controls=False``: off)."""
    if config.option("controls", True) is False:
        return [], {}
    small = dataclasses.replace(setup, max_samples=min(setup.max_samples, 200_000))
    bad = gpu_scale_unbiasedness(get_any_mutant(NOISE_CONTROL).part(), config.generator(salt=805), small)
    control = Control(
        NOISE_CONTROL,
        "FAIL",
        bad.result.verdict.value,
        f"UORO with nu in {{0,1}} at the same size: {bad.result.summary()}",
    )
    return [control], bad.result.to_data()


def _unbiasedness_summary(run: ScaleRun, setup: ScaleSetup, standin: bool, under_test: str | None) -> str:
    prefix = "STAND-IN on cpu (not a GPU-scale result): " if standin else f"{run.device}: "
    who = f"UORO under test ({under_test}, {run.sampling.get('path', '')})" if under_test else "UORO"
    return (
        f"{prefix}{who} on Elman-tanh n={setup.n} (p={run.p}), T={setup.T}, K={setup.directions} random directions, "
        f"chunks of {run.chunk}, {run.sampling.get('sampling_precision', 'float64')} draws: {run.result.summary()}; "
        f"{run.samples_per_second:.3g} draws/s; {run.sampling.get('note', '')}"
    )


@register("device.gpu-unbiasedness", uses=("uoro.uoro",))
def gpu_unbiasedness(config: RunConfig) -> CheckResult:
    """UORO Prop. 1 at GPU scale (Elman-tanh n = 256, T = 16, δ = 0.02, up to 4·10⁶ draws), sequential test.

    Source: uoro-tallec-ollivier.md Prop. 1 (unbiasedness for frozen θ),
    Algorithm 1; engine :mod:`verify.stats.unbiased` (anytime-valid). The estimator is
    ``config.impls.uoro.uoro()``; one that cannot run on the device is SKIPPED with the error.

    .. math:: E[Q^\\top\\tilde g_t] = Q^\\top\\,\\partial\\ell_t/\\partial\\theta
    """
    t0 = time.perf_counter()
    standin = bool(config.option("standin", False))
    dev = torch.device("cpu") if standin else parity_device(config.device, config.option("cuda_device"))
    if dev is None:
        return _skipped_unbiasedness(config, t0)
    setup = _scale_setup(config, dev)
    estimator = build(config.impls.uoro.uoro, "device.gpu-unbiasedness")
    run = gpu_scale_unbiasedness(estimator, config.generator(salt=804), setup)
    controls, ctrl_data = _noise_control(config, setup)
    res = run.result
    under_test = None if config.impls.is_default("uoro.uoro") else describe_part(config.impls, "uoro.uoro")
    summary = _unbiasedness_summary(run, setup, standin, under_test)
    sizes = {"n": setup.n, "p": run.p, "T": setup.T, "directions": setup.directions, "chunk": run.chunk}
    return result(
        "device.gpu-unbiasedness",
        config,
        t0,
        res.verdict,
        summary,
        controls=controls,
        reason=None if res.verdict is Verdict.PASS else (res.reason or summary),
        device=run.device,
        dtype=str(run.sampling.get("sampling_precision", "float64")),
        statistic=res.relative_bound,
        threshold=setup.delta,
        comparison="<",
        alpha=setup.alpha,
        beta=setup.beta,
        delta=setup.delta,
        samples_planned=res.samples_planned,
        samples_used=res.samples_used,
        data={
            "test": res.to_data(),
            "control": ctrl_data,
            "sizes": sizes,
            "sampling": run.sampling,
            "samples_per_second": run.samples_per_second,
            "device_record": device_record(dev),
            "standin": standin,
            "figures": unbiasedness_figures([list(lk) for lk in res.looks], setup.delta),
        },
    )
