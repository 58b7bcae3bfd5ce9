"""GPU benchmarks and the calibration of the parity budget (issue 8).

``python -m verify.bench.gpu [--sizes 64 256 1024] [--cpu-max-n 256] [--dtype float32] [--repeats 3]``

Prints the device (and card) with every number:

1. per-step time of an RTRL step, a UORO step (M = 1) and an FPP update (a
   mini-batch of ``--fpp-batch`` per-sample gradients of eq. (7) + the SGD step on
   θ and the states) on the GPU and on the CPU, Elman-tanh with d = 8, k = 4, for
   every n in ``--sizes`` where memory allows (RTRL holds an n × p influence matrix,
   p ≈ n²: at n = 1024 that is 4 GiB in float32; the CPU runs stop at
   ``--cpu-max-n``);
2. the achieved FLOP/s of RTRL's O(n²p) product ∂F/∂s · ∂s/∂θ (2n²p flops, timed
   alone and as part of the whole step) relative to the card's peak matmul
   throughput measured in the same run (a large square matmul in the same dtype);
3. the GPU unbiasedness run's draws per second (the sampler of
   ``device.gpu-unbiasedness``: Elman-tanh n = ``--scale-n``, T = 4, one vectorized
   chunk of draws projected on 32 directions).

Without CUDA the CPU part runs and the GPU part prints that it was SKIPPED and why.

``python -m verify.bench.gpu --calibrate [--seeds 6] [--large-seeds 4] [--out DIR]``
runs the calibration of the parity budget's constant C (:mod:`verify.oracles.budget`,
"Calibration") on the CPU: random problems over seeds, cells, losses and sizes,
every algorithm of :mod:`verify.gpu.parity`, three reduction orders (float32 natural,
float32 with the hidden units permuted, float64 permuted vs float64). It prints
the largest raw ratio error / ((u_c + u_r) √D ‖r̄‖) per algorithm and order, the
constant it implies with the stated margin, and writes ``calibration.json`` and
PNG figures into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from verify._validate import available_memory_bytes
from verify.bench._timing import best_of, machine
from verify.errors import VerifyError
from verify.estimators import RTRL, UORO
from verify.files import preflight_dir, write_dir_atomic
from verify.fpp.objective import eq7_gradients
from verify.gpu.parity import (
    ALGORITHMS,
    Arithmetic,
    BPTTParity,
    FPPParity,
    ParityAlgorithm,
    PreactivationUOROParity,
    RTRLParity,
    TBPTTParity,
    TruncatedModelParity,
    UOROParity,
    applicable_algorithms,
    compare,
    hidden_permutation,
    parity_reference,
)
from verify.gpu.unbiasedness import scale_problem, uoro_projection_sampler
from verify.hardware import NO_CUDA_REASON, cuda_available, describe_device, device_record, matmul_tf32
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.oracles.budget import C_PARITY, CALIBRATED_MAX_RATIO, CALIBRATION_MARGIN
from verify.report.figures import render_png

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], object], device: torch.device, repeats: int) -> float:
    def run() -> None:
        fn()
        _sync(device)

    return best_of(run, repeats=repeats, warmup=1)


def _problem(n: int, dtype: torch.dtype, device: torch.device, T: int = 4) -> tuple[Problem, torch.Tensor]:
    P, th = random_problem("elman-tanh", n=n, d=8, T=T, k=4, generator=torch.Generator().manual_seed(n))
    return P.to(dtype, device), th.to(dtype=dtype, device=device)


def _free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return available_memory_bytes()


def peak_matmul_flops(device: torch.device, dtype: torch.dtype, repeats: int = 3) -> tuple[float, int]:
    """Peak matmul throughput measured here: the best (fastest of ≥ 5 runs) FLOP/s of a large square matmul."""
    size = 8192 if device.type == "cuda" else 1024
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    a @ b
    _sync(device)
    best = math.inf
    for _ in range(max(5, repeats)):
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / best, size


def rtrl_times(P: Problem, th: torch.Tensor, repeats: int) -> dict[str, float]:
    """Seconds per RTRL step and for its O(n²p) product alone, FLOP/s of the product."""
    est, rng = RTRL(), torch.Generator().manual_seed(0)
    dev = P.device
    state0 = est.init(P, th, rng)
    holder = {"state": state0}

    def step() -> None:
        holder["state"], _ = est.step(P, th, state0, 1, rng)

    t_step = _timed(step, dev, repeats)
    n, p = P.n, P.p
    Js = torch.randn(1, n, n, dtype=P.dtype, device=dev)
    I = torch.randn(1, n, p, dtype=P.dtype, device=dev)
    t_prod = _timed(lambda: torch.bmm(Js, I), dev, repeats)
    flops = 2.0 * n * n * p
    return {"step_s": t_step, "product_s": t_prod, "product_flops": flops / t_prod, "step_flops": flops / t_step}


def uoro_step_time(P: Problem, th: torch.Tensor, repeats: int) -> float:
    est = UORO()
    rng = torch.Generator(device=P.device).manual_seed(0)
    state = est.init(P, th, rng)
    state, _ = est.step(P, th, state, 1, rng)
    return _timed(lambda: est.step(P, th, state, 2, rng), P.device, repeats)


def fpp_update_time(P: Problem, th: torch.Tensor, batch: int, repeats: int, lr: float = 1e-3) -> float:
    """One FPP update: eq. (7) for a mini-batch of ``batch`` samples (T = 1) + the SGD step on θ and the states."""
    dev, dt = P.device, P.dtype
    with torch.no_grad():
        S = P.rollout(th)
    idx = torch.arange(1, batch + 1, device=dev) % P.T + 1
    w = torch.full((batch,), 1.0 / batch, dtype=dt, device=dev)

    theta = th.clone()

    def update() -> None:
        g_th, g_start, g_end = eq7_gradients(
            P, 1, 1.0, theta, S[idx - 1], S[idx], P.inputs[idx - 1].unsqueeze(1), P.targets[idx - 1], w
        )  # eq. (7)
        theta.sub_(lr * g_th)  # SGD on θ and on the explicit states s_{i-1}, s_i
        S.index_add_(0, idx - 1, -lr * g_start)
        S.index_add_(0, idx, -lr * g_end)

    return _timed(update, dev, repeats)


def scale_draws_per_second(n: int, device: torch.device, chunk: int, repeats: int) -> float:
    """Draws per second of the ``device.gpu-unbiasedness`` sampler (T = 4, 32 directions) in one chunk."""
    gen = torch.Generator().manual_seed(0)
    P, th = scale_problem(n, 4, device, gen)
    Q = torch.linalg.qr(torch.randn(P.p, 32, generator=gen, dtype=torch.float64))[0].to(device)
    sampler = uoro_projection_sampler(UORO(), P, th, Q, device)
    t = _timed(lambda: sampler(chunk, gen), device, repeats)
    return chunk / t


def _fmt_ms(s: float) -> str:
    return f"{1e3 * s:9.3f} ms"


def bench(args: argparse.Namespace) -> int:
    dtype = _DTYPES[args.dtype]
    print(f"# machine: {machine()}")
    devices = [torch.device("cpu")]
    if cuda_available():
        gpu = torch.device("cuda", 0)
        devices.append(gpu)
        print(f"# GPU: {json.dumps(device_record(gpu))}")
    else:
        print(f"# GPU part SKIPPED: {NO_CUDA_REASON}")
        print("#   ready-to-run on a CUDA machine: python -m verify.bench.gpu --sizes 64 256 1024")
    for dev in devices:
        name = describe_device(dev)
        tf32_modes = [False, True] if (dev.type == "cuda" and dtype == torch.float32) else [False]
        for tf32 in tf32_modes:
            ctx = matmul_tf32(tf32) if dev.type == "cuda" else None
            if ctx is not None:
                ctx.__enter__()
            try:
                label = f"[{name}, {args.dtype}{', tf32=on' if tf32 else ''}]"
                peak, size = peak_matmul_flops(dev, dtype, args.repeats)
                print(f"{label} peak matmul ({size}x{size}): {peak / 1e9:10.1f} GFLOP/s")
                for n in args.sizes:
                    _bench_size(args, label, dev, dtype, n, peak)
            finally:
                if ctx is not None:
                    ctx.__exit__(None, None, None)
        _bench_sampler(args, name, dev)
    if not cuda_available():
        print(f"[cuda] SKIPPED: {NO_CUDA_REASON} (RTRL/UORO/FPP GPU times, GPU FLOP/s, GPU draws/s not measured)")
    return 0


def _bench_size(
    args: argparse.Namespace, label: str, dev: torch.device, dtype: torch.dtype, n: int, peak: float
) -> None:
    """RTRL step (where memory allows), UORO step and FPP update times at state size ``n`` on ``dev``."""
    if dev.type == "cpu" and n > args.cpu_max_n:
        print(f"{label} n={n}: skipped on cpu (--cpu-max-n {args.cpu_max_n})")
        return
    P, th = _problem(n, dtype, dev)
    item = torch.empty((), dtype=dtype).element_size()
    need = 5 * P.n * P.p * item
    if need > 0.6 * _free_bytes(dev):
        print(
            f"{label} n={n} p={P.p}: RTRL skipped (needs ~{need / 2**30:.1f} GiB, "
            f"{_free_bytes(dev) / 2**30:.1f} GiB free)"
        )
    else:
        r = rtrl_times(P, th, args.repeats)
        print(
            f"{label} n={n} p={P.p}: RTRL step {_fmt_ms(r['step_s'])}; O(n^2 p) product "
            f"{_fmt_ms(r['product_s'])} = {r['product_flops'] / 1e9:.1f} GFLOP/s "
            f"({100 * r['product_flops'] / peak:.1f}% of peak; whole step "
            f"{100 * r['step_flops'] / peak:.1f}%)"
        )
    print(f"{label} n={n} p={P.p}: UORO step (M=1) {_fmt_ms(uoro_step_time(P, th, args.repeats))}")
    t_fpp = fpp_update_time(P, th, args.fpp_batch, args.repeats)
    print(f"{label} n={n} p={P.p}: FPP update (batch {args.fpp_batch}) {_fmt_ms(t_fpp)}")
    del P, th
    if dev.type == "cuda":
        torch.cuda.empty_cache()


def _bench_sampler(args: argparse.Namespace, name: str, dev: torch.device) -> None:
    """Draws per second of the unbiasedness sampler on ``dev`` (smaller sizes on the CPU)."""
    scale_n = args.scale_n if dev.type == "cuda" else min(args.scale_n, args.cpu_scale_n)
    chunk = args.scale_chunk if dev.type == "cuda" else min(args.scale_chunk, 256)
    rate = scale_draws_per_second(scale_n, dev, chunk, max(1, args.repeats // 2))
    print(
        f"[{name}, float64] unbiasedness sampler (Elman-tanh n={scale_n}, T=4, chunk {chunk}): "
        f"{rate:,.0f} draws/s (10^6 draws: {1e6 / rate:.0f} s)"
    )


# ------------------------------------------------------------------ calibration
def calibration_rows(
    seeds: Sequence[int],
    large_seeds: Sequence[int],
    log: Callable[[str], None],
    cells: Sequence[str] = ("elman-tanh", "elman-relu", "linear", "lstm", "gru"),
) -> list[dict[str, Any]]:
    """Raw ratios error / ((u_c + u_r) √D ‖r̄‖) (C = 1) over random problems, algorithms and orders."""
    large_algs = (
        BPTTParity(),
        TBPTTParity(8),
        TruncatedModelParity(8),
        RTRLParity(),
        UOROParity(1),
        PreactivationUOROParity(),
        FPPParity(T=5),
    )
    rows: list[dict[str, Any]] = []
    f32, f64 = Arithmetic(torch.float32), Arithmetic(torch.float64)
    plan = [(s, False) for s in seeds] + [(s, True) for s in large_seeds]
    for seed, large in plan:
        g = torch.Generator().manual_seed(seed)
        t0 = time.perf_counter()
        for kind in cells:
            for loss in (
                ("squared-error", "cross-entropy") if not large else (("squared-error", "cross-entropy")[seed % 2],)
            ):
                n, T, d, k, scale, batch, algs = _calibration_sizes(seed, large, g, large_algs)
                P, th = random_problem(kind, n=n, d=d, T=T, k=k, loss=loss, batch=batch, generator=g, scale=scale)
                setting = {"seed": seed, "large": large, "cell": kind, "loss": loss, "n": n, "d": d, "T": T, "k": k}
                setting.update({"batch": list(batch), "scale": scale})
                for alg in applicable_algorithms(P, algs):
                    rows.extend(_calibration_comparisons(alg, P, th, g, f32, f64, setting))
        log(f"# calibration seed {seed}{' (large)' if large else ''}: {time.perf_counter() - t0:.1f} s")
    return rows


def _calibration_sizes(
    seed: int, large: bool, g: torch.Generator, large_algs: Sequence[ParityAlgorithm]
) -> tuple[int, int, int, int, float, tuple[int, ...], Sequence[ParityAlgorithm]]:
    """A random problem's sizes n, T, d, k (drawn from ``g``), scale, batch and the algorithms to compare."""
    batch: tuple[int, ...]
    algs: Sequence[ParityAlgorithm]
    if large:
        n, T = int(torch.randint(8, 17, (1,), generator=g)), int(torch.randint(20, 61, (1,), generator=g))
        d, k = int(torch.randint(2, 9, (1,), generator=g)), int(torch.randint(2, 6, (1,), generator=g))
        scale, batch, algs = (0.9, 1.2, 0.5)[seed % 3], (), large_algs
    else:
        n, T = int(torch.randint(2, 9, (1,), generator=g)), int(torch.randint(3, 25, (1,), generator=g))
        d, k = int(torch.randint(1, 5, (1,), generator=g)), int(torch.randint(2, 4, (1,), generator=g))
        scale, batch, algs = 0.9, ((2,) if seed % 3 == 2 else ()), ALGORITHMS
    return n, T, d, k, scale, batch, algs


def _calibration_comparisons(
    alg: ParityAlgorithm,
    P: Problem,
    th: torch.Tensor,
    g: torch.Generator,
    f32: Arithmetic,
    f64: Arithmetic,
    setting: dict[str, Any],
) -> list[dict[str, Any]]:
    """One algorithm on one problem in the three reduction orders: a row per order (C = 1)."""
    inp = alg.prepare(P, th, g)
    ref = parity_reference(alg, inp, torch.float32)
    ref64 = parity_reference(alg, inp, torch.float64, magnitudes=ref.magnitudes)
    perm = hidden_permutation(P, g)
    runs = [
        ("float32", compare(ref, f32, constant=1.0)),
        ("float32 permuted", compare(ref, f32, permutation=perm, constant=1.0)),
        ("float64 permuted", compare(ref64, f64, permutation=perm, constant=1.0)),
    ]
    rows: list[dict[str, Any]] = []
    for order, c in runs:
        rows.append(
            {
                **setting,
                "algorithm": alg.name,
                "order": order,
                "raw_ratio": c.ratio,
                "depth": c.depth,
                "L_eff": c.memory,
                "error": c.error,
                "relative_error": c.relative_error,
            }
        )
    return rows


def calibrate(args: argparse.Namespace) -> int:
    out = preflight_dir(Path(args.out), "--out", needs=())  # a new, empty or rnn-verify-marked folder only
    files: dict[str, bytes] = {}
    print(f"# machine: {machine()}")
    seeds = list(range(args.seeds))
    large = list(range(100, 100 + args.large_seeds))
    rows = calibration_rows(seeds, large, lambda s: print(s, flush=True))
    worst = max(r["raw_ratio"] for r in rows)
    print(
        f"# {len(rows)} comparisons; largest raw ratio {worst:.4f} (module constant: CALIBRATED_MAX_RATIO = "
        f"{CALIBRATED_MAX_RATIO}, margin {CALIBRATION_MARGIN}, C_PARITY = {C_PARITY})"
    )
    print(f"# implied C with margin {CALIBRATION_MARGIN}: {worst * CALIBRATION_MARGIN:.4f}")
    keys = sorted({(r["algorithm"], r["order"]) for r in rows})
    print(f"{'algorithm':24s} {'order':18s} {'count':>5s} {'max raw':>9s} {'median':>9s} {'max/C_PARITY':>12s}")
    for alg, order in keys:
        v = sorted(r["raw_ratio"] for r in rows if r["algorithm"] == alg and r["order"] == order)
        print(f"{alg:24s} {order:18s} {len(v):5d} {v[-1]:9.4f} {statistics.median(v):9.4f} {v[-1] / C_PARITY:12.4f}")
    files["calibration.json"] = json.dumps({"rows": rows, "max_raw_ratio": worst}, indent=1).encode("utf-8")
    for name, spec in _calibration_figures(rows).items():
        files[name] = render_png(spec)
    write_dir_atomic(out, files)  # replaces only what rnn-verify wrote there (verify.files)
    for name in files:
        print(f"# wrote {out / name}")
    return 0


def _calibration_figures(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The calibration's figures by file name: raw ratio vs depth, and the largest ratio per algorithm and order."""
    orders = sorted({r["order"] for r in rows})
    figs: dict[str, dict[str, Any]] = {
        "calibration_ratio_vs_depth.png": {
            "kind": "scatter",
            "title": "parity budget calibration: raw ratio vs depth D = m L_eff + T_sum",
            "series": [
                {
                    "label": o,
                    "x": [r["depth"] for r in rows if r["order"] == o],
                    "y": [r["raw_ratio"] for r in rows if r["order"] == o],
                }
                for o in orders
            ],
            "xlabel": "D",
            "ylabel": "error / ((u_c + u_r) sqrt(D) ||r_bar||)",
            "logx": True,
            "logy": True,
            "hlines": [{"y": C_PARITY, "label": f"C_PARITY = {C_PARITY:g}"}],
        },
        "calibration_by_algorithm.png": {
            "kind": "bar",
            "title": "largest raw ratio per algorithm and order",
            "x": sorted({r["algorithm"] for r in rows}),
            "series": [
                {
                    "label": o,
                    "y": [
                        max(
                            (r["raw_ratio"] for r in rows if r["algorithm"] == a and r["order"] == o),
                            default=float("nan"),
                        )
                        for a in sorted({r["algorithm"] for r in rows})
                    ],
                }
                for o in orders
            ],
            "ylabel": "max raw ratio",
            "logy": True,
            "hlines": [{"y": C_PARITY, "label": "C_PARITY"}],
        },
    }
    return figs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.bench.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--cpu-max-n", type=int, default=256, help="largest n timed on the CPU")
    ap.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fpp-batch", type=int, default=8)
    ap.add_argument("--scale-n", type=int, default=256, help="state size of the unbiasedness sampler on the GPU")
    ap.add_argument("--cpu-scale-n", type=int, default=64, help="its state size on the CPU")
    ap.add_argument("--scale-chunk", type=int, default=4096, help="draws per vectorized chunk (GPU)")
    ap.add_argument("--calibrate", action="store_true", help="run the budget calibration instead")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--large-seeds", type=int, default=4)
    ap.add_argument("--out", default="calibration-device")
    args = ap.parse_args(argv)
    if args.calibrate:
        try:
            return calibrate(args)
        except VerifyError as exc:  # e.g. --out names a folder rnn-verify did not write
            print(f"verify.bench.gpu: error: {exc}", file=sys.stderr)
            return 2
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
