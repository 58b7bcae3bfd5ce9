r"""Checks of the ``device`` family: GPU paths against CPU float64 within a predicted error budget.

DESIGN.md, "GPU paths": every algorithm run on CUDA (float32 and float64) agrees
with the CPU float64 reference within a predicted error budget. The budget is the
parity model of :mod:`verify.oracles.budget` (section 2), the algorithms and the
comparison machinery are in :mod:`verify.gpu.parity`:

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
* ``device.gpu-unbiasedness`` -- UORO's unbiasedness (Tallec & Ollivier Prop. 1) at a
  size a CPU cannot afford (Elman-tanh n = 256, T = 16, δ = 0.02, up to 4·10⁶ draws from
  the fused sampler of :mod:`verify.estimators.fused` in float32 with the rounding
  accounted, :mod:`verify.gpu.float32_sampling`) through the sequential test of
  :mod:`verify.stats.unbiased`; profile ``full``, SKIPPED without CUDA.

Which device the GPU claims use: :func:`verify.hardware.parity_device` -- an explicit
``cuda_device`` option, else the run's ``--device`` when it names CUDA, else
``cuda:0`` when CUDA is available (a plain ``rnn-verify run`` on a GPU machine
checks its GPU), else SKIPPED.

The candidate side is computed by the implementation under test,
``config.impls.device.runner`` (:class:`verify.impl.DeviceImpl`; the algorithm itself by
default); the mutants of :mod:`verify.impl.mutants.device` are other runners and must FAIL.
Options (``RunConfig.options``): ``controls`` (False skips the negative controls), ``cuda_device``;
for ``device.gpu-unbiasedness`` also
``standin`` (True: run on the CPU at the given small size, to test the path; the
result says so), ``n``, ``T``, ``max_samples``, ``delta``, ``directions``, ``chunk``, ``precision``
("auto": float32 draws on CUDA where the rounding allowance is below δ/10; "float64"; "float32").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from verify.checks import register
from verify.config import RunConfig
from verify.estimators import UORO, NoiseSource, Rademacher
from verify.estimators.fused import fused_sampler
from verify.gpu.float32_sampling import rounded, run_with_precision
from verify.gpu.parity import (
    ALGORITHMS,
    CI_ALGORITHMS,
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
from verify.hardware import NO_CUDA_REASON, describe_device, device_record, matmul_tf32, parity_device
from verify.impl import describe_part
from verify.impl.mutants.device import MUTANTS as DEVICE_MUTANTS
from verify.impl.mutants.device import get as get_mutant
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.oracles.bptt import bptt_gradient, per_step_gradients
from verify.oracles.budget import C_PARITY, CALIBRATED_MAX_RATIO, CALIBRATION_MARGIN, U_TF32
from verify.stats.unbiased import TestOptions, UnbiasednessResult
from verify.verdict import CheckResult, Control, Verdict

__all__ = [
    "CUDA_CLAIMS",
    "ParityCase",
    "ScaleRun",
    "fused_projection_sampler",
    "gpu_scale_unbiasedness",
    "parity_suite",
    "run_parity",
    "uoro_projection_sampler",
]


#: the claims that need a CUDA device (SKIPPED without); ``device.float32-standin`` runs everywhere
CUDA_CLAIMS = ("device.cuda-parity", "device.gpu-unbiasedness")


# ------------------------------------------------------------------------ suite
@dataclass(frozen=True)
class ParityCase:
    """One problem of the parity suite; ``reorder`` asks for the permuted-order comparisons too."""

    label: str
    problem: Problem
    theta: torch.Tensor
    reorder: bool


def parity_suite(config: RunConfig) -> list[ParityCase]:
    """Every cell kind (both losses under ``full``) + one batched GRU; ci sizes are small."""
    gen = config.generator(salt=801)
    specs: list[tuple[str, str, tuple[int, ...]]]
    if config.full:
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


def _algorithms(config: RunConfig) -> tuple[ParityAlgorithm, ...]:
    return ALGORITHMS if config.full else CI_ALGORITHMS


def _runner(config: RunConfig) -> tuple[Runner, str | None]:
    """The candidate's runner under test and, when it is not the toolkit's, what it is."""
    impls = config.impls
    label = None if impls.is_default("device.runner") else describe_part(impls, "device.runner")
    return impls.device.runner, label


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


def _control(
    mutant: str, case: ParityCase, algorithm: ParityAlgorithm, arithmetic: Arithmetic, gen: torch.Generator
) -> tuple[Control, dict[str, Any]]:
    """Run one mutant as the candidate on one comparison: it must FAIL (ratio > 1, or the run breaks)."""
    impl = get_mutant(mutant).impl.runner
    inputs = algorithm.prepare(case.problem, case.theta, gen)
    ref = parity_reference(algorithm, inputs, torch.float32 if arithmetic.dtype != torch.float64 else torch.float64)
    cmp = compare(ref, arithmetic, runner=impl, label=case.label)
    observed = "PASS" if cmp.passed else "FAIL"
    detail = (
        f"{algorithm.name} on {case.label} [{arithmetic.label}]: error {cmp.error:.3g} vs budget {cmp.budget:.3g} "
        f"(measured/budget {cmp.ratio:.3g})" + (f"; {cmp.note}" if cmp.note else "")
    )
    return Control(mutant, "FAIL", observed, detail), {"mutant": mutant, "ratio": cmp.ratio, "detail": detail}


def _figures(comparisons: Sequence[ParityComparison], controls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Measured error vs budget (per algorithm), worst measured/budget per algorithm and setting, the controls."""
    algs = list(dict.fromkeys(c.algorithm for c in comparisons))
    settings = list(dict.fromkeys(f"{c.arithmetic}, {c.order}" for c in comparisons))
    scatter = {
        "kind": "scatter",
        "title": "measured error vs predicted budget (worst row of each comparison)",
        "series": [
            {
                "label": a,
                "x": [c.budget for c in comparisons if c.algorithm == a],
                "y": [c.error for c in comparisons if c.algorithm == a],
            }
            for a in algs
        ],
        "xlabel": "budget C (u_cand + u_ref) sqrt(m L_eff + T_sum) ||r_bar||",
        "ylabel": "measured ||r_hat - r||",
        "logx": True,
        "logy": True,
        "diagonal": True,
        "caption": "every point below the diagonal is within its budget",
    }
    bars = {
        "kind": "bar",
        "title": "worst measured / budget per algorithm",
        "x": algs,
        "series": [
            {
                "label": s,
                "y": [
                    max(
                        (c.ratio for c in comparisons if c.algorithm == a and f"{c.arithmetic}, {c.order}" == s),
                        default=float("nan"),
                    )
                    for a in algs
                ],
            }
            for s in settings
        ],
        "ylabel": "measured / budget",
        "logy": True,
        "hlines": [{"y": 1.0, "label": "budget"}],
    }
    figs: list[dict[str, Any]] = [scatter, bars]
    if controls:
        figs.append(
            {
                "kind": "table",
                "title": "negative controls (must FAIL: measured/budget > 1)",
                "columns": ["mutant", "measured / budget", "detail"],
                "rows": [[c["mutant"], f"{c['ratio']:.3g}", c["detail"]] for c in controls],
            }
        )
    return figs


def _result(
    claim_id: str,
    config: RunConfig,
    comparisons: list[ParityComparison],
    controls: list[Control],
    control_rows: list[dict[str, Any]],
    *,
    device: str,
    dtype: str,
    t0: float,
    extra: dict[str, Any],
    prefix: str = "",
    mutant: str | None = None,
) -> CheckResult:
    worst = max(comparisons, key=lambda c: c.ratio)
    failed = [c for c in comparisons if not c.passed]
    ok = not failed and all(c.ok for c in controls)
    by_alg: dict[str, float] = {}
    for c in comparisons:
        by_alg[c.algorithm] = max(by_alg.get(c.algorithm, 0.0), c.ratio)
    summary = (
        f"{prefix}{len(comparisons)} comparisons ({len(by_alg)} algorithms): worst measured/budget "
        f"{worst.ratio:.3g} ({worst.algorithm} on {worst.problem} [{worst.arithmetic}, {worst.order}]: error "
        f"{worst.error:.3g} vs budget {worst.budget:.3g}); per algorithm "
        + ", ".join(f"{a} {r:.2g}" for a, r in by_alg.items())
    )
    if mutant:
        summary += f"; candidate computed by {mutant}"
    if failed:
        broken = [c for c in failed if c.note]
        summary += f"; {len(failed)} over budget" + (f" ({len(broken)}: {broken[0].note})" if broken else "")
    bad = [c.name for c in controls if not c.ok]
    if bad:
        summary += f"; NEGATIVE CONTROL NOT CAUGHT: {', '.join(bad)}"
    return CheckResult(
        claim_id=claim_id,
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=summary,
        statistic=worst.ratio,
        threshold=1.0,
        seed=config.seed,
        dtype=dtype,
        device=device,
        controls=tuple(controls),
        data={
            "comparisons": [c.row() for c in comparisons],
            "worst_ratio_by_algorithm": by_alg,
            "budget_constant": {
                "C": C_PARITY,
                "calibrated_max_ratio": CALIBRATED_MAX_RATIO,
                "margin": CALIBRATION_MARGIN,
            },
            "figures": _figures(comparisons, control_rows),
            **extra,
        },
        wall_time=time.perf_counter() - t0,
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
    cases = parity_suite(config)
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
    controls, rows = _controls(cases, cpu, config, gen)
    return _result(
        "device.float32-standin",
        config,
        comparisons,
        controls,
        rows,
        device="cpu",
        dtype="float32+float64",
        t0=t0,
        extra={"device_record": device_record(cpu)},
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
        return CheckResult(
            "device.cuda-parity",
            Verdict.SKIPPED,
            f"SKIPPED: {NO_CUDA_REASON}; the CPU stand-in device.float32-standin covers the logic. On a CUDA "
            "machine: rnn-verify run --device cuda --claims 'device.*'",
            reason=NO_CUDA_REASON,
            seed=config.seed,
            device=config.device,
            wall_time=time.perf_counter() - t0,
        )
    gen = config.generator(salt=803)
    runner, mutant = _runner(config)
    cases = parity_suite(config)
    arith = [Arithmetic(torch.float64, dev), Arithmetic(torch.float32, dev)]
    settings: dict[str, Any] = {}
    if dev.type == "cuda":
        arith.append(Arithmetic(torch.float32, dev, tf32=True))
        for flag in (False, True):
            with matmul_tf32(flag) as s:
                settings[f"tf32={'on' if flag else 'off'}"] = s
    comparisons = run_parity(cases, arith, gen, algorithms=_algorithms(config), runner=runner, reorder=False)
    controls, rows = _controls(cases, dev, config, gen)
    rec = device_record(dev)
    prefix = "STAND-IN on cpu (not a CUDA result): " if standin else f"{describe_device(dev)}: "
    extra = {"device_record": rec, "tf32_settings": settings, "tf32_rounding_unit": U_TF32, "standin": standin}
    return _result(
        "device.cuda-parity",
        config,
        comparisons,
        controls,
        rows,
        device=describe_device(dev),
        dtype="float64+float32" + ("+tf32" if dev.type == "cuda" else ""),
        t0=t0,
        extra=extra,
        prefix=prefix,
        mutant=mutant,
    )


# ------------------------------------------------------- GPU-scale statistics
@dataclass(frozen=True)
class ScaleRun:
    """A GPU-scale unbiasedness run: the result, its sizes and its speed."""

    result: UnbiasednessResult
    n: int
    p: int
    T: int
    directions: int
    chunk: int
    samples_per_second: float
    device: str
    sampling: dict[str, Any] = field(default_factory=dict)


def uoro_projection_sampler(
    estimator: UORO, problem: Problem, theta: torch.Tensor, Q: torch.Tensor, device: torch.device
) -> Callable[[int, torch.Generator], list[torch.Tensor]]:
    r"""Sampler for :func:`~verify.stats.unbiased.sequential_test`: m UORO runs in one vectorized pass on ``device``.

    Returns the projections :math:`Q^\top\tilde g_T` and :math:`Q^\top\sum_t\tilde g_t` (m, K)
    on the CPU in float64 (the statistics engine's scatter matrices are K×K, not
    p×p). The noise comes from a generator on ``device`` seeded from the engine's
    CPU generator, so runs are reproducible.
    """

    def sampler(m: int, gen: torch.Generator) -> list[torch.Tensor]:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        rng = torch.Generator(device=device).manual_seed(seed)
        state = estimator.init(problem, theta, rng, samples=m)
        total = torch.zeros(m, problem.p, dtype=problem.dtype, device=device)
        last = total
        for t in range(1, problem.T + 1):
            state, g = estimator.step(problem, theta, state, t, rng)
            total = total + g
            last = g
        return [(last @ Q).cpu(), (total @ Q).cpu()]

    return sampler


def _scale_problem(n: int, T: int, device: torch.device, gen: torch.Generator) -> tuple[Problem, torch.Tensor]:
    P, th = random_problem("elman-tanh", n=n, d=8, T=T, k=4, generator=gen)
    return P.to(torch.float64, device), th.to(device)


def fused_projection_sampler(
    estimator: UORO, problem: Problem, theta: torch.Tensor, Q: torch.Tensor, device: torch.device
) -> Callable[[int, torch.Generator], list[torch.Tensor]]:
    r"""Like :func:`uoro_projection_sampler` with the fused sampler of :mod:`verify.estimators.fused`.

    :math:`Q^\top\tilde g_T` and :math:`Q^\top\sum_t\tilde g_t` (m, K) straight from θ̃'s factors (the
    (m, p) estimates are never formed), in the problem's dtype on ``device``; the noise comes from
    a generator on ``device`` seeded from the engine's CPU generator (the same seed gives the same
    ν in float32 and float64: the paired pilot of :mod:`verify.gpu.float32_sampling` relies on it).
    """
    P = problem.to(device=device)
    smp, _ = fused_sampler(
        estimator, P, theta.to(device), steps=(P.T,), quantities=("gradient", "total"), project=Q.to(device)
    )

    def sampler(m: int, gen: torch.Generator) -> list[torch.Tensor]:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        rng = torch.Generator(device=device).manual_seed(seed)
        return [x.to(device="cpu", dtype=torch.float64) for x in smp(m, rng)]

    return sampler


def gpu_scale_unbiasedness(
    device: torch.device,
    *,
    n: int,
    T: int,
    max_samples: int,
    delta: float,
    directions: int,
    generator: torch.Generator,
    noise: NoiseSource | None = None,
    chunk: int | None = None,
    alpha: float = 1e-3,
    beta: float = 1e-3,
    precision: str = "auto",
) -> ScaleRun:
    r"""UORO (Algorithm 1) unbiasedness on Elman-tanh at state size n, vectorized on ``device``.

    Tallec & Ollivier Prop. 1: :math:`E\tilde g_t = \partial\ell_t/\partial\theta`.
    Tested on K random orthonormal directions Q (drawn before the data) of the
    last step's estimate and of the total :math:`\sum_t\tilde g_t`:
    :math:`E[Q^\top\tilde g] = Q^\top g`, sequentially (anytime-valid) up to
    ``max_samples`` draws. A PASS certifies :math:`\|Q^\top(E\tilde g - g)\| <
    \delta\|Q^\top g\|` at 1 − β for both quantities; FAIL has false-fail rate ≤ α.
    ``noise`` replaces the Rademacher law (the negative control uses {0, 1}).

    Draws come from the fused sampler (issue 15) with ``precision`` as in
    :mod:`verify.gpu.float32_sampling`: ``"auto"`` draws in float32 on CUDA with the rounding
    accounted (the truth is float64 on the float32-rounded problem; the allowance shrinks δ),
    float64 elsewhere or where the allowance would exceed a tenth of δ.
    """
    P, th = _scale_problem(n, T, device, generator)
    p = P.p
    q = torch.linalg.qr(torch.randn(p, directions, generator=generator, dtype=torch.float64))[0]
    prec = precision if precision != "auto" else ("float32" if device.type == "cuda" else "float64")
    P_cpu, th_cpu = P.to(torch.float64, "cpu"), th.cpu()
    P32, th32, P64, th64 = rounded(P_cpu, th_cpu)
    if prec == "float64":
        P64, th64 = P_cpu, th_cpu
    truths = [per_step_gradients(P64, th64)[-1] @ q, bptt_gradient(P64, th64) @ q]
    est = UORO(noise=noise if noise is not None else Rademacher())

    def make(dtype: torch.dtype) -> Callable[[int, torch.Generator], list[torch.Tensor]]:
        Pd, thd = (P32, th32) if dtype == torch.float32 else (P64, th64)
        return fused_projection_sampler(est, Pd, thd, q.to(dtype), device)

    if chunk is None:
        chunk = 65536 if device.type == "cuda" else 4096
    opts = TestOptions(alpha=alpha, beta=beta, delta=delta)
    t0 = time.perf_counter()
    out = run_with_precision(
        make,
        truths,
        [f"Q^T dl_{T}/dtheta", "Q^T dL/dtheta"],
        options=opts,
        generator=generator,
        max_samples=max_samples,
        precision=prec,
        first=min(max_samples, max(2000, chunk)),
        growth=1.3,
        min_step=chunk,
        chunk=chunk,
    )
    wall = time.perf_counter() - t0
    res = out.result
    return ScaleRun(
        res, n, p, T, directions, chunk, res.samples_used / max(wall, 1e-9), describe_device(device), out.to_data()
    )


@register("device.gpu-unbiasedness")
def gpu_unbiasedness(config: RunConfig) -> CheckResult:
    """UORO Prop. 1 at GPU scale (Elman-tanh n = 256, T = 16, δ = 0.02, up to 4·10⁶ draws), sequential test.

    Source: uoro-tallec-ollivier.md Prop. 1 (unbiasedness for frozen θ),
    Algorithm 1; engine :mod:`verify.stats.unbiased` (anytime-valid).

    .. math:: E[Q^\\top\\tilde g_t] = Q^\\top\\,\\partial\\ell_t/\\partial\\theta
    """
    t0 = time.perf_counter()
    standin = bool(config.option("standin", False))
    dev = torch.device("cpu") if standin else parity_device(config.device, config.option("cuda_device"))
    if dev is None:
        return CheckResult(
            "device.gpu-unbiasedness",
            Verdict.SKIPPED,
            f"SKIPPED: {NO_CUDA_REASON}; needs a GPU (n = 256, T = 16, up to 4e6 draws). On a CUDA machine: "
            "rnn-verify run --profile full --device cuda --claims device.gpu-unbiasedness",
            reason=NO_CUDA_REASON,
            seed=config.seed,
            device=config.device,
            wall_time=time.perf_counter() - t0,
        )
    n = int(config.option("n", 256))
    T = int(config.option("T", 16))
    max_samples = int(config.option("max_samples", 4_000_000))
    delta = float(config.option("delta", 0.02))
    K = int(config.option("directions", 32))
    chunk = config.option("chunk")
    precision = str(config.option("precision", "auto"))
    alpha, beta = 1e-3, 1e-3
    gen = config.generator(salt=804)
    run = gpu_scale_unbiasedness(
        dev,
        n=n,
        T=T,
        max_samples=max_samples,
        delta=delta,
        directions=K,
        generator=gen,
        chunk=chunk,
        alpha=alpha,
        beta=beta,
        precision=precision,
    )
    controls: list[Control] = []
    ctrl_data: dict[str, Any] = {}
    if config.option("controls", True) is not False:
        from verify.impl.mutants.estimators import ZeroOne

        bad = gpu_scale_unbiasedness(
            dev,
            n=n,
            T=T,
            max_samples=min(max_samples, 200_000),
            delta=delta,
            directions=K,
            generator=config.generator(salt=805),
            noise=ZeroOne(),
            chunk=chunk,
            alpha=alpha,
            beta=beta,
            precision=precision,
        )
        controls.append(
            Control(
                "uoro.nu-zero-one",
                "FAIL",
                bad.result.verdict.value,
                f"UORO with nu in {{0,1}} at the same size: {bad.result.summary()}",
            )
        )
        ctrl_data = bad.result.to_data()
    res = run.result
    verdict = res.verdict
    if verdict is Verdict.PASS and any(not c.ok for c in controls):
        verdict = Verdict.FAIL
    prefix = "STAND-IN on cpu (not a GPU-scale result): " if standin else f"{run.device}: "
    summary = (
        f"{prefix}UORO on Elman-tanh n={n} (p={run.p}), T={T}, K={K} random directions, chunks of {run.chunk}, "
        f"{run.sampling.get('sampling_precision', 'float64')} draws: {res.summary()}; "
        f"{run.samples_per_second:.3g} draws/s; {run.sampling.get('note', '')}"
    )
    bad_ctrl = [c.name for c in controls if not c.ok]
    if bad_ctrl:
        summary += f"; NEGATIVE CONTROL NOT CAUGHT: {', '.join(bad_ctrl)}"
    looks = [list(lk) for lk in res.looks]
    return CheckResult(
        "device.gpu-unbiasedness",
        verdict,
        summary,
        statistic=res.relative_bound,
        threshold=delta,
        comparison="<",
        seed=config.seed,
        dtype=str(run.sampling.get("sampling_precision", "float64")),
        device=run.device,
        alpha=alpha,
        beta=beta,
        delta=delta,
        samples_planned=res.samples_planned,
        samples_used=res.samples_used,
        reason=None if verdict is Verdict.PASS else (res.reason or summary),
        controls=tuple(controls),
        data={
            "test": res.to_data(),
            "control": ctrl_data,
            "sizes": {"n": n, "p": run.p, "T": T, "directions": K, "chunk": run.chunk},
            "sampling": run.sampling,
            "samples_per_second": run.samples_per_second,
            "device_record": device_record(dev),
            "standin": standin,
            "figures": [
                {
                    "kind": "line",
                    "title": "certified relative bias bound vs draws (sequential looks)",
                    "x": [lk[0] for lk in looks],
                    "series": [{"label": "certified bound", "y": [lk[1] for lk in looks]}],
                    "xlabel": "draws",
                    "ylabel": "bound / ||Q^T g||",
                    "logx": True,
                    "logy": True,
                    "hlines": [{"y": delta, "label": "delta"}],
                }
            ],
        },
        wall_time=time.perf_counter() - t0,
    )
