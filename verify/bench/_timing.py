"""Shared timing helpers for the benchmark scripts."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch


def best_of(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs after ``warmup`` runs (seconds)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def machine() -> str:
    """One line naming the machine the numbers were measured on."""
    dev = "cpu"
    if torch.cuda.is_available():
        dev = f"cuda: {torch.cuda.get_device_name(0)}"
    return (
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}, device {dev}"
    )


def refuse_foreign_json(path: Path, tool: str) -> None:
    """Exit naming ``path`` if it exists and is not a JSON file written by ``tool`` (its ``"tool"`` field): a bench
    replaces only its own output."""
    if path.exists():
        try:
            ok = json.loads(path.read_text()).get("tool") == tool
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            raise SystemExit(f"refusing to overwrite {path}: not a file written by {tool}")


def median_us(fn: object, repeats: int, steps: int) -> float:
    """Microseconds per step of ``fn()`` (which runs ``steps`` steps): the median of ``repeats`` timed calls after
    one untimed warm-up call (compilation, caches)."""
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) / steps * 1e6


def route_args(doc: str | None, tool: str, samples: int, argv: list[str] | None) -> argparse.Namespace:
    """The arguments of a route benchmark (``verify.bench.jax_route``, ``verify.bench.torch_route``): ``--n``,
    ``--T``, ``--samples`` (default ``samples``), ``--repeats``, ``--json`` (a file of another tool refused)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--T", type=int, default=8)
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file (its own only)")
    a = ap.parse_args(argv)
    if a.json is not None:
        refuse_foreign_json(a.json, tool)
    return a
