"""Command-line interface ``rnn-verify`` (also ``python -m verify``).

Commands::

    rnn-verify list    [--profile P] [--claims ID ...] [--json | --markdown]
    rnn-verify run     [--profile ci|full] [--claims ID|GLOB ...] [--seed N] [--device cpu|cuda|auto]
                       [--strict-device] [--dtype float64|float32] [--out DIR | --no-report]
                       [--json [FILE]] [--junit FILE] [--fail-on fail|inconclusive] [--workers N] [--quiet]
    rnn-verify report  RESULTS [--out DIR] [--junit FILE] [--fail-on ...]
    rnn-verify golden  [--out FILE.npz] [--seed N] [--k K ...]
    rnn-verify golden  --check FILE.npz

Exit codes: 0 every selected claim PASSed (SKIPPED allowed, and listed); 1 a claim
FAILed (or was INCONCLUSIVE under ``--fail-on inconclusive``), or ``golden
--check`` found a quantity that does not verify; 2 usage or input error (unknown
claim, unwritable output folder, corrupt or mismatched input file, ``--device cuda
--strict-device`` without CUDA); 130 interrupted (Ctrl-C; the previous report is
left as it was).

``run`` writes a report folder (default ``reports/runs/<timestamp>-<profile>``)
atomically: ``results.json``, ``report.md``, ``report.html``, ``junit.xml`` and
``figures/``. Checks the output locations before any compute.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from theory.catalog import Claim
from verify.errors import VerifyError
from verify.results import PROFILES, CheckResult, RunConfig, Verdict

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_BACKGROUND_PNG_MIN_CLAIMS = 6
DEFAULT_RUNS = Path("reports") / "runs"

_EPILOG = (
    "exit codes: 0 all PASS (SKIPPED allowed), 1 a FAIL (or INCONCLUSIVE with --fail-on "
    "inconclusive; or golden --check found a mismatch), 2 usage or input error, 130 interrupted"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rnn-verify",
        description="Check online recurrent learning algorithms against exact references and the papers' claims.",
        epilog=_EPILOG,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{list,run,report,golden}")

    ls = sub.add_parser("list", help="list the claim catalog", description="List the claim catalog.", epilog=_EPILOG)
    ls.add_argument("--profile", choices=PROFILES, help="only claims that run in this profile")
    ls.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs (e.g. 'uoro.*')")
    fmt = ls.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the catalog as JSON")
    fmt.add_argument("--markdown", action="store_true", help="print the catalog as a markdown table (for the README)")

    run = sub.add_parser(
        "run",
        help="run claims and write a report",
        description="Run claims of the catalog, print one verdict per claim and write a report folder.",
        epilog=_EPILOG,
    )
    run.add_argument(
        "--profile", choices=PROFILES, default="ci", help="ci: the quick CI gate (default); full: larger sizes"
    )
    run.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs, e.g. 'uoro.*' (default: all)")
    run.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    run.add_argument(
        "--device", default="cpu", help="cpu (default), cuda[:N] or auto; without CUDA the device claims are SKIPPED"
    )
    run.add_argument("--strict-device", action="store_true", help="make --device cuda without CUDA an error (exit 2)")
    run.add_argument(
        "--dtype", choices=("float64", "float32"), default="float64", help="dtype where a check lets you choose"
    )
    out = run.add_mutually_exclusive_group()
    out.add_argument("--out", metavar="DIR", help=f"report folder (default {DEFAULT_RUNS}/<timestamp>-<profile>)")
    out.add_argument("--no-report", action="store_true", help="write no report folder")
    run.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="also write results.json to FILE ('-' or no FILE: print it on stdout, verdicts go to stderr)",
    )
    run.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    run.add_argument(
        "--fail-on",
        choices=("fail", "inconclusive"),
        default="fail",
        help="exit 1 on FAIL (default) or also on INCONCLUSIVE",
    )
    run.add_argument("--workers", type=int, default=1, metavar="N", help="run checks in N processes (default 1)")
    run.add_argument("-q", "--quiet", action="store_true", help="print only the summary")

    rep = sub.add_parser(
        "report",
        help="re-render a report from a saved results.json",
        description="Re-render report.md, report.html, junit.xml and figures from a saved run, without recomputing.",
        epilog=_EPILOG,
    )
    rep.add_argument("results", metavar="RESULTS", help="a results.json or a report folder holding one")
    rep.add_argument("--out", metavar="DIR", help="report folder (default: the folder of RESULTS)")
    rep.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    rep.add_argument("--fail-on", choices=("fail", "inconclusive"), default=None, help="JUnit: INCONCLUSIVE as failure")

    gold = sub.add_parser(
        "golden",
        help="export or check portable golden vectors",
        description="Export golden vectors (.npz + JSON header) with exact float64 reference quantities, "
        "or re-verify a golden file with --check.",
        epilog=_EPILOG,
    )
    gold.add_argument("--check", metavar="FILE", help="re-verify FILE (.npz) instead of exporting")
    gold.add_argument("--out", metavar="FILE", default="golden.npz", help="output .npz (default golden.npz)")
    gold.add_argument("--seed", type=int, default=0, help="seed of the problems (default 0)")
    gold.add_argument("--k", type=int, nargs="+", default=None, metavar="K", help="truncation lengths (default 1 2 3)")
    return p


def _version() -> str:
    from verify.report.document import tool_version

    return tool_version()


# ---------------------------------------------------------------------- list
def _cmd_list(args: argparse.Namespace) -> int:
    from verify.runner import select_claims

    claims = select_claims(args.claims, profile=args.profile)
    if args.claims and args.profile:
        claims = [c for c in claims if args.profile in c.profiles]
    if args.json:
        print(json.dumps([{**c.__dict__, "family": c.family} for c in claims], indent=2))
        return EXIT_OK
    if args.markdown:
        print("| claim | what it checks | paper | where | profiles |")
        print("|---|---|---|---|---|")
        for c in claims:
            cells = [f"`{c.id}`", c.title, f"`{c.paper}`", c.where, ", ".join(c.profiles)]
            print("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
        return EXIT_OK
    for c in claims:
        print(f"{c.id:<34} {c.paper:<34} [{','.join(c.profiles)}]")
        print(f"    {c.title}")
        print(f"    {c.where}")
    print(f"{len(claims)} claims")
    return EXIT_OK


# ---------------------------------------------------------------- progress
class _Progress:
    """Per-claim verdict lines; a live 'running ...' line on stderr only when it is a terminal."""

    def __init__(self, total: int, stream: TextIO, quiet: bool) -> None:
        self.total, self.stream, self.quiet = total, stream, quiet
        self.live = sys.stderr.isatty() and not quiet
        self.done = 0
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if self.live:
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()

    def _tick(self) -> None:
        while not self.stop.wait(0.5):
            self._draw()

    def _draw(self) -> None:
        with self.lock:
            if not self.running:
                return
            now = time.perf_counter()
            cur = ", ".join(f"{cid} {now - t0:.0f}s" for cid, t0 in self.running.items())
            line = f"[{self.done}/{self.total}] running {cur}"
            sys.stderr.write("\r\033[K" + line[:200])
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
                n = f"n={result.samples_used}" if result.samples_used is not None else ""
                print(
                    f"{result.verdict.value:<12} {claim.id:<34} {result.wall_time:6.1f}s {n:>9}  {result.summary}",
                    file=self.stream,
                    flush=True,
                )

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
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        os.nice(10)


def _warm_up() -> None:
    from matplotlib.backends import backend_agg  # noqa: F401

    import verify.report.figures  # noqa: F401  (torch and the report code)


class _BackgroundPNGs:
    """Draws each claim's figures in one low-priority process while the next checks run.

    Drawing is matplotlib-bound (about 0.3-1 s a figure); done at the end it would add
    up to the run's wall time. Any figure that fails here is simply drawn again, in
    this process, when the report is written.
    """

    def __init__(self) -> None:
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_renderer_init
        )
        self.futures: dict[str, Future[bytes]] = {}
        self.pool.submit(_warm_up)  # start the process (imports) while the first check runs

    def submit(self, jobs: dict[str, dict[str, object]]) -> None:
        from verify.report import render_png

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

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


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
    from verify.device import NO_CUDA_REASON, resolve_device
    from verify.errors import InvalidArgument
    from verify.report import (
        claim_png_jobs,
        claim_record,
        preflight_dir,
        preflight_file,
        rerun_command,
        run_document,
        write_report,
    )
    from verify.report.atomic import write_file_atomic
    from verify.runner import run_claims, select_claims

    if args.seed < 0:
        raise InvalidArgument("--seed", args.seed, "must be an integer >= 0")
    if args.workers < 1:
        raise InvalidArgument("--workers", args.workers, "must be an integer >= 1")
    # every selected claim is listed: one that does not run in this profile is SKIPPED with the reason
    claims = select_claims(args.claims)
    skip: dict[str, str] = {
        c.id: f"runs in profile {'/'.join(c.profiles)} only; rerun with --profile {c.profiles[0]}"
        for c in claims
        if args.profile not in c.profiles
    }
    dev = resolve_device(args.device, strict=args.strict_device)
    if dev is None:  # cuda asked for, none here: the device claims are SKIPPED, the rest run on the CPU
        device = "cpu"
        reason = f"--device {args.device} requested but {NO_CUDA_REASON}"
        from verify.checks import device as device_checks

        # only the claims that need CUDA are skipped: the CPU stand-in still gives evidence here
        skip.update({c.id: reason for c in claims if c.id in device_checks.CUDA_CLAIMS and c.id not in skip})
        print(f"rnn-verify: note: {reason}; CUDA claims SKIPPED, other claims run on cpu", file=sys.stderr)
    else:
        device = str(dev)
    # every output location is checked before any compute
    out = None
    if not args.no_report:
        out = preflight_dir(Path(args.out) if args.out else _default_out(args.profile), "--out")
    junit = preflight_file(args.junit, "--junit") if args.junit else None
    json_file = preflight_file(args.json, "--json") if args.json not in (None, "-") else None
    to_stdout = args.json == "-"
    config = RunConfig(profile=args.profile, seed=args.seed, device=device, dtype=args.dtype)
    stream = sys.stderr if to_stdout else sys.stdout
    progress = _Progress(len(claims), stream, args.quiet)
    by_id = {c.id: c for c in claims}
    records_by_id: dict[str, dict[str, object]] = {}
    # a background figure process costs a torch import (a few s of CPU): worth it for long runs only
    n_run = sum(c.id not in skip for c in claims)
    pngs = _BackgroundPNGs() if out is not None and n_run >= _BACKGROUND_PNG_MIN_CLAIMS else None

    def record_of(r: CheckResult) -> dict[str, object]:
        rerun = rerun_command(r.claim_id, profile=args.profile, seed=args.seed, device=args.device, dtype=args.dtype)
        return claim_record(r, by_id[r.claim_id], rerun=rerun)

    def on_event(event: str, claim: Claim, result: CheckResult | None) -> None:
        progress(event, claim, result)
        if event == "done" and result is not None:
            rec = records_by_id[claim.id] = record_of(result)
            if pngs is not None:
                pngs.submit(claim_png_jobs(rec))

    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    try:
        results = run_claims(claims, config, on_event, workers=args.workers, skip=skip)
    except BaseException as exc:
        progress.close()
        if pngs is not None:
            pngs.close()
        if not isinstance(exc, KeyboardInterrupt):
            raise
        where = f" ({out} is untouched)" if out is not None and out.exists() else ""
        print(f"\nrnn-verify: interrupted; no report written{where}", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.close()
    records = [records_by_id.get(r.claim_id) or record_of(r) for r in results]
    counts = {v: sum(r.verdict is v for r in results) for v in Verdict}
    bad = counts[Verdict.FAIL] + (counts[Verdict.INCONCLUSIVE] if args.fail_on == "inconclusive" else 0)
    code = EXIT_FAIL if bad else EXIT_OK
    doc = run_document(
        records,
        {
            "command": "rnn-verify " + shlex.join(argv),
            "profile": args.profile,
            "seed": args.seed,
            "device_requested": args.device,
            "device": device,
            "dtype": args.dtype,
            "workers": args.workers,
            "fail_on": args.fail_on,
            "started": started,
            "wall_time": time.perf_counter() - t0,
            "exit_code": code,
            "source": "rnn-verify run",
        },
    )
    try:
        if out is not None:
            done = pngs.collect() if pngs is not None else {}
            pngs = None
            write_report(out, doc, fail_on=args.fail_on, junit=junit, json_path=json_file, pngs_done=done)
        else:
            from verify.report import dumps_document, render_junit

            if junit is not None:
                write_file_atomic(junit, render_junit(doc, args.fail_on))
            if json_file is not None:
                write_file_atomic(json_file, dumps_document(doc).encode("utf-8"))
    except KeyboardInterrupt:
        print("\nrnn-verify: interrupted while writing; the previous report is intact", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if pngs is not None:
            pngs.close()
    if to_stdout:
        from verify.report import dumps_document

        sys.stdout.write(dumps_document(doc))
    wall = time.perf_counter() - t0
    print("summary: " + ", ".join(f"{counts[v]} {v.value}" for v in Verdict) + f"  ({wall:.1f}s)", file=stream)
    for r in results:
        if r.verdict is not Verdict.PASS:  # a FAIL's reason may be a traceback: its summary names the cause
            text = (r.summary if r.verdict is Verdict.FAIL else r.reason or r.summary).strip()
            print(f"  {r.verdict.value} {r.claim_id}: {text.splitlines()[0] if text else ''}", file=stream)
    for r in results:  # the papers as printed: reported, whatever the verdict
        for f in r.findings:
            print(f"  FINDING {r.claim_id}: {f}", file=stream)
    if out is not None:
        print(f"report: {out / 'report.html'}", file=stream)
    return code


# -------------------------------------------------------------------- report
def _cmd_report(args: argparse.Namespace) -> int:
    from verify.errors import InvalidArgument
    from verify.report import load_document, preflight_dir, preflight_file, write_report

    src = Path(args.results)
    doc = load_document(src)
    if args.out:
        out = Path(args.out)
    elif src.is_dir():
        out = src
    elif src.name == "results.json":
        out = src.parent
    else:
        raise InvalidArgument("--out", None, f"{src} is not a report folder's results.json; say where with --out DIR")
    out = preflight_dir(out, "--out")
    junit = preflight_file(args.junit, "--junit") if args.junit else None
    fail_on = args.fail_on or str(doc["run"].get("fail_on", "fail"))
    if fail_on not in ("fail", "inconclusive"):
        fail_on = "fail"
    write_report(out, doc, fail_on=fail_on, junit=junit)
    s = doc["summary"]
    print(
        f"re-rendered {len(doc['claims'])} claims ({s.get('PASS', 0)} PASS, {s.get('FAIL', 0)} FAIL, "
        f"{s.get('INCONCLUSIVE', 0)} INCONCLUSIVE, {s.get('SKIPPED', 0)} SKIPPED) into {out}"
    )
    return EXIT_OK


# -------------------------------------------------------------------- golden
def _cmd_golden(args: argparse.Namespace) -> int:
    from verify import golden

    if args.check:
        report = golden.check_golden(args.check)
        print(report.format())
        return EXIT_OK if report.ok else EXIT_FAIL
    ks = tuple(args.k) if args.k else golden.DEFAULT_KS
    path = golden.export_golden(args.out, seed=args.seed, ks=ks)
    print(f"wrote {path} and {path.with_suffix('.json')}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args, argv)
        if args.command == "report":
            return _cmd_report(args)
        return _cmd_golden(args)
    except VerifyError as exc:
        print(f"rnn-verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # e.g. the disk filled up while writing; what was there before is intact
        print(f"rnn-verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nrnn-verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
