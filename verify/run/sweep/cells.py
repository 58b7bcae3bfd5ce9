"""Cells and tasks: the unit of work of a sweep, and the functions that compute one.

A :class:`SweepCell` is a task name and its JSON parameters (claim, seed,
configuration, learning rate ...). A **task** is a registered function
``params -> JSON value`` (:func:`task`); tasks are looked up by name on the worker,
so a cell travels as two small values and any worker with the same rnn-verify
sources can run it. :func:`execute_cell` is what a worker runs: it never raises
for an error of the task -- it returns the traceback -- so that a failing cell is
reported in the sweep's report instead of being lost or retried.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.run.sweep.cache import canonical_json, cell_key, code_version
from verify.run.sweep.tasks import BUILTIN_TASKS
from verify.verdict import to_jsonable

__all__ = ["SweepCell", "TaskFn", "execute_cell", "task", "tasks"]

TaskFn = Callable[[dict[str, Any]], Any]
_TASKS: dict[str, TaskFn] = dict(BUILTIN_TASKS)


def task(name: str) -> Callable[[TaskFn], TaskFn]:
    """Decorator: register ``fn(params) -> JSON value`` as the task ``name``."""

    def deco(fn: TaskFn) -> TaskFn:
        old = _TASKS.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise InvalidArgument("task", name, f"already registered by {old.__module__}.{old.__qualname__}")
        _TASKS[name] = fn
        return fn

    return deco


def tasks() -> dict[str, TaskFn]:
    """Every registered task: the built-in ones and those registered with :func:`task`."""
    return dict(_TASKS)


@dataclass(frozen=True)
class SweepCell:
    """One unit of a sweep: ``task`` run with ``params`` (JSON: str keys, numbers, strings, lists)."""

    task: str
    params: Mapping[str, Any]
    label: str = ""
    key: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task:
            raise InvalidArgument("task", self.task, "a registered task name")
        try:
            text = canonical_json(dict(self.params))
        except (TypeError, ValueError) as exc:
            raise InvalidArgument("params", self.params, f"must be plain JSON ({exc})") from None
        object.__setattr__(self, "params", json.loads(text))  # a plain, detached copy
        object.__setattr__(self, "key", cell_key(self.task, self.params))
        if not self.label:
            object.__setattr__(self, "label", f"{self.task}({text[:120]})")


def execute_cell(name: str, params: Mapping[str, Any], threads: int | None = None) -> dict[str, Any]:
    """Run task ``name`` on ``params`` (on a worker); returns the outcome dict, never raises for the task's error.

    ``ok`` and ``value`` (plain JSON) or ``error`` (the traceback); ``wall_time``;
    ``worker`` (host:pid); ``code`` (:func:`~verify.run.sweep.cache.code_version` of the
    sources this worker runs, so the driver can refuse results of other code).
    """
    if threads:
        torch.set_num_threads(int(threads))
    worker = f"{socket.gethostname()}:{os.getpid()}"
    t0 = time.perf_counter()
    try:
        fn = tasks().get(name)
        if fn is None:
            raise InvalidArgument("task", name, f"no such task; known: {', '.join(sorted(tasks()))}")
        value = json.loads(canonical_json(to_jsonable(fn(dict(params)))))
        return {"ok": True, "value": value, "wall_time": time.perf_counter() - t0, "worker": worker,
                "code": code_version()}  # fmt: skip
    except Exception:
        return {"ok": False, "error": traceback.format_exc(), "wall_time": time.perf_counter() - t0,
                "worker": worker, "code": code_version()}  # fmt: skip
