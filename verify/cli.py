"""Command-line interface ``rnn-verify`` (also ``python -m verify``).

Commands::

    rnn-verify list    [--profile P] [--claims ID ...] [-k EXPR] [--json | --markdown]
    rnn-verify explain CLAIM
    rnn-verify run     [--profile ci|full] [--claims ID|GLOB ...] [-k EXPR] [--lf] [-x | --maxfail N]
                       [-v] [--color auto|yes|no] [--seed N] [--device cpu|cuda|auto]
                       [--strict-device] [--dtype float64|float32] [--out DIR | --no-report]
                       [--json [FILE]] [--junit FILE] [--fail-on fail|inconclusive] [--workers N] [--quiet]
                       [--executor auto|serial|process|dask[=ADDRESS]]
                       [--impl FAMILY=SPEC ...] [--impl-only] [--plan]
    rnn-verify sweep   NAME [--scale paper|full|ci] [--seed N] [--seeds N] [--claims ID ...] [--profile ci|full]
                       [--executor auto|serial|process|dask[=ADDRESS]] [--workers N] [--threads N] [--split-lrs]
                       [--cache DIR | --no-cache] [--out DIR | --no-report] [--json FILE] [--fail-on ...] [--quiet]
    rnn-verify sweep   --list
    rnn-verify report  RESULTS [--out DIR] [--junit FILE] [--fail-on ...] [--no-digest-check]
    rnn-verify golden  [--out FILE.npz] [--seed N] [--k K ...]
    rnn-verify golden  --check FILE.npz|FILE.json
    rnn-verify golden  --check MINE.npz --reference FILE.npz|FILE.json

``--help``, ``list`` and ``explain`` are answered by :mod:`verify.cli_front` without importing torch (the parser
is :mod:`verify.cli_parser`, the selection ``--claims``/``-k``/``--lf`` :mod:`verify.selection`, the verdict lines
:mod:`verify.cli_lines`); this module holds the commands that compute.

Exit codes, per command: :mod:`verify.exit_codes` (printed by every ``--help``). 0 only when every
selected claim ran and none FAILed; 1 a FAIL (or an INCONCLUSIVE under ``--fail-on inconclusive``; ``report``:
the saved run has one; ``golden --check``: a quantity that does not verify); 2 usage or input error (unknown
claim, ``--seed`` outside [0, MAX_SEED], an output folder that is not rnn-verify's, unwritable output, a
malformed or mismatched input file -- the message names the file and the field --, ``--device cuda
--strict-device`` without CUDA, a count beyond its bound, one path given for two outputs, a name longer than the
file system takes), or an ``--impl`` that does not load (whatever it raises, ``sys.exit()`` included);
130/143/129 a signal delivered to rnn-verify (interrupted, terminated, hung up: the previous report is left as it
was, worker and figure processes are stopped). Code under test never sets the exit status (:mod:`verify.stop`).

``run`` writes a report folder (default ``reports/runs/<timestamp>-<profile>``):
``results.json``, ``report.md``, ``report.html``, ``junit.xml``, ``figures/`` and
the marker ``.rnn-verify-report`` (the manifest of what it wrote). It writes only
into a new or empty folder or one that carries the marker, replaces only the files
the manifest lists and keeps (and names) anything else found there; a non-empty
folder without the marker -- one holding ``results.json`` included -- is refused
(exit 2). ``report RESULTS`` without ``--out`` writes beside RESULTS only when that
folder is a report folder. ``report`` checks what it reads before it renders: every verdict it can recompute
from the stored statistic, threshold, comparison and controls, the counts and ``run.exit_code``
(:func:`verify.schema.verify_results`; an inconsistent file is exit 2 naming the field, e.g.
``claims[3].verdict``), and the SHA-256 of ``results.json`` that the folder's marker recorded when rnn-verify
wrote it (a mismatch is exit 2: that digest detects accidental edits, it is no signature; ``--no-digest-check``
for a file edited on purpose; no digest recorded: a note). A report folder is locked while it is written
(:func:`verify.files.output_lock`): a second run into it exits 2 naming the holder's pid, host, start and
command. An OS error while writing (a full disk) is exit 2 naming the path; the staging folder is removed and
the previous report left as it was. All output locations are checked before any compute,
and every file read is validated before anything is written
(:mod:`verify.schema`). ``--workers`` is capped at the CPUs available (with a
note) and at the number of claims to run; the workers are the sweep machinery's
local process pool, ``--executor dask[=ADDRESS]`` runs the claims on Dask instead.
``sweep NAME`` runs a named sweep (:mod:`verify.run.sweep.definitions`: the papers'
reproductions at their settings, calibration over seeds, claim runs) as cells on
an executor -- by default a Dask ``LocalCluster`` on the loopback interface where
Dask is installed, a process pool otherwise -- with every finished cell cached by
content in ``--cache`` (default ``$XDG_CACHE_HOME/rnn-verify/cells``, a folder
rnn-verify creates and marks): a rerun resumes and computes only what is missing. On a terminal a live status line shows
the running claims; otherwise (CI logs) a ``[k/N] running <claim> 12s`` line is
printed every ~10 s.

Bounds, each refused (exit 2) with its reason: ``--workers`` at most
:data:`~verify.run.sweep.executors.MAX_WORKERS` (1024: each worker is a process with
its own torch import), ``--threads`` at most 1024, ``sweep --seeds`` at most
:data:`~verify.run.sweep.definitions.MAX_SEEDS` (100 000) and claims x seeds at most
1 000 000 cells, ``--seed`` in [0, MAX_SEED] for every command and the API alike, an
integer in a file read back at most 309 digits (:mod:`verify.schema`), a path
argument at most 255 bytes per name and 4096 in all (:data:`NAME_MAX`,
:data:`PATH_MAX`). ``--json``, ``--junit`` and ``--out`` must name different places
(an output file inside the report folder is refused too). A Dask sweep's scratch
space is a temporary folder of rnn-verify's, removed when the executor closes.

``run --impl FAMILY=SPEC`` (repeatable) runs the claims against *your*
implementation: ``SPEC`` is ``module.path:Name`` or ``path/to/file.py:name``
(:mod:`verify.impl.loader`; ``FAMILY`` is ``reference``, ``rtrl``, ``truncation``
(alias ``tbptt``), ``uoro``, ``fpp``, ``device`` or a ``family.field``). It is loaded
and put through the estimator contract before any claim runs; a bad spec is exit 2
naming it. The report header, ``results.json`` (``run.implementations``) and every
claim (``implementation``) name what was under test, with the file and its SHA-256.
Claims that exercise none of the given parts run on the toolkit's own
implementations, or, with ``--impl-only``, are left out (a note says how many;
``run.impl_only_left_out`` lists them). With ``--workers N`` or ``--executor`` every
worker process loads the specs again (from the run's folder and ``sys.path``, without
the probe, which ran once here); one that does not load there, or loads a file whose
SHA-256 differs, FAILs the claims it ran with that reason.

``run --plan`` runs nothing and writes nothing: per selected claim it prints the kind,
the draws and the estimated seconds with their basis -- *measured* by a pilot of at
most ~1 s of the implementation under test where the check registered a planner (the
statistical UORO claims: the draws the sample-size planner asks for), else *recorded*
for the toolkit's implementation (:mod:`verify.run.plan`) -- and a total; ``--json -``
prints it as JSON. Exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import json
import multiprocessing
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from theory.catalog import GATE_ALPHA, Claim, all_claims, gate_budget
from verify import stop
from verify._validate import MAX_SEED, validate_seed
from verify.checks import ClaimPlan, uses
from verify.checks import device as device_checks
from verify.cli_front import STOPS, Backend, Command, os_error_text, selected
from verify.cli_front import main as front_main
from verify.cli_front import stopped as _stopped
from verify.cli_lines import LINE_WIDTH, colored, shorten, use_color, verdict_line
from verify.cli_parser import DEFAULT_RUNS, DEFAULT_SWEEPS, build_parser
from verify.config import RunConfig
from verify.errors import InvalidArgument, InvalidFile, VerifyError
from verify.exit_codes import EXIT_FAIL, EXIT_OK
from verify.files import (
    output_lock,
    read_marker,
    recorded_digest,
    sha256_hex,
    write_file_atomic,
    write_files_atomic,
)
from verify.hardware import NO_CUDA_REASON, resolve_device
from verify.impl import FAMILIES as IMPL_FAMILIES
from verify.impl.loader import ALIASES as IMPL_ALIASES
from verify.oracles import golden, golden_user
from verify.report import (
    MARKER,
    claim_png_jobs,
    claim_record,
    dumps_document,
    foreign_entries,
    is_report_folder,
    preflight_dir,
    preflight_file,
    render_junit,
    render_png,
    rerun_command,
    run_document,
    write_report,
)
from verify.report.document import read_document, results_file
from verify.report.figures import normalize_figure
from verify.run.catalog import claim_time_limit, run_claims
from verify.run.check import THREADS_PER_PROCESS, claim_params, select_claims
from verify.run.plan import TIMEOUT_FACTOR, TIMEOUT_FLOOR_S, plan_claims, plan_document, plan_table
from verify.run.pool import IsolatedPool
from verify.run.sweep import CellCache, SweepOptions, SweepProgress, definitions, make_executor, run_plan
from verify.run.sweep.cells import SweepCell
from verify.run.sweep.driver import CellOutcome, SweepPlan, SweepRun, failed_cells_text
from verify.run.sweep.executors import (
    MAX_THREADS,
    MAX_WORKERS,
    THREADS_WHY,
    WORKERS_WHY,
    Executor,
    available_cpus,
    check_count,
    dask_available,
    parse_executor,
    stop_processes,
)
from verify.schema import ResultsDocument
from verify.selection import last_failed_path, read_last_failed, update_last_failed
from verify.text import clean, safe_str
from verify.verdict import CheckResult, Verdict, finding_line

_BACKGROUND_PNG_MIN_CLAIMS = 6
#: seconds between two progress lines when stderr is not a terminal (CI logs)
PROGRESS_INTERVAL_S = 10.0
#: seconds between the progress lines under ``--quiet`` (not on a terminal): a claim that runs long is seen
QUIET_PROGRESS_INTERVAL_S = 60.0
#: every folder rnn-verify writes into by default, relative to the current folder (each is git-ignored, tested)
DEFAULT_OUTPUT_DIRS = (DEFAULT_RUNS, DEFAULT_SWEEPS)


# ---------------------------------------------------------------- progress
class _Progress:
    """Per-claim verdict lines, and what is running now on stderr.

    On a terminal: a live ``\\r`` status line, redrawn every 0.5 s. Otherwise (a CI
    log, a pipe): one line ``[k/N] running <claim> 12s`` every ``interval`` seconds
    (default :data:`PROGRESS_INTERVAL_S`; with ``--quiet`` :data:`QUIET_PROGRESS_INTERVAL_S`, so that only a
    claim running over a minute shows) while a claim runs, so that a log shows life.
    """

    def __init__(
        self,
        total: int,
        stream: TextIO,
        quiet: bool,
        *,
        interval: float | None = None,
        tty: bool | None = None,
        order: Sequence[str] = (),
        verbose: bool = False,
        color: bool = False,
    ) -> None:
        self.total, self.stream, self.quiet = total, stream, quiet
        self.verbose, self.color = verbose, color
        #: the claims in catalog order: a verdict line waits for those of the claims before it (parallel runs)
        self.order, self.next, self.ready = list(order), 0, dict[str, str]()
        tty = sys.stderr.isatty() if tty is None else tty
        self.live = tty and not quiet
        self.periodic = not tty  # under --quiet too, but rarely: a CI log must show that a long claim is alive
        self.interval = (QUIET_PROGRESS_INTERVAL_S if quiet else PROGRESS_INTERVAL_S) if interval is None else interval
        self.done = 0
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if self.live or self.periodic:
            self.thread = threading.Thread(
                target=self._tick, daemon=True, name="rnn-verify-progress"
            )  # spawn.THREAD_PREFIX
            self.thread.start()

    def _tick(self) -> None:
        while not self.stop.wait(0.5 if self.live else self.interval):
            if self.live:
                self._draw()
            else:
                self._line()

    def _status(self) -> str:
        now = time.perf_counter()
        cur = ", ".join(f"{cid} {now - t0:.0f}s" for cid, t0 in self.running.items())
        return f"[{self.done}/{self.total}] running {cur}"

    def _draw(self) -> None:
        with self.lock:
            if not self.running:
                return
            sys.stderr.write("\r\033[K" + self._status()[:200])
            sys.stderr.flush()

    def _line(self) -> None:
        with self.lock:
            if not self.running or self.stop.is_set():
                return
            sys.stderr.write(self._status()[:400] + " ...\n")
            sys.stderr.flush()

    def __call__(self, event: str, claim: Claim, result: CheckResult | None) -> None:
        if event == "start":
            with self.lock:
                self.running[claim.id] = time.perf_counter()
            if self.live:
                self._draw()
            return
        assert result is not None
        with self.lock:
            self.running.pop(claim.id, None)
            self.done += 1
            if self.live:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            if not self.quiet:
                self.ready[claim.id] = verdict_line(
                    result.verdict.value, claim.id, result.summary, result.wall_time, result.samples_used,
                    verbose=self.verbose, color=self.color,
                )  # fmt: skip
                self._print_ready(claim.id)

    def _print_ready(self, claim_id: str) -> None:
        """Print the verdict lines that are due: in catalog order (``order``), else as they come."""
        if claim_id not in self.order:
            print(self.ready.pop(claim_id), file=self.stream, flush=True)
        while self.next < len(self.order) and self.order[self.next] in self.ready:
            print(self.ready.pop(self.order[self.next]), file=self.stream, flush=True)
            self.next += 1

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=1)
        if self.live:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# ------------------------------------------------------------ background PNGs
def _renderer_init() -> None:
    """The figure process: Ctrl-C is the parent's business; yield the CPU to the checks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop.die_with_parent()  # a killed rnn-verify (kill -9) takes its figure process with it
    if hasattr(os, "nice"):
        os.nice(10)


def _warm_up() -> None:
    """The figure process's imports, done while the first check runs (torch and the report code come with
    this module; matplotlib is imported only here and where a figure is drawn)."""
    from matplotlib.backends import backend_agg  # noqa: F401


class _BackgroundPNGs:
    """Draws each claim's figures in one low-priority process while the next checks run.

    Drawing is matplotlib-bound (about 0.3-1 s a figure); done at the end it would add
    up to the run's wall time. Any figure that fails here is simply drawn again, in
    this process, when the report is written.
    """

    def __init__(self) -> None:
        self.pool = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_renderer_init
        )
        self.futures: dict[str, Future[bytes]] = {}
        with stop.blocked_interrupts():  # a Ctrl-C while it starts is this process's, never its traceback
            self.pool.submit(_warm_up)  # start the process (imports) while the first check runs

    def submit(self, jobs: dict[str, dict[str, object]]) -> None:
        for key, fig in jobs.items():
            self.futures[key] = self.pool.submit(render_png, fig)

    def collect(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for key, fut in self.futures.items():
            try:
                out[key] = fut.result()
            except Exception:  # drawn again in the foreground by write_report
                continue
        self.close()
        return out

    def close(self, terminate: bool = False) -> None:
        """Shut the pool down; ``terminate=True`` (on an interruption) also stops the process now and reaps it."""
        procs = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        if terminate:
            stop_processes(procs)


# ----------------------------------------------------------------------- run
def _default_out(profile: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = DEFAULT_RUNS / f"{stamp}-{profile}"
    out, i = base, 1
    while out.exists():
        i += 1
        out = base.with_name(f"{base.name}-{i}")
    return out


def _cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    _check_run_args(args)
    out, junit, json_file = (None, None, None) if args.plan else _run_outputs(args)  # absolute, checked first
    workers = _run_workers(args)
    pool: IsolatedPool | None = None
    with contextlib.ExitStack() as held:
        if out is not None:  # a second run into the same folder is refused (exit 2, naming this one) until we end
            held.enter_context(output_lock(out, "--out", command="rnn-verify " + shlex.join(argv)))
        try:
            impls = None
            if args.impl:  # loaded and checked in a worker process before anything else runs: a bad spec is exit 2
                pool = IsolatedPool(workers, THREADS_PER_PROCESS)
                impls = _load_isolated(pool, args)
            return _run_selected(args, argv, impls, pool, workers, (out, junit, json_file))
        finally:
            if pool is not None:
                pool.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _load_isolated(pool: IsolatedPool, args: argparse.Namespace) -> _Loaded:
    """The ``--impl`` specs loaded and put through the estimator contract in a worker process of ``pool``.

    Whatever the user's module does at import or in the load check -- raise, ``sys.exit``, ``os._exit``, a
    signal, a hang -- is a usage error naming the ``--impl`` (exit 2), decided here, where none of it runs.
    """
    # the worker runs in this folder (relative file specs are read from it and named as the user typed them)
    params = {"specs": list(args.impl), "path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path]}
    limit = LOAD_TIMEOUT_S if args.timeout is None else (args.timeout or None)
    outcome = pool.call("impl.load", params, timeout=limit)
    value = outcome.get("value") if outcome.get("ok") else None
    given = ", ".join(args.impl)
    if isinstance(value, dict) and "error" in value:
        raise _Refused(str(value["error"]))
    if not isinstance(value, dict) or not isinstance(value.get("sources"), list):
        why = str(outcome.get("summary") or "").strip() or (
            str(outcome.get("error") or "no answer").strip().splitlines() or ["no answer"])[-1]  # fmt: skip
        raise InvalidArgument("--impl", given, f"could not be loaded: {why} (while importing it and running the "
                              "load check, in a worker process)")  # fmt: skip
    return _Loaded(tuple(str(p) for p in value.get("user_parts") or ()),
                   tuple(dict(s) for s in value["sources"] if isinstance(s, dict)))  # fmt: skip


def _run_selected(
    args: argparse.Namespace,
    argv: Sequence[str],
    impls: _Loaded | None,
    pool: IsolatedPool | None,
    workers: int,
    outputs: tuple[Path | None, Path | None, Path | None],
) -> int:
    """``run`` once the implementations under test (if any) are loaded: select, plan or run, write, decide."""
    claims, skip, left_out = _select_run_claims(args, impls)
    device = _run_device(args, claims, skip)
    if args.plan:
        return _cmd_plan(args, argv, claims, skip, device, impls, workers, pool)
    # a background figure process costs a torch import (a few s of CPU): worth it for long runs only
    n_run = sum(c.id not in skip for c in claims)
    workers = max(1, min(workers, n_run))  # never more processes than claims to run
    out, junit, json_file = outputs
    to_stdout = args.json == "-"
    config = _run_config(args, device, impls)
    stream = sys.stderr if to_stdout else sys.stdout
    color = use_color(args.color, stream)
    progress = _Progress(
        len(claims), stream, args.quiet, order=[c.id for c in claims], verbose=args.verbose, color=color
    )
    record_of = _claim_recorder(args, claims)
    records_by_id: dict[str, dict[str, object]] = {}
    executor: Executor | None = None
    pngs: _BackgroundPNGs | None = None

    def on_event(event: str, claim: Claim, result: CheckResult | None) -> None:
        progress(event, claim, result)
        if event == "done" and result is not None:
            rec = records_by_id[claim.id] = record_of(result)
            if pngs is not None:
                pngs.submit(claim_png_jobs(rec))

    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    try:  # from the executor's start on: whatever stops the run stops the executor and the figure process too
        executor = _run_executor(args, workers)
        if executor is None and pool is not None:  # a user's code: its claims run in the pool that loaded it
            pool.workers = workers
            pool.timeout_for = _pool_limits(claims, config)
            executor = pool
        pngs = _BackgroundPNGs() if out is not None and n_run >= _BACKGROUND_PNG_MIN_CLAIMS else None
        results = run_claims(
            claims, config, on_event, workers=workers, skip=skip, executor=executor, maxfail=args.maxfail
        )
    except BaseException as exc:
        _stop_run(progress, executor, pngs)
        if not isinstance(exc, STOPS):
            raise
        return _run_stopped(exc, out, workers, pngs)
    progress.close()
    if executor is not None and executor is not pool:
        executor.close()
    records = [records_by_id.get(r.claim_id) or record_of(r) for r in results]
    counts = {v: sum(r.verdict is v for r in results) for v in Verdict}
    # the chance that this selection FAILs a correct implementation, as the claims state it (Bonferroni)
    stated_rate = gate_budget(args.profile, ids={r.claim_id for r in results if r.verdict is not Verdict.SKIPPED})[0]
    code = _gate_code(_exit_code(counts, args.fail_on), results, impls)
    info = _run_info(args, argv, device, workers, executor, started, t0, code, stated_rate, impls, left_out)
    doc = run_document(records, info)
    stopped = _write_run_outputs(out, doc, args.fail_on, junit, json_file, pngs)
    if stopped is not None:
        return stopped
    _record_last_failed(results, args.fail_on, out)
    if to_stdout:
        sys.stdout.write(dumps_document(doc))
    _print_run_summary(results, counts, stated_rate, time.perf_counter() - t0, stream, color, args.verbose)
    if out is not None:
        _note_foreign(out, foreign_entries(out))
        print(f"report: {clean(str(out / 'report.html'))}", file=stream)
    return code


class _Refused(VerifyError):
    """A usage error a worker process worded (an ``--impl`` that does not load): the message as it is."""


@dataclasses.dataclass(frozen=True)
class _Loaded:
    """What the supervisor knows of a user's implementations loaded in a worker: the ``family.field`` parts
    they fill and their ``run.implementations`` records (spec, module, file, SHA-256) -- never the objects."""

    parts: tuple[str, ...]
    sources: tuple[dict[str, Any], ...]

    def user_parts(self) -> tuple[str, ...]:
        return self.parts


#: seconds the load check of ``--impl`` may take by default (an import and a few steps on a tiny problem)
LOAD_TIMEOUT_S = 600.0


def _run_config(args: argparse.Namespace, device: str, impls: _Loaded | None) -> RunConfig:
    """The run's configuration; a user's implementations travel as their specs and sources (to the workers)."""
    return RunConfig(
        profile=args.profile, seed=args.seed, device=device, dtype=args.dtype, impl_specs=tuple(args.impl),
        impl_sources=impls.sources if impls is not None else (), timeout=args.timeout,
    )  # fmt: skip


def _pool_limits(claims: Sequence[Claim], config: RunConfig) -> Callable[[SweepCell], float | None]:
    """Each ``claim`` cell's time limit (:func:`verify.run.catalog.claim_time_limit`)."""
    ids = {c.id for c in claims}

    def limit(cell: SweepCell) -> float | None:
        cid = str(cell.params.get("claim"))
        return claim_time_limit(config, cid) if cid in ids else None

    return limit


def _cmd_plan(
    args: argparse.Namespace,
    argv: Sequence[str],
    claims: Sequence[Claim],
    skip: dict[str, str],
    device: str,
    impls: _Loaded | None,
    workers: int,
    pool: IsolatedPool | None,
) -> int:
    """``run --plan``: the plan of every selected claim (pilots of at most ~1 s each), as a table or JSON; writes
    nothing. A user's implementation is piloted in a worker process of ``pool``."""
    config = _run_config(args, device, impls)
    t0 = time.perf_counter()
    plans = plan_claims(claims, config, skip) if pool is None else _plan_isolated(pool, claims, config, skip)
    kinds = {c.id: c.kind for c in claims}
    n_run = max(1, sum(c.id not in skip for c in claims))
    if args.json == "-":
        info = {"command": "rnn-verify " + shlex.join(argv), "profile": args.profile, "seed": args.seed,
                "device": device, "workers": min(workers, n_run), "plan_wall_time": time.perf_counter() - t0,
                **({"implementations": list(impls.sources)} if impls is not None else {})}  # fmt: skip
        sys.stdout.write(json.dumps(plan_document(plans, kinds, info), indent=2, allow_nan=False) + "\n")
    else:
        print(plan_table(plans, kinds, min(workers, n_run)))
        print(f"plan made in {time.perf_counter() - t0:.1f}s; nothing was run or written")
    return EXIT_OK


def _plan_isolated(
    pool: IsolatedPool, claims: Sequence[Claim], config: RunConfig, skip: dict[str, str]
) -> list[ClaimPlan]:
    """``--plan``'s pilots of a user's implementation, run in a worker process (the plan comes back as JSON)."""
    params = {**claim_params(claims[0], config), "claims": [c.id for c in claims], "skip": dict(skip)}
    params.pop("claim", None)
    limit = LOAD_TIMEOUT_S if config.timeout is None else (config.timeout or None)
    outcome = pool.call("run.plan", params, timeout=limit)
    value = outcome.get("value") if outcome.get("ok") else None
    if not isinstance(value, dict) or not isinstance(value.get("plans"), list):
        why = str(outcome.get("summary") or "").strip() or (
            str(outcome.get("error") or "no answer").strip().splitlines() or ["no answer"])[-1]  # fmt: skip
        raise InvalidArgument("--plan", True, f"the pilots of the implementation under test could not run: {why}")
    return [ClaimPlan(**{**p, "pieces": tuple(p.get("pieces") or ())}) for p in value["plans"]]


def _check_run_args(args: argparse.Namespace) -> None:
    """``run``'s arguments that argparse cannot check: exit 2 naming the argument."""
    validate_seed("--seed", args.seed)
    if args.workers is not None:
        check_count("--workers", args.workers, MAX_WORKERS, WORKERS_WHY)
    if args.impl_only and not args.impl:
        raise InvalidArgument("--impl-only", True, "needs at least one --impl FAMILY=SPEC")
    if args.maxfail is not None and args.maxfail < 1:
        raise InvalidArgument("--maxfail", args.maxfail, "must be a number of FAILs >= 1 (-x is --maxfail 1)")
    if args.timeout is not None and not (0 <= args.timeout < 1e9):  # NaN fails both
        raise InvalidArgument("--timeout", args.timeout, "must be a number of seconds >= 0 (0: no limit)")
    if args.plan and (args.junit or args.json not in (None, "-") or args.out):
        given = "--junit" if args.junit else ("--out" if args.out else "--json")
        value = args.junit or args.out or args.json
        raise InvalidArgument(given, value, "--plan writes nothing; use --plan --json - for the plan as JSON")


def _run_outputs(args: argparse.Namespace) -> tuple[Path | None, Path | None, Path | None]:
    """The report folder, ``--junit`` and ``--json`` files, each checked before any compute (None: not written)."""
    out = None
    if not args.no_report:  # absolute from here on: nothing run later can move where the report goes
        out = preflight_dir(Path(os.path.abspath(args.out if args.out else _default_out(args.profile))), "--out")
    json_arg = args.json if args.json not in (None, "-") else None
    _distinct_outputs([("--json", json_arg), ("--junit", args.junit)], ("--out", out))
    junit = preflight_file(os.path.abspath(args.junit), "--junit").absolute() if args.junit else None
    json_file = preflight_file(os.path.abspath(json_arg), "--json").absolute() if json_arg is not None else None
    return out, junit, json_file


def _distinct_outputs(files: Sequence[tuple[str, str | Path | None]], folder: tuple[str, Path | None]) -> None:
    """Refuse (exit 2, naming both options) one path given for two outputs, or an output file inside the report
    folder (which holds the report's own results.json and junit.xml): the second write would replace the first."""
    given = [(opt, Path(v).expanduser().absolute()) for opt, v in files if v is not None]
    seen: dict[str, str] = {}
    for opt, path in given:
        real = os.path.realpath(path)
        if real in seen:
            raise InvalidArgument(
                opt, str(path), f"is also given as {seen[real]}; two outputs cannot share one file (the second "
                "would overwrite the first): give each its own path"
            )  # fmt: skip
        seen[real] = opt
    fopt, fpath = folder
    if fpath is None:
        return
    root = os.path.realpath(fpath)
    for opt, path in given:
        real = os.path.realpath(path)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            raise InvalidArgument(
                opt, str(path), f"is inside the report folder {fopt} {fpath}, which holds the report's own "
                "results.json and junit.xml; give a path outside it (or use the report's copy)"
            )  # fmt: skip


def _nothing_checked(results: Sequence[CheckResult], impls: _Loaded | None) -> str | None:
    """Why a run with ``--impl`` checked nothing of the user's parts (every claim exercising them SKIPPED), or None.

    A CI gate must not pass on nothing: such a run exits 1 (:data:`EXIT_FAIL`) with this message.
    """
    if impls is None:
        return None
    given = set(impls.user_parts())
    exercising = [r for r in results if set(uses(r.claim_id)) & given]
    if any(r.verdict is not Verdict.SKIPPED for r in exercising):
        return None
    why = "; ".join(f"{r.claim_id}: {(r.reason or r.summary).splitlines()[0]}" for r in exercising[:5])
    return (
        f"nothing of the implementation under test ({', '.join(sorted(given))}) was checked: "
        + (f"every claim exercising it was SKIPPED ({why})" if exercising else "no selected claim exercises it")
        + "; exit 1 (a gate must not pass on nothing)"
    )


def _gate_code(code: int, results: Sequence[CheckResult], impls: _Loaded | None) -> int:
    """``code``, or :data:`EXIT_FAIL` (with the reason on stderr) where nothing of the user's parts was checked."""
    unchecked = _nothing_checked(results, impls)
    if unchecked is None:
        return code
    print(f"rnn-verify: {unchecked}", file=sys.stderr)
    return code if code != EXIT_OK else EXIT_FAIL


def _exit_code(counts: dict[Verdict, int], fail_on: str) -> int:
    """EXIT_FAIL on a FAIL (or an INCONCLUSIVE with ``--fail-on inconclusive``), EXIT_OK otherwise."""
    bad = counts[Verdict.FAIL] + (counts[Verdict.INCONCLUSIVE] if fail_on == "inconclusive" else 0)
    return EXIT_FAIL if bad else EXIT_OK


def _select_run_claims(
    args: argparse.Namespace, impls: _Loaded | None
) -> tuple[list[Claim], dict[str, str], list[str]]:
    """The claims to list, the reason each skipped one is SKIPPED, and those ``--impl-only`` leaves out."""
    # every selected claim is listed: one that does not run in this profile is SKIPPED with the reason
    claims = selected(args.claims, args.keyword, select=select_claims)
    if args.last_failed:
        claims = _last_failed_only(claims)
    skip: dict[str, str] = {
        c.id: f"runs in profile {'/'.join(c.profiles)} only; rerun with --profile {c.profiles[0]}"
        for c in claims
        if args.profile not in c.profiles
    }
    left_out: list[str] = []
    if impls is not None and args.impl_only:  # claims that exercise none of the given parts are left out
        given = set(impls.user_parts())
        left_out = [c.id for c in claims if not set(uses(c.id)) & given]
        claims = [c for c in claims if c.id not in left_out]
        for cid in left_out:
            skip.pop(cid, None)
        print(
            f"rnn-verify: note: --impl-only: {len(left_out)} claims that exercise none of the given implementations "
            f"left out; {len(claims)} run",
            file=sys.stderr,
        )
        if not claims:
            raise InvalidArgument("--impl-only", True, "no selected claim exercises the implementations given")
    return claims, skip, left_out


def _last_failed_only(claims: list[Claim]) -> list[Claim]:
    """``--lf``: of ``claims``, those that failed when last run (:mod:`verify.selection`); none recorded (no
    previous run, nothing failed, none of these, an unreadable state file): all of them, with a note, as pytest."""
    path = last_failed_path()
    try:
        last = read_last_failed(path)
    except InvalidArgument as exc:
        print(f"rnn-verify: note: --lf: {safe_str(exc)}; running every selected claim", file=sys.stderr)
        return claims
    failed = set(last.failed) if last is not None else set()
    kept = [c for c in claims if c.id in failed]
    if not kept:
        why = "no previous run recorded" if last is None else "no selected claim failed in the previous runs"
        print(f"rnn-verify: note: --lf: {why} ({path}); running every selected claim", file=sys.stderr)
        return claims
    since = f", last updated {last.finished}" if last is not None else ""
    print(
        f"rnn-verify: note: --lf: rerunning {len(kept)} of {len(claims)} claims that failed last ({path}{since})",
        file=sys.stderr,
    )
    return kept


def _record_last_failed(results: Sequence[CheckResult], fail_on: str, out: Path | None) -> None:
    """Update ``lastfailed.json`` for ``--lf``: the claims that made this run fail (FAIL; INCONCLUSIVE too under
    ``--fail-on inconclusive``) added, the others that ran removed. A cache that cannot be written is a note."""
    bad = {Verdict.FAIL} | ({Verdict.INCONCLUSIVE} if fail_on == "inconclusive" else set())
    ran = [r.claim_id for r in results if r.verdict is not Verdict.SKIPPED]
    failed = [r.claim_id for r in results if r.verdict in bad]
    try:
        update_last_failed(ran, failed, out / "results.json" if out is not None else None)
    except OSError as exc:
        print(f"rnn-verify: note: could not record the failed claims for --lf: {os_error_text(exc)}", file=sys.stderr)


def _run_device(args: argparse.Namespace, claims: Sequence[Claim], skip: dict[str, str]) -> str:
    """The device the claims run on; without the CUDA asked for, the CUDA claims are added to ``skip``."""
    dev = resolve_device(args.device, strict=args.strict_device, argument="--device")
    if dev is None:  # cuda asked for, none here: the device claims are SKIPPED, the rest run on the CPU
        device = "cpu"
        reason = f"--device {args.device} requested but {NO_CUDA_REASON}"
        # only the claims that need CUDA are skipped: the CPU stand-in still gives evidence here
        skip.update({c.id: reason for c in claims if c.id in device_checks.CUDA_CLAIMS and c.id not in skip})
        print(f"rnn-verify: note: {reason}; CUDA claims SKIPPED, other claims run on cpu", file=sys.stderr)
    else:
        device = str(dev)
    return device


def _run_workers(args: argparse.Namespace) -> int:
    """``--workers`` (default: the CPUs available), capped at the CPUs (with a note).

    With ``--impl`` every worker loads the specs again (:func:`verify.run.check.implementations_from_params`).
    """
    cpus = available_cpus()
    workers = cpus if args.workers is None else args.workers
    if workers > cpus:
        print(
            f"rnn-verify: note: --workers {workers} capped at {cpus}, the CPUs available to this process",
            file=sys.stderr,
        )
        workers = cpus
    return workers


def _run_executor(args: argparse.Namespace, workers: int) -> Executor | None:
    """The executor ``--executor`` names (None: the runner's own serial or process pool)."""
    executor = None
    if args.executor is not None:
        kind, address = parse_executor(args.executor)
        if kind == "auto":
            kind = "dask" if _dask() else "process"
        executor = make_executor(kind if address is None else f"dask={address}", workers)
    return executor


def _claim_recorder(args: argparse.Namespace, claims: Sequence[Claim]) -> Callable[[CheckResult], dict[str, object]]:
    """A claim's result -> its record in ``results.json``, with the command that reruns it alone."""
    by_id = {c.id: c for c in claims}

    def record_of(r: CheckResult) -> dict[str, object]:
        rerun = rerun_command(
            r.claim_id, profile=args.profile, seed=args.seed, device=args.device, dtype=args.dtype, impls=args.impl
        )
        return claim_record(r, by_id[r.claim_id], rerun=rerun)

    return record_of


def _stop_run(progress: _Progress, executor: Executor | None, pngs: _BackgroundPNGs | None) -> None:
    """The run did not finish: stop the progress line, the executor and the figure process."""
    progress.close()
    if executor is not None:
        executor.close()
    if pngs is not None:
        pngs.close(terminate=True)


def _run_stopped(exc: BaseException, out: Path | None, workers: int, pngs: _BackgroundPNGs | None) -> int:
    """Ctrl-C or a stop signal during the checks: say so (nothing was written) and return the exit code."""
    what, code = _stopped(exc)
    where = f" ({out} is untouched)" if out is not None and out.exists() else ""
    stopped = "; worker processes stopped" if workers > 1 or pngs is not None else ""
    print(f"\nrnn-verify: {what}; no report written{where}{stopped}", file=sys.stderr)
    return code


def _run_info(
    args: argparse.Namespace,
    argv: Sequence[str],
    device: str,
    workers: int,
    executor: Executor | None,
    started: str,
    t0: float,
    code: int,
    stated_rate: float,
    impls: _Loaded | None,
    left_out: list[str],
) -> dict[str, object]:
    """The ``run`` block of ``results.json``: the command, its settings, the outcome, what was under test."""
    return {
        "command": "rnn-verify " + shlex.join(argv),
        "profile": args.profile,
        "seed": args.seed,
        "device_requested": args.device,
        "device": device,
        "dtype": args.dtype,
        "workers": workers,
        "executor": executor.describe()
        if executor is not None
        else (IsolatedPool.description(workers, THREADS_PER_PROCESS) if workers > 1 else "serial"),
        "fail_on": args.fail_on,
        "started": started,
        "wall_time": time.perf_counter() - t0,
        "exit_code": code,
        "source": "rnn-verify run",
        "stated_false_fail_rate": stated_rate,
        **({"implementations": list(impls.sources)} if impls is not None else {}),
        **({"impl_only_left_out": left_out} if args.impl_only else {}),
        "timeout": args.timeout,
        "isolated": bool(args.impl) or workers > 1,
    }


def _write_run_outputs(
    out: Path | None,
    doc: dict[str, Any],
    fail_on: str,
    junit: Path | None,
    json_file: Path | None,
    pngs: _BackgroundPNGs | None,
) -> int | None:
    """Write the report folder (or only ``--junit``/``--json``); the exit code if stopped while writing."""
    try:
        if out is not None:
            done = pngs.collect() if pngs is not None else {}
            pngs = None
            removed: list[str] = []
            write_report(out, doc, fail_on=fail_on, junit=junit, json_path=json_file, pngs_done=done, removed=removed)
            _note_removed(out, removed)
        else:  # all or none: a full disk while writing the second leaves the first as it was
            extra = [(junit, render_junit(doc, fail_on))] if junit is not None else []
            if json_file is not None:
                extra.append((json_file, dumps_document(doc).encode("utf-8")))
            write_files_atomic(extra)
    except STOPS as exc:
        what, code = _stopped(exc)
        print(
            f"\nrnn-verify: {what} while writing; the report folder holds the previous report or the complete "
            "new one, never a mix",
            file=sys.stderr,
        )
        return code
    finally:
        if pngs is not None:
            pngs.close(terminate=True)
    return None


def _print_run_summary(
    results: Sequence[CheckResult],
    counts: dict[Verdict, int],
    stated_rate: float,
    wall: float,
    stream: TextIO,
    color: bool = False,
    verbose: bool = False,
) -> None:
    """The summary line, the stated false-FAIL rate, one short line per claim that did not PASS (``verbose``: the
    first line of its summary, uncut; the whole summary is in the report) and every finding."""
    said = ", ".join(f"{counts[v]} {colored(v.value, v.value, color and counts[v] > 0)}" for v in Verdict)
    print(f"summary: {said}  ({wall:.1f}s)", file=stream)
    if stated_rate > 0:
        print(
            f"  stated false-FAIL rate on a correct implementation: {stated_rate:.2g} (alpha + control beta; "
            f"budget {GATE_ALPHA:g})",
            file=stream,
        )
    for r in results:
        if r.verdict is not Verdict.PASS:  # a FAIL's reason may be a traceback: its summary names the cause
            text = clean(r.summary if r.verdict is Verdict.FAIL else r.reason or r.summary).strip()
            line = f"{r.verdict.value} {r.claim_id}: "
            line += shorten(text, 10**6 if verbose else LINE_WIDTH - 2 - len(line))
            print("  " + colored(r.verdict.value, r.verdict.value, color) + line[len(r.verdict.value) :], file=stream)
    for r in results:  # the papers as printed: reported, whatever the verdict (the line says which)
        for f in r.findings:
            print(f"  {clean(finding_line(r.claim_id, r.verdict, f))}", file=stream)


def _note_listed(what: str, items: list[str], limit: int) -> None:
    """One note line on stderr: *what* (worded for the count) and at most *limit* of *items*."""
    if items:
        shown = ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")
        print(f"rnn-verify: note: {what}: {shown}", file=sys.stderr)


def _note_removed(out: Path, removed: list[str]) -> None:
    """Say exactly which files of the previous report (listed in its marker) were removed: never silently."""
    n = len(removed)
    _note_listed(
        f"removed {n} {'file' if n == 1 else 'files'} of the previous report in {out} (listed in its {MARKER} "
        "marker) that this report does not have",
        removed,
        20,
    )


def _note_foreign(out: Path, kept: list[str]) -> None:
    n = len(kept)
    _note_listed(f"kept {n} {'entry' if n == 1 else 'entries'} in {out} that rnn-verify did not write", kept, 8)


# --------------------------------------------------------------------- sweep
def _dask() -> bool:
    return dask_available()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rnn-verify/cells`` (``~/.cache/rnn-verify/cells`` without XDG_CACHE_HOME)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rnn-verify" / "cells"


def _cmd_sweep(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.list:
        for d in definitions().values():
            print(f"{d.name:<20} {d.title}")
        return EXIT_OK
    _check_sweep_args(args)
    opts = SweepOptions(
        scale=args.scale,
        seed=args.seed,
        seeds=args.seeds,
        claims=tuple(args.claims or ()),
        profile=args.profile,
        split_lrs=args.split_lrs,
    )
    plan = definitions()[args.name].build(opts)  # validates the options before anything is written or started
    out = _sweep_out(args)  # checked before anything is started
    _distinct_outputs([("--json", args.json)], ("--out", out))
    json_file = preflight_file(args.json, "--json") if args.json else None
    with contextlib.ExitStack() as held:
        if out is not None:  # a second run into the same folder is refused until this one ends
            held.enter_context(output_lock(out, "--out", command="rnn-verify " + shlex.join(argv)))
        return _sweep_locked(args, argv, plan, out, json_file)
    raise AssertionError("unreachable")  # pragma: no cover


def _sweep_locked(
    args: argparse.Namespace, argv: Sequence[str], plan: SweepPlan, out: Path | None, json_file: Path | None
) -> int:
    """``sweep`` once its outputs are checked and locked: run the cells, write the report, decide."""
    cache = None if args.no_cache else CellCache(Path(args.cache) if args.cache else default_cache_dir())
    stream = sys.stdout
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    progress = SweepProgress(len({c.key for c in plan.cells}), sys.stderr, quiet=args.quiet)
    executor: Executor | None = None
    try:  # from the executor's start on: whatever stops the sweep closes the executor
        executor = make_executor(args.executor, args.workers, args.threads)
        on_start = _sweep_announcer(args.quiet, plan, executor, cache)
        run = run_plan(plan, executor, cache, progress, on_start=on_start)
    except BaseException as exc:
        if executor is not None:
            executor.close()
        if not isinstance(exc, STOPS):
            raise
        what, code = _stopped(exc)
        kept = "finished cells are cached and a rerun resumes" if cache is not None else "--no-cache: nothing kept"
        print(f"\nrnn-verify: {what}; {kept}; no report written", file=sys.stderr)
        return code
    executor.close()
    catalog = all_claims()
    records = []
    for r in run.results:
        rec = claim_record(
            r, catalog.get(r.claim_id), rerun=f"rnn-verify {shlex.join(argv)}", source="rnn-verify sweep"
        )
        records.append(rec)
    counts = {v: sum(r.verdict is v for r in run.results) for v in Verdict}
    code = _exit_code(counts, args.fail_on)
    stats = run.stats()
    failed = [o for o in run.outcomes.values() if not o.ok]
    doc = run_document(records, _sweep_info(args, argv, plan, executor, started, code, stats, cache, failed))
    doc["figures"] = [*doc["figures"], *_cell_tables(plan, run, stats, failed)]
    doc["figures"] = [normalize_figure(f) for f in doc["figures"]]
    if out is not None:
        removed: list[str] = []
        write_report(out, doc, fail_on=args.fail_on, json_path=json_file, removed=removed)
        _note_removed(out, removed)
    elif json_file is not None:
        write_file_atomic(json_file, dumps_document(doc).encode("utf-8"))
    _print_sweep_summary(plan, run, stats, failed, stream)
    if out is not None:
        print(f"report: {clean(str(out / 'report.html'))}", file=stream)
    return code


def _check_sweep_args(args: argparse.Namespace) -> None:
    """``sweep``'s arguments that argparse cannot check: exit 2 naming the argument."""
    if not args.name:
        raise InvalidArgument("NAME", None, f"name a sweep: one of {', '.join(definitions())} (or --list)")
    if args.name not in definitions():
        raise InvalidArgument("NAME", args.name, f"must be one of {', '.join(definitions())}")
    validate_seed("--seed", args.seed)
    if args.workers is not None:
        check_count("--workers", args.workers, MAX_WORKERS, WORKERS_WHY)
    if args.threads is not None:
        check_count("--threads", args.threads, MAX_THREADS, THREADS_WHY)


def _sweep_out(args: argparse.Namespace) -> Path | None:
    """The sweep's report folder (default ``reports/sweeps/<timestamp>-<name>``), checked; None with --no-report."""
    out = None
    if not args.no_report:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = preflight_dir(Path(args.out) if args.out else DEFAULT_SWEEPS / f"{stamp}-{args.name}", "--out")
    return out


def _sweep_announcer(
    quiet: bool, plan: SweepPlan, executor: Executor, cache: CellCache | None
) -> Callable[[int, int], None]:
    """``on_start`` of :func:`run_plan`: one line saying how many cells are cached and where the rest run."""

    def on_start(total: int, todo: int) -> None:
        if not quiet:
            where = f"cache {cache.path}" if cache is not None else "no cache"
            print(
                f"sweep {plan.name}: {total} cells, {total - todo} cached, {todo} to run on {executor.describe()} "
                f"({where})",
                file=sys.stderr,
                flush=True,
            )

    return on_start


def _sweep_info(
    args: argparse.Namespace,
    argv: Sequence[str],
    plan: SweepPlan,
    executor: Executor,
    started: str,
    code: int,
    stats: dict[str, Any],
    cache: CellCache | None,
    failed: Sequence[CellOutcome],
) -> dict[str, object]:
    """The ``run`` block of a sweep's ``results.json``: the command, its settings, the cells and the outcome."""
    return {
        "command": "rnn-verify " + shlex.join(argv),
        "profile": str(plan.settings.get("profile") or ("ci" if args.scale == "ci" else "full")),
        "seed": args.seed,
        "workers": executor.workers,
        "executor": stats["executor"],
        "fail_on": args.fail_on,
        "started": started,
        "wall_time": stats["wall_time"],
        "exit_code": code,
        "source": "rnn-verify sweep",
        "sweep": {
            **stats,
            "cache": str(cache.path) if cache is not None else None,
            "failed_cells": [o.row() for o in failed],
        },
    }


def _cell_tables(
    plan: SweepPlan, run: SweepRun, stats: dict[str, Any], failed: Sequence[CellOutcome]
) -> list[dict[str, Any]]:
    """The report's table of cells (status, wall time, worker) and, if any failed, the table of failures."""
    cell_table = {
        "kind": "table",
        "title": f"sweep {plan.name}: cells",
        "columns": ["cell", "status", "wall (s)", "worker"],
        "rows": [
            [o.cell.label, "cached" if o.cached else ("ok" if o.ok else "FAILED"), round(o.wall_time, 2), o.worker]
            for o in run.outcomes.values()
        ],
        "caption": f"{stats['cells']} cells: {stats['computed']} computed, {stats['cached']} from the cache, "
        f"{stats['failed']} failed; executor {stats['executor']}",
    }
    tables: list[dict[str, Any]] = [cell_table]
    if failed:
        tables.append(
            {
                "kind": "table",
                "title": "failed cells (with their tracebacks)",
                "columns": ["cell", "worker", "error"],
                "rows": [[o.cell.label, o.worker, o.error] for o in failed],
            }
        )
    return tables


def _print_sweep_summary(
    plan: SweepPlan, run: SweepRun, stats: dict[str, Any], failed: Sequence[CellOutcome], stream: TextIO
) -> None:
    """The cell counts, one verdict line per claim with its findings, and the first failed cells' tracebacks."""
    print(
        f"sweep {plan.name}: {stats['cells']} cells ({stats['computed']} computed, {stats['cached']} cached, "
        f"{stats['failed']} failed) in {stats['wall_time']:.1f}s on {stats['executor']}",
        file=stream,
    )
    for r in run.results:
        print(f"{r.verdict.value:<12} {r.claim_id:<34} {clean(r.summary)}", file=stream)
        for f in r.findings:
            print(f"  {clean(finding_line(r.claim_id, r.verdict, f))}", file=stream)
    if failed:
        print(clean(failed_cells_text(failed, limit=3)), file=sys.stderr)


# -------------------------------------------------------------------- report
def _cmd_report(args: argparse.Namespace, argv: Sequence[str] = ()) -> int:
    src = Path(args.results)
    _read_results(src, args.no_digest_check, notes=False)  # every field validated before anything is written
    if args.out:
        out = Path(args.out)
    else:
        out = src if src.is_dir() else src.parent
        if not is_report_folder(out):
            read_marker(out)  # a damaged marker is named as such (InvalidArgument), not as "no marker"
            raise InvalidArgument(
                "RESULTS",
                str(src),
                f"its folder {out.absolute()} is not an rnn-verify report folder (it has no {MARKER} marker), so "
                "the report is not written there; say where with --out DIR (a new or empty folder, or a report "
                "folder)",
            )
    out = preflight_dir(out, "--out")
    _distinct_outputs([("RESULTS", src), ("--junit", args.junit)], ("--out", None))  # the input is not overwritten
    _distinct_outputs([("--junit", args.junit)], ("--out", out))
    junit = preflight_file(args.junit, "--junit") if args.junit else None
    with output_lock(out, "--out", command="rnn-verify " + shlex.join(argv)):
        parsed = _read_results(src, args.no_digest_check, notes=True)  # read again: what is read is what is locked
        fail_on = args.fail_on or str(parsed.run.get("fail_on", "fail"))
        if fail_on not in ("fail", "inconclusive"):
            fail_on = "fail"
        removed: list[str] = []
        write_report(out, parsed.document, fail_on=fail_on, junit=junit, removed=removed)
    _note_removed(out, removed)
    s = parsed.summary
    print(
        f"re-rendered {s.total} claims ({s.PASS} PASS, {s.FAIL} FAIL, "
        f"{s.INCONCLUSIVE} INCONCLUSIVE, {s.SKIPPED} SKIPPED) into {out}"
    )
    _note_foreign(out, foreign_entries(out))
    # the code `run` gave these verdicts (verify.exit_codes): a CI step that re-renders a failed run stays red
    counts = {Verdict.FAIL: s.FAIL, Verdict.INCONCLUSIVE: s.INCONCLUSIVE}
    code = _exit_code(counts, fail_on)
    if parsed.run.get("exit_code") == EXIT_FAIL and fail_on == parsed.run.get("fail_on", "fail"):
        code = EXIT_FAIL  # (verify_results accepted it: a run with --impl that checked nothing of the user's code)
    return code


def _read_results(src: Path, no_digest_check: bool, *, notes: bool) -> ResultsDocument:
    """``report``'s input, parsed and checked (:func:`verify.schema.verify_results`), and compared with the digest
    its report folder recorded (unless ``--no-digest-check``); a missing digest is a note (when ``notes``)."""
    parsed, data = read_document(src)
    if no_digest_check:
        return parsed
    file = results_file(src)
    recorded, why = recorded_digest(file)
    if recorded is None:
        if notes:
            print(
                f"rnn-verify: note: {file} has no recorded digest ({why}); it was checked for consistency only",
                file=sys.stderr,
            )
        return parsed
    actual = sha256_hex(data)
    if actual != recorded:
        raise InvalidFile(
            str(file),
            "",
            None,
            f"its SHA-256 ({actual[:16]}...) differs from the one rnn-verify recorded in the {MARKER} marker "
            f"beside it when it wrote the file ({recorded[:16]}...): the file was changed since. This digest "
            "detects accidental edits; it is not a signature. If you edited it on purpose, rerun with "
            "--no-digest-check",
        )
    return parsed


# -------------------------------------------------------------------- golden
def _cmd_golden(args: argparse.Namespace) -> int:
    if args.reference is not None:
        if not args.check:
            raise InvalidArgument("--reference", args.reference, "needs --check FILE (your results .npz)")
        user = golden_user.check_user_results(args.check, args.reference)
        print(user.format())
        return EXIT_OK if user.ok else EXIT_FAIL
    if args.check:
        if Path(args.check).is_dir():
            raise InvalidArgument("--check", args.check, "is a folder; give the golden pair's .npz or .json file")
        report = golden.check_golden(args.check)
        print(report.format())
        return EXIT_OK if report.ok else EXIT_FAIL
    ks = tuple(args.k) if args.k else golden.DEFAULT_KS
    path = golden.export_golden(args.out, seed=args.seed, ks=ks)
    print(f"wrote {path} and {path.with_suffix('.json')}")
    return EXIT_OK


def help_values() -> dict[str, object]:
    """The numbers and names the subcommands' ``--help`` quotes (:mod:`verify.cli_parser`), from their modules."""
    return {
        "MAX_SEED": MAX_SEED,
        "MAX_WORKERS": MAX_WORKERS,
        "MAX_THREADS": MAX_THREADS,
        "TIMEOUT_FACTOR": TIMEOUT_FACTOR,
        "TIMEOUT_FLOOR_S": TIMEOUT_FLOOR_S,
        "IMPL_FAMILIES": ", ".join([*IMPL_FAMILIES, *IMPL_ALIASES]),
    }


def _parser() -> argparse.ArgumentParser:
    """The parser of every command (:func:`verify.cli_parser.build_parser`), its ``--help`` values filled in."""
    return build_parser(help_values)


#: the commands that compute, by name (``list`` and ``explain`` are :mod:`verify.cli_front`'s)
COMMANDS: dict[str, Command] = {
    "run": lambda args, argv: _cmd_run(args, argv),
    "sweep": lambda args, argv: _cmd_sweep(args, argv),
    "report": lambda args, argv: _cmd_report(args, argv),
    "golden": lambda args, argv: _cmd_golden(args),
    "gallery": lambda args, argv: _cmd_gallery(args, argv),
}


def _cmd_gallery(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``rnn-verify gallery`` (:mod:`verify.gallery.run`)."""
    from verify.gallery.run import cmd_gallery  # the command's own module, loaded when asked for

    validate_seed("--seed", args.seed)
    check_count("--workers", args.workers, MAX_WORKERS, WORKERS_WHY)
    return cmd_gallery(args, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv``; returns the exit code (see the module docstring).

    SIGTERM and SIGHUP are handled like Ctrl-C while it runs (exit 143 / 129).
    """
    return front_main(argv, lambda: Backend(COMMANDS, help_values))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
