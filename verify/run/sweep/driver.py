"""The sweep driver: look every cell up in the cache, run the rest on an executor, merge, report.

:func:`run_plan` is the one path every sweep takes (and ``rnn-verify run
--executor``): cells already in the cache are not run again; the others go to the
executor; each finished cell is written to the cache *as it arrives* (so an
interrupted sweep loses at most the cells that were running, and a rerun resumes
where it stopped); a worker whose sources differ from the driver's
(:func:`~verify.run.sweep.cache.code_version`) is refused; a cell that raised is kept
with its traceback (not cached: a rerun tries it again) and reported. When every
cell has an outcome the plan's ``merge`` turns the outcomes into claim results
(:class:`~verify.verdict.CheckResult`): reproductions judged by their pre-stated
criteria, calibration tables, or one result per claim.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from verify.run.sweep.cache import CellCache, code_version
from verify.run.sweep.cells import SweepCell
from verify.run.sweep.executors import Executor
from verify.verdict import CheckResult

__all__ = ["CellOutcome", "SweepPlan", "SweepRun", "run_plan"]


@dataclass(frozen=True)
class CellOutcome:
    """What became of one cell: its value (``ok``) or its error (the traceback), and where it came from."""

    cell: SweepCell
    ok: bool
    value: Any = None
    error: str = ""
    wall_time: float = 0.0
    worker: str = ""
    cached: bool = False

    def row(self) -> dict[str, Any]:
        return {
            "key": self.cell.key,
            "task": self.cell.task,
            "label": self.cell.label,
            "ok": self.ok,
            "cached": self.cached,
            "wall_time": self.wall_time,
            "worker": self.worker,
            "error": self.error or None,
        }


Merge = Callable[[Mapping[str, CellOutcome]], list[CheckResult]]


@dataclass(frozen=True)
class SweepPlan:
    """A sweep made concrete: its cells and how to merge their outcomes into claim results."""

    name: str
    cells: tuple[SweepCell, ...]
    merge: Merge
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepRun:
    """The merged results of a sweep and what it took."""

    plan: SweepPlan
    results: list[CheckResult]
    outcomes: dict[str, CellOutcome]
    computed: int
    cached: int
    failed: int
    wall_time: float
    executor: str

    def stats(self) -> dict[str, Any]:
        cpu = sum(o.wall_time for o in self.outcomes.values() if not o.cached)
        return {
            "name": self.plan.name,
            "cells": len(self.outcomes),
            "computed": self.computed,
            "cached": self.cached,
            "failed": self.failed,
            "executor": self.executor,
            "wall_time": self.wall_time,
            "cell_seconds_computed": cpu,
            "code_version": code_version(),
            "settings": self.plan.settings,
        }


class SweepProgress:
    """``[done/total] computed c, cached h, failed f, 12s elapsed, ~40s left`` lines on ``stream``.

    One line at most every ``interval`` seconds (and one at the end); a failed cell
    is announced at once with the first line of its error.
    """

    def __init__(self, total: int, stream: TextIO | None = None, interval: float = 5.0, quiet: bool = False) -> None:
        self.total, self.stream, self.interval, self.quiet = total, stream or sys.stderr, interval, quiet
        self.done = self.computed = self.cached = self.failed = 0
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.lock = threading.Lock()

    def line(self) -> str:
        el = time.perf_counter() - self.t0
        rate = self.computed / el if el > 0 and self.computed else 0.0
        left = (self.total - self.done) / rate if rate else float("nan")
        eta = f", ~{left:.0f}s left" if left == left else ""
        return (
            f"[{self.done}/{self.total}] computed {self.computed}, cached {self.cached}, failed {self.failed}, "
            f"{el:.0f}s elapsed{eta}"
        )

    def __call__(self, out: CellOutcome) -> None:
        with self.lock:
            self.done += 1
            self.cached += out.cached
            self.computed += not out.cached and out.ok
            self.failed += not out.ok
            if self.quiet:
                return
            now = time.perf_counter()
            if not out.ok:
                first = (out.error.strip().splitlines() or [""])[-1]
                print(f"  FAILED cell {out.cell.label}: {first}", file=self.stream, flush=True)
            if now - self.last >= self.interval or self.done == self.total:
                self.last = now
                print(self.line(), file=self.stream, flush=True)


def run_plan(
    plan: SweepPlan,
    executor: Executor,
    cache: CellCache | None = None,
    progress: Callable[[CellOutcome], None] | None = None,
    *,
    on_start: Callable[[int, int], None] | None = None,
) -> SweepRun:
    """Run ``plan``'s cells (cached ones are looked up, not run), then merge. See the module docstring."""
    t0 = time.perf_counter()
    code = code_version()
    outcomes: dict[str, CellOutcome] = {}
    todo: list[SweepCell] = []
    seen: set[str] = set()
    for cell in plan.cells:
        if cell.key in seen:
            continue
        seen.add(cell.key)
        hit = cache.get(cell.key, cell.task, cell.params) if cache is not None else None
        if hit is not None:
            outcomes[cell.key] = CellOutcome(cell, True, hit.value, "", hit.wall_time, hit.worker, cached=True)
        else:
            todo.append(cell)
    if on_start is not None:
        on_start(len(seen), len(todo))
    if progress is not None:
        for o in list(outcomes.values()):
            progress(o)
    computed = failed = 0
    if todo:
        for cell, raw in executor.map_unordered(todo):
            out = _outcome(cell, raw, code)
            if out.ok:
                computed += 1
                if cache is not None:
                    cache.put(cell.key, cell.task, cell.params, out.value, out.wall_time, out.worker)
            else:
                failed += 1
            outcomes[cell.key] = out
            if progress is not None:
                progress(out)
    results = plan.merge(outcomes)
    return SweepRun(
        plan, results, outcomes, computed, len(seen) - len(todo), failed, time.perf_counter() - t0, executor.describe()
    )


def _outcome(cell: SweepCell, raw: Mapping[str, Any], code: str) -> CellOutcome:
    wall = float(raw.get("wall_time") or 0.0)
    worker = str(raw.get("worker") or "")
    if not raw.get("ok"):
        return CellOutcome(cell, False, None, str(raw.get("error") or "unknown error"), wall, worker)
    if raw.get("code") != code:
        return CellOutcome(
            cell, False, None,
            f"the worker {worker} runs rnn-verify sources {raw.get('code')!r}, the driver {code!r}: its result is "
            "refused (install the same rnn-verify on every worker)",
            wall, worker,
        )  # fmt: skip
    return CellOutcome(cell, True, raw.get("value"), "", wall, worker)


def failed_cells_text(outcomes: Sequence[CellOutcome], limit: int = 20) -> str:
    """The failed cells and their tracebacks, for a result's ``reason``."""
    bad = [o for o in outcomes if not o.ok]
    parts = [f"{len(bad)} cell(s) failed:"]
    for o in bad[:limit]:
        parts.append(f"--- {o.cell.label} (worker {o.worker or '?'})\n{o.error.rstrip()}")
    if len(bad) > limit:
        parts.append(f"... and {len(bad) - limit} more")
    return "\n".join(parts)
