"""Shared timing helpers for the benchmark scripts."""

from __future__ import annotations

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
