r"""Roofline benchmark of the samplers: sample-steps/s, bytes/s and FLOP/s against this machine's limits.

``python -m verify.bench.samplers [--device cpu|cuda] [--quick] [--ns 8 32 64 256 1024]
[--ms 1 1000 10000 100000] [--T 16] [--dtype float64] [--threads N] [--json PATH]``

Measured in the same run, first:

* the **streaming bandwidth**: best of several triad passes ``a = b + 1.5 c`` over three
  arrays far larger than the last-level cache (GB/s, 3 arrays × 8 B per element moved);
* the **matmul peak**: best of several square matmuls in the sampler's dtype (GFLOP/s;
  TF32 off on CUDA).

Then for every cell in ``--cells`` (default Elman-tanh; ``lstm gru`` are the other cells the statistical claims
draw), n in ``--ns`` and M in ``--ms`` (d = 3, k = 2, T steps, the
total gradient Σ_t g̃_t as output, i.e. what the statistical claims draw), each sampler
and, beside it, the same estimator on its generic autograd path driven through
``init``/``step`` (:func:`verify.testing.assertions.estimator_sampler`):

==================  =====================================================================
``uoro``            UORO (Algorithm 1), :func:`verify.estimators.fused.fused_sampler`
``uoro-T4``         UORO-T, blocks of 4 steps
``uoro-r4``         rank-4 UORO
``uoro-preact``     preactivation-space UORO
``uoro-step``       UORO's per-step contract on the fast kernels (``path="auto"``)
``rtrl``            RTRL step on the fast kernels (deterministic: one run; M = 1 only)
==================  =====================================================================

Per sampler: sample-steps/s (M·T / wall time; RTRL: steps/s), the **model** bytes and FLOPs
per sample-step (below), achieved GB/s ÷ the streaming bandwidth and GFLOP/s ÷ the matmul
peak, and the speed-up over the generic path measured in the same run.

Models (per sample-step, item = 8 B in float64; p the parameter count, p_c its cell part,
G×H the recurrent matrix, N the state size, r the rank):

* UORO family: the issue-15 θ̃-streaming model, **bytes = item·r·(4 p + 6 N)** (a materialized
  step reads θ̃, writes θ̃, reads it again for g̃ and writes g̃) and **FLOPs = r·(4 G H + 6 p_c)**
  (forward- and back-propagation of the noise through the cell, the outer-product update,
  the estimate, the norm). The fused sampler may move fewer bytes than the model (its
  factored form keeps θ̃ as rank-1 terms when T is small): the model is the yardstick, so
  "÷ bandwidth" above 1 means it beats a materialized implementation at the bandwidth limit.
* preactivation UORO: bytes = item·r·(4 N² + 4 A), FLOPs = r·(2 N³ + 4 N²) (A = n + d + 1);
* RTRL: bytes = item·(2 N p + 2 p) per step, FLOPs = 2 N² p + 2 N p.

``--project K``: the UORO samplers return :math:`Q^\top\sum_t\tilde g_t` on K random directions
(the GPU claim's output; the (M, p) estimates are never formed), the generic path projects its
p-vectors. Sizes that would not finish on a small machine are skipped and say so: the outputs
above ``--max-output-mb``, the generic path above ``--max-generic-s`` (estimated from a
small pilot) and everything above ``--max-s`` per measurement. ``--quick`` keeps n ≤ 64,
M ≤ 10⁴ and fewer samplers. Without CUDA, ``--device cuda`` prints that it is SKIPPED and why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from verify.bench._timing import machine, refuse_foreign_json
from verify.estimators import RTRL, UORO, PreactivationUORO
from verify.estimators.fused import fused_sampler
from verify.files import write_file_atomic
from verify.hardware import NO_CUDA_REASON, device_record, matmul_tf32
from verify.model.builders import random_problem
from verify.model.problem import Problem
from verify.testing.assertions import estimator_sampler

_DTYPES = {"float32": torch.float32, "float64": torch.float64}
TOOL = "verify.bench.samplers"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], object], device: torch.device, repeats: int, budget_s: float) -> float:
    """Best wall time of ``fn`` over up to ``repeats`` runs (fewer when one run is long), after a warm-up."""
    fn()
    _sync(device)
    best = math.inf
    spent = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        if spent > budget_s:
            break
    return best


# ------------------------------------------------------------------ machine limits
def streaming_bandwidth(device: torch.device, dtype: torch.dtype, mbytes: int, repeats: int = 5) -> float:
    """Triad ``a = b + 1.5 c`` over three arrays of ``mbytes`` MB each: bytes moved / best time (GB/s)."""
    item = torch.empty((), dtype=dtype).element_size()
    n = mbytes * 2**20 // item
    b = torch.rand(n, dtype=dtype, device=device)
    c = torch.rand(n, dtype=dtype, device=device)
    a = torch.empty_like(b)
    a.copy_(b)  # touch every page first

    def triad() -> None:
        torch.add(b, c, alpha=1.5, out=a)

    t = _timed(triad, device, repeats, 10.0)
    return 3 * n * item / t / 1e9


def matmul_peak(device: torch.device, dtype: torch.dtype, size: int, repeats: int = 3) -> float:
    """Best GFLOP/s of a square (size × size) matmul in ``dtype`` (TF32 off)."""
    A = torch.rand(size, size, dtype=dtype, device=device)
    B = torch.rand(size, size, dtype=dtype, device=device)
    out = torch.empty_like(A)
    with matmul_tf32(False):
        t = _timed(lambda: torch.mm(A, B, out=out), device, repeats, 10.0)
    return 2 * size**3 / t / 1e9


# ------------------------------------------------------------------------ models
def _sizes(P: Problem) -> dict[str, int]:
    lay = P.layout
    G, H = lay["cell.W"].shape
    p_c = lay["cell.b"].slice.stop
    return {"N": P.n, "p": P.p, "p_cell": p_c, "G": G, "H": H, "A": P.n + P.cell.input_size + 1}


def model(kind: str, P: Problem, rank: int) -> tuple[float, float]:
    """(bytes, FLOPs) per sample-step of a sampler kind (module docstring, "Models")."""
    z = _sizes(P)
    item = torch.empty((), dtype=P.dtype).element_size()
    N, p, p_c, G, H, A = z["N"], z["p"], z["p_cell"], z["G"], z["H"], z["A"]
    if kind == "rtrl":
        return item * (2 * N * p + 2 * p), 2.0 * N * N * p + 2.0 * N * p
    if kind == "uoro-preact":
        return item * rank * (4 * N * N + 4 * A), rank * (2.0 * N**3 + 4.0 * N * N)
    return item * rank * (4 * p + 6 * N), rank * (4.0 * G * H + 6.0 * p_c)


# ---------------------------------------------------------------------- samplers
SAMPLERS: dict[str, tuple[Callable[[], Any], int]] = {
    "uoro": (lambda: UORO(), 1),
    "uoro-T4": (lambda: UORO(block=4), 1),
    "uoro-r4": (lambda: UORO(rank=4), 4),
    "uoro-preact": (lambda: PreactivationUORO(), 1),
}
QUICK = ("uoro", "uoro-r4", "uoro-preact")


def _generic(est: Any) -> Any:
    return dataclasses.replace(est, path="generic") if hasattr(est, "path") else est


def _uoro_step_sampler(P: Problem, th: torch.Tensor) -> Callable[[int, torch.Generator], list[torch.Tensor]]:
    sampler, _ = estimator_sampler(UORO(), P, th, steps=(P.T,), quantities=("total",))
    return sampler


def measure(
    name: str,
    P: Problem,
    th: torch.Tensor,
    M: int,
    device: torch.device,
    args: argparse.Namespace,
    limits: dict[str, float],
) -> dict[str, Any]:
    """One row: the sampler and its generic baseline at (n, M)."""
    T = P.T
    row: dict[str, Any] = {"sampler": name, "cell": _cell_name(P), "n": P.n, "p": P.p, "M": M, "T": T}
    Q = _projection(name, P, device, args, row)
    width = P.p if Q is None else Q.shape[1]
    out_mb = M * width * torch.empty((), dtype=P.dtype).element_size() / 2**20
    est: Any = None
    if name == "rtrl":
        bytes_, flops = model("rtrl", P, 1)
        row.update(model_bytes=bytes_, model_flops=flops)
        fast_fn, gen_fn = _rtrl_runs(P, th)
        n_steps = T
    else:
        if out_mb > args.max_output_mb:
            row["skipped"] = f"outputs (M, p) = {out_mb:.0f} MB > --max-output-mb {args.max_output_mb}"
            return row
        est, fast_fn, gen_fn = _uoro_runs(name, P, th, M, device, Q, row)
        n_steps = M * T
    t_fast = _timed(fast_fn, device, args.repeats, args.max_s)
    rate = n_steps / t_fast
    row.update(
        seconds=t_fast,
        sample_steps_per_s=rate,
        gbytes_per_s=rate * row["model_bytes"] / 1e9,
        gflops=rate * row["model_flops"] / 1e9,
    )
    row["frac_bandwidth"] = row["gbytes_per_s"] / limits["bandwidth_gbs"]
    row["frac_matmul_peak"] = row["gflops"] / limits["matmul_gflops"]
    return _measure_generic(row, name, est, P, th, M, device, args, gen_fn, n_steps, t_fast)


def _projection(
    name: str, P: Problem, device: torch.device, args: argparse.Namespace, row: dict[str, Any]
) -> torch.Tensor | None:
    """``--project K``: K random orthonormal directions for the UORO samplers (None: no projection)."""
    Q = None
    if args.project and name in ("uoro", "uoro-T4", "uoro-r4"):
        gq = torch.Generator().manual_seed(1)
        Q = torch.linalg.qr(torch.randn(P.p, args.project, generator=gq, dtype=torch.float64))[0]
        Q = Q.to(dtype=P.dtype, device=device)
        row["projected_on"] = args.project
    return Q


def _rtrl_runs(P: Problem, th: torch.Tensor) -> tuple[Callable[[], object], Callable[[], object]]:
    """RTRL over the T steps on the fast kernels and on the generic path."""

    def run(est: RTRL) -> Callable[[], object]:
        def go() -> object:
            g = torch.Generator(device="cpu")
            st = est.init(P, th, g)
            for t in range(1, P.T + 1):
                st, _ = est.step(P, th, st, t, g)
            return st

        return go

    return run(RTRL()), run(RTRL(path="generic"))


def _uoro_runs(
    name: str,
    P: Problem,
    th: torch.Tensor,
    M: int,
    device: torch.device,
    Q: torch.Tensor | None,
    row: dict[str, Any],
) -> tuple[Any, Callable[[], object], Callable[[], object]]:
    """The estimator, M draws of its sampler and M draws of its generic path (the model costs go into ``row``)."""
    T = P.T
    if name == "uoro-step":
        est: Any = UORO()
        rank = 1
        fast = _uoro_step_sampler(P, th)
    else:
        make, rank = SAMPLERS[name]
        est = make()
        fast, _ = fused_sampler(est, P, th, steps=(T,), quantities=("total",), project=Q)
    bytes_, flops = model(name, P, rank)
    row.update(model_bytes=bytes_, model_flops=flops)
    generic, _ = estimator_sampler(_generic(est), P, th, steps=(T,), quantities=("total",))

    def fast_fn() -> object:
        return fast(M, torch.Generator(device=device).manual_seed(0))

    def gen_fn() -> object:
        out = generic(M, torch.Generator(device=device).manual_seed(0))
        return out if Q is None else [x @ Q for x in out]

    return est, fast_fn, gen_fn


def _measure_generic(
    row: dict[str, Any],
    name: str,
    est: Any,
    P: Problem,
    th: torch.Tensor,
    M: int,
    device: torch.device,
    args: argparse.Namespace,
    gen_fn: Callable[[], object],
    n_steps: int,
    t_fast: float,
) -> dict[str, Any]:
    """The generic baseline's rate and the speed-up over it (estimated from a pilot above the caps)."""
    T = P.T
    rate = n_steps / t_fast
    # the generic baseline: a pilot at small M (or one step) estimates its time; skipped above the cap
    pilot_m = min(M, 64)
    if name == "rtrl":
        t_pilot = _timed(gen_fn, device, 1, args.max_s)
        est_s = t_pilot
    else:
        generic_small, _ = estimator_sampler(_generic(est), P, th, steps=(T,), quantities=("total",))
        t_pilot = _timed(lambda: generic_small(pilot_m, torch.Generator(device=device).manual_seed(0)), device, 1, 1)
        est_s = t_pilot * M / pilot_m

    def estimated(why: str) -> dict[str, Any]:
        row["generic_skipped"] = why
        row["generic_estimated_sample_steps_per_s"] = n_steps / est_s
        row["speedup_vs_generic_estimated"] = rate / (n_steps / est_s)
        return row

    if est_s > args.max_generic_s:
        return estimated(f"estimated {est_s:.0f} s > --max-generic-s {args.max_generic_s}")
    try:
        t_gen = _timed(gen_fn, device, args.repeats, args.max_s)
    except (torch.OutOfMemoryError, MemoryError):
        # the generic path materializes (M, p) estimates per step: at large M it need not fit the
        # device; its rate is then the pilot's, linear in M (as above the time cap)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return estimated(f"out of memory at M = {M}; estimated from a pilot of {pilot_m} draws")
    row["generic_sample_steps_per_s"] = n_steps / t_gen
    row["speedup_vs_generic"] = t_gen / t_fast
    return row


#: the cells ``--cells`` accepts (the statistical claims draw UORO on Elman-tanh, LSTM and GRU)
CELLS = ("elman-tanh", "elman-relu", "linear", "lstm", "gru")


def _cell_name(P: Problem) -> str:
    return str(P.cell.describe())


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_table(rows: Sequence[dict[str, Any]], limits: dict[str, float]) -> None:
    print(
        f"streaming bandwidth (triad) {limits['bandwidth_gbs']:.1f} GB/s, matmul peak "
        f"{limits['matmul_gflops']:.1f} GFLOP/s ({limits['dtype']}), measured in this run"
    )
    head = (
        f"{'sampler':12s} {'cell':10s} {'n':>5s} {'M':>7s} {'sample-steps/s':>15s} {'GB/s':>8s} {'/bw':>6s} "
        f"{'GFLOP/s':>8s} {'/peak':>6s} {'generic s-s/s':>14s} {'speed-up':>9s}"
    )
    print(head)
    for r in rows:
        if "skipped" in r:
            print(f"{r['sampler']:12s} {r.get('cell', ''):10s} {r['n']:5d} {r['M']:7d}  skipped: {r['skipped']}")
            continue
        gen = r.get("generic_sample_steps_per_s", r.get("generic_estimated_sample_steps_per_s"))
        sp = r.get("speedup_vs_generic", r.get("speedup_vs_generic_estimated"))
        mark = "~" if "generic_skipped" in r else " "
        print(
            f"{r['sampler']:12s} {r.get('cell', ''):10s} {r['n']:5d} {r['M']:7d} {r['sample_steps_per_s']:15.4g} "
            f"{r['gbytes_per_s']:8.3g} "
            f"{r['frac_bandwidth']:6.2f} {r['gflops']:8.3g} {r['frac_matmul_peak']:6.3f} "
            f"{_fmt(gen, '14.4g')} {mark}{_fmt(sp, '8.1f')}"
        )
    print("(~: generic path estimated from a pilot of 64 draws: above --max-generic-s, or out of memory)")


def _arguments() -> argparse.ArgumentParser:
    """The command line (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    ap.add_argument("--quick", action="store_true", help="n <= 64, M <= 1e4, three samplers")
    ap.add_argument("--ns", type=int, nargs="+", default=[8, 32, 64, 256, 1024])
    ap.add_argument("--ms", type=int, nargs="+", default=[1, 1000, 10_000, 100_000])
    ap.add_argument("--samplers", nargs="+", default=None, help=f"subset of {[*SAMPLERS, 'uoro-step', 'rtrl']}")
    ap.add_argument("--T", type=int, default=16, help="steps per run (default 16)")
    ap.add_argument(
        "--cells",
        nargs="+",
        default=["elman-tanh"],
        choices=CELLS,
        help="cells to measure (default elman-tanh; the statistical claims also draw lstm and gru)",
    )
    ap.add_argument("--dtype", default="float64", choices=sorted(_DTYPES))
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-s", type=float, default=20.0, help="time budget per measurement (s)")
    ap.add_argument("--max-generic-s", type=float, default=20.0, help="skip a generic baseline estimated slower (s)")
    ap.add_argument("--max-output-mb", type=float, default=1024.0, help="skip M*p outputs larger than this (MB)")
    ap.add_argument(
        "--project", type=int, default=0, help="UORO samplers return Q^T g (M, K) on K random directions (0: off)"
    )
    ap.add_argument("--bandwidth-mb", type=int, default=None, help="MB per triad array (default 256 CPU, 1024 CUDA)")
    ap.add_argument("--json", default=None, help="write the results here (default bench-samplers.json)")
    return ap


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _arguments().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = _DTYPES[args.dtype]
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {args.device}: SKIPPED: {NO_CUDA_REASON}")
        return {"skipped": NO_CUDA_REASON}
    device = torch.device(args.device)
    ns, ms = list(args.ns), list(args.ms)
    names = args.samplers or ([*QUICK, "uoro-step", "rtrl"] if args.quick else [*SAMPLERS, "uoro-step", "rtrl"])
    if args.quick:
        ns = [n for n in ns if n <= 64]
        ms = [m for m in ms if m <= 10_000]
    print(f"machine: {machine()}; device {device}; dtype {args.dtype}; T = {args.T}")
    bw_mb = args.bandwidth_mb or (1024 if device.type == "cuda" else (64 if args.quick else 256))
    limits = {
        "bandwidth_gbs": streaming_bandwidth(device, dtype, bw_mb),
        "matmul_gflops": matmul_peak(device, dtype, 4096 if device.type == "cuda" else 1024),
        "dtype": args.dtype,
        "bandwidth_array_mb": bw_mb,
    }
    rows: list[dict[str, Any]] = []
    path = Path(args.json or "bench-samplers.json")
    refuse_foreign_json(path, TOOL)

    def save() -> dict[str, Any]:  # after every row: a run cut short by a time limit keeps what it measured
        return _save(path, device, args, limits, rows)

    for cell in args.cells:
        for n in ns:
            _measure_problem(cell, n, names, ms, device, dtype, args, limits, rows, save)
    print_table(rows, limits)
    result = save()
    print(f"wrote {path}")
    return result


def _save(
    path: Path, device: torch.device, args: argparse.Namespace, limits: dict[str, Any], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """Write the rows measured so far, with the machine, the limits and the models, to ``path``."""
    result = {
        "tool": TOOL,
        "machine": machine(),
        "device": device_record(device),
        "threads": torch.get_num_threads(),
        "T": args.T,
        "limits": limits,
        "rows": rows,
        "models": {
            "uoro-family": "bytes = item*r*(4p + 6N), FLOPs = r*(4GH + 6 p_cell) per sample-step",
            "uoro-preact": "bytes = item*r*(4N^2 + 4A), FLOPs = r*(2N^3 + 4N^2)",
            "rtrl": "bytes = item*(2Np + 2p), FLOPs = 2N^2 p + 2Np per step",
        },
    }
    write_file_atomic(path, json.dumps(result, indent=1, default=str).encode("utf-8"))
    return result


def _measure_problem(
    cell: str,
    n: int,
    names: Sequence[str],
    ms: Sequence[int],
    device: torch.device,
    dtype: torch.dtype,
    args: argparse.Namespace,
    limits: dict[str, Any],
    rows: list[dict[str, Any]],
    save: Callable[[], object],
) -> None:
    """Every sampler at every M on one random problem (``cell``, n): a row each, saved as it comes."""
    gen = torch.Generator().manual_seed(n)
    P, th = random_problem(cell, n=n, d=3, T=args.T, k=2, generator=gen, dtype=dtype)
    P, th = P.to(device=device), th.to(device)
    for name in names:
        if name == "uoro-preact" and not cell.startswith("elman"):
            rows.append({"sampler": name, "cell": cell, "n": P.n, "M": 0, "skipped": "needs an Elman cell"})
            continue
        for M in [1] if name == "rtrl" else ms:
            if name == "rtrl" and n * P.p * 8 * 5 > (16 if device.type == "cuda" else 4) * 2**30:
                rows.append({"sampler": name, "cell": cell, "n": n, "M": 1, "skipped": "influence > 4 GiB"})
                continue
            t0 = time.perf_counter()
            row = measure(name, P, th, M, device, args, limits)
            row["cell"] = cell
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            save()
            print(f"  measured {name} {cell} n={n} M={M} in {row['wall_s']:.1f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
