"""Batch-1 overhead of the online runs: per-step time of the fast path vs the generic path, same run.

``python -m verify.bench.online [--ns 16 64] [--steps 64] [--device cpu|cuda] [--threads N] [--json PATH]``

For each state size n (Elman-tanh, d = 3, k = 2), the online mode of
:func:`verify.estimators.run_online` (θ updated after every step, batch 1, M = 1: what
``rtrl.online-convergence`` runs) with RTRL, truncated BPTT (k = 8) and the truncated model
(k = 8), and UORO's single-sample step, each on its fast path (``path="auto"``: the structured
kernels of :mod:`verify.estimators.kernels`, no autograd graph) and on the generic autograd path
(``path="generic"``, the code before issue 15) -- the "before / after" of the issue, measured in
the same process. Also the FPP learners of :mod:`verify.fpp.online` (FPP and online T-BPTT, one
run), which keep their ``torch.func`` implementation (reported for reference, not changed).

Per row: milliseconds per step (median over ``--repeats`` passes), the speed-up, and for RTRL the
time of its O(n²p) product alone (the work) as a share of the step (the rest is dispatch). A second
table times RTRL's step alone: eager fast path, CUDA-graph replay (:mod:`verify.estimators.graphs`;
CUDA only, "off" elsewhere), generic, and the product's share of the best of them.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from verify.bench._timing import machine, refuse_foreign_json
from verify.estimators import RTRL, TBPTT, UORO, RobbinsMonroSGD, TruncatedModel, run_online
from verify.estimators.graphs import GraphedStep
from verify.files import write_file_atomic
from verify.fpp.online import OnlineConfig, model_problem
from verify.fpp.online import run_online as fpp_run
from verify.model.builders import random_problem

TOOL = "verify.bench.online"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _per_step(fn: Callable[[], object], steps: int, repeats: int, device: torch.device) -> float:
    fn()
    _sync(device)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        out.append((time.perf_counter() - t0) / steps)
    return statistics.median(out)


def _online(est: Any, P: Any, th: torch.Tensor, opt: Any, device: torch.device) -> object:
    return run_online(est, P, th, opt, torch.Generator(device=device).manual_seed(0))


def _steps(step: Callable[..., Any], P: Any, th: torch.Tensor, st: Any, g: torch.Generator) -> None:
    for t in range(1, P.T + 1):
        st, _ = step(P, th, st, t, g)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--fpp", action="store_true", help="also time the FPP learners (verify.fpp.online)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {args.device}: SKIPPED: no CUDA device on this machine")
        return {"skipped": "no CUDA"}
    device = torch.device(args.device)
    print(f"machine: {machine()}; device {device}")
    rows: list[dict[str, Any]] = []
    print(f"{'estimator':22s} {'n':>4s} {'fast ms/step':>13s} {'generic ms/step':>16s} {'speed-up':>9s}  note")
    for n in args.ns:
        P, th = random_problem("elman-tanh", n=n, d=3, T=args.steps, k=2, generator=torch.Generator().manual_seed(n))
        P, th = P.to(device=device), th.to(device)
        opt = RobbinsMonroSGD(lr=0.01)
        for make in (
            lambda path: RTRL(path=path),
            lambda path: TBPTT(8, path=path),
            lambda path: TruncatedModel(8, path=path),
            lambda path: UORO(path=path),
        ):
            rows.append(_online_row(make, n, P, th, opt, device, args.repeats))
    # RTRL's step alone (no online loop): eager fast path, CUDA-graph replay (CUDA only), generic; the product's share
    print(
        f"{'RTRL step only':22s} {'n':>4s} {'fast ms':>8s} {'graphed ms':>11s} {'generic ms':>11s} "
        f"{'product ms':>11s}  work share"
    )
    for n in args.ns:
        rows.append(_rtrl_step_row(n, device, args))
    if args.fpp:
        for n in args.ns:
            rows.extend(_fpp_rows(n, args))
    result = {"tool": TOOL, "machine": machine(), "device": str(device), "rows": rows}
    if args.json:
        out_path = Path(args.json)
        refuse_foreign_json(out_path, TOOL)
        write_file_atomic(out_path, json.dumps(result, indent=1).encode("utf-8"))
        print(f"wrote {out_path}")
    return result


def _online_row(
    make: Callable[[str], Any], n: int, P: Any, th: torch.Tensor, opt: Any, device: torch.device, repeats: int
) -> dict[str, Any]:
    """One estimator's online run, fast path vs generic path (RTRL: and its O(n²p) product alone); printed."""
    times = {}
    for path in ("auto", "generic"):
        go = functools.partial(_online, make(path), P, th, opt, device)
        times[path] = _per_step(go, P.T, repeats, device)
    name = make("auto").name
    row: dict[str, Any] = {
        "estimator": name,
        "n": n,
        "fast_ms": 1e3 * times["auto"],
        "generic_ms": 1e3 * times["generic"],
        "speedup": times["generic"] / times["auto"],
    }
    note = ""
    if name == "rtrl":
        J = torch.randn(1, n, P.p, dtype=P.dtype, device=device)
        Js = torch.randn(1, n, n, dtype=P.dtype, device=device)
        t_prod = _per_step(functools.partial(torch.bmm, Js, J), 1, 5 * repeats, device)
        row["product_ms"] = 1e3 * t_prod
        row["work_share"] = t_prod / times["auto"]
        note = f"O(n^2 p) product {1e3 * t_prod:.3f} ms = {row['work_share']:.0%} of the fast step"
    print(f"{name:22s} {n:4d} {row['fast_ms']:13.3f} {row['generic_ms']:16.3f} {row['speedup']:9.1f}  {note}")
    return row


def _rtrl_step_row(n: int, device: torch.device, args: argparse.Namespace) -> dict[str, Any]:
    """RTRL's step alone at state size n: eager fast path, CUDA-graph replay, generic, the product; printed."""
    P, th = random_problem("elman-tanh", n=n, d=3, T=args.steps, k=2, generator=torch.Generator().manual_seed(n))
    P, th = P.to(device=device), th.to(device)
    g = torch.Generator(device=device)
    res: dict[str, float] = {}
    for label, est in (("fast", RTRL()), ("generic", RTRL(path="generic"))):
        loop = functools.partial(_steps, est.step, P, th, est.init(P, th, g), g)
        res[label] = _per_step(loop, P.T, args.repeats, device)
    gs = GraphedStep(RTRL(), P, th)
    if gs.enabled:
        loop = functools.partial(_steps, gs.step, P, th, RTRL().init(P, th, g), g)
        res["graphed"] = _per_step(loop, P.T, args.repeats, device)
    J = torch.randn(1, n, P.p, dtype=P.dtype, device=device)
    Js = torch.randn(1, n, n, dtype=P.dtype, device=device)
    res["product"] = _per_step(functools.partial(torch.bmm, Js, J), 1, 5 * args.repeats, device)
    best = min(res["fast"], res.get("graphed", float("inf")))
    row: dict[str, Any] = {"estimator": "rtrl-step", "n": n, **{f"{k}_ms": 1e3 * v for k, v in res.items()}}
    row["work_share"] = res["product"] / best
    row["graphs"] = gs.enabled or gs.reason
    gr = f"{1e3 * res['graphed']:11.3f}" if "graphed" in res else f"{'off':>11s}"
    print(
        f"{'rtrl-step':22s} {n:4d} {1e3 * res['fast']:8.3f} {gr} {1e3 * res['generic']:11.3f} "
        f"{1e3 * res['product']:11.4f}  {row['work_share']:.0%}"
    )
    return row


def _fpp_rows(n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The FPP learners of :mod:`verify.fpp.online` (FPP and online T-BPTT) at state size n; printed."""
    rows: list[dict[str, Any]] = []
    P, th = random_problem("elman-tanh", n=n, d=3, T=2, k=2, generator=torch.Generator().manual_seed(n))
    model = model_problem(P.cell, P.readout, P.loss)
    cfg = OnlineConfig(T=4, buffer_size=32)
    x = torch.randn(1, args.steps, 3, dtype=torch.float64)
    y = torch.randn(1, args.steps, 2, dtype=torch.float64)
    for method in ("fpp", "tbptt"):
        run = functools.partial(
            fpp_run, method, model, cfg, x, y, th[None], torch.tensor([0.01]), torch.Generator().manual_seed(0)
        )
        t = _per_step(run, args.steps, args.repeats, torch.device("cpu"))
        rows.append({"estimator": f"fpp-learner-{method}", "n": n, "fast_ms": 1e3 * t})
        name = f"fpp-learner-{method}"
        print(f"{name:22s} {n:4d} {1e3 * t:13.3f} {'-':>16s} {'-':>9s}  unchanged (torch.func)")
    return rows


if __name__ == "__main__":
    main()
