"""Wall time of the CI gate (``rnn-verify run --profile ci``), quiet and beside CPU-bound neighbours.

``python -m verify.bench.gate [--seed 0] [--neighbours 1] [--configs default workers-1 loaded]
[--baseline-source DIR [--baseline-configs ...]] [--json PATH]``

Each configuration runs the gate in a fresh subprocess (imports included, as a user's CI
sees it; ``--no-report`` unless ``--report``) and records its wall time, its CPU seconds (the gate's
process and every worker it started and reaped: ``RUSAGE_CHILDREN``), the claims' seconds summed (from
``--json``), exit code and verdict counts:

* ``default``     -- default flags (one worker process per CPU, one torch thread each);
* ``workers-1``   -- ``--workers 1``;
* ``loaded``      -- default flags while ``--neighbours`` CPU-bound processes spin beside it
  (plain Python busy loops, started by this script, stopped when the run ends, each bounded by
  ``--neighbour-timeout`` seconds).

``--baseline-source DIR`` runs the same configurations on another checkout of rnn-verify
(``PYTHONPATH=DIR``, e.g. a ``git worktree`` of an older commit) in the same invocation, so
before/after ratios come from one run on one machine; the table prints each configuration's
wall time and the ratio loaded/quiet. Every run starts in a scratch folder with its checkout first on the import
path, and the row records where ``verify`` was imported from (``verify_from``). ``--repeat N`` runs the sources
in turn N times (this machine's speed drifts by 15-30 % within an hour; alternating keeps the drift out of the
ratio) and the ratios compare medians. Numbers belong in the closing note, not in a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from verify.bench._timing import machine, refuse_foreign_json
from verify.files import write_file_atomic

TOOL = "verify.bench.gate"
_SUMMARY = re.compile(r"summary: (\d+) PASS, (\d+) FAIL, (\d+) INCONCLUSIVE, (\d+) SKIPPED")


#: the checkout this module belongs to (the folder holding ``verify/``)
HERE = str(Path(__file__).resolve().parents[2])


def _imported_from(env: dict[str, str], cwd: str) -> str:
    """The ``verify`` package a run with ``env`` in ``cwd`` imports (its folder)."""
    probe = [sys.executable, "-c", "import os, verify; print(os.path.dirname(os.path.dirname(verify.__file__)))"]
    return subprocess.run(probe, env=env, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _run_gate(source: str | None, extra: list[str], seed: int, neighbours: int, timeout: float) -> dict[str, Any]:
    """One gate run of the checkout ``source`` (None: this one). It runs in a scratch folder with ``source`` first on
    the import path: started in a checkout, ``python -m verify`` would import that checkout's package whatever
    PYTHONPATH says (the current folder comes first) -- which made a baseline measure this checkout again."""
    source = source or HERE
    env = dict(os.environ)
    env["PYTHONPATH"] = source + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    scratch = tempfile.TemporaryDirectory(prefix="rnn-verify-bench-gate-")  # removes only the folder it made
    found = _imported_from(env, scratch.name)
    if os.path.realpath(found) != os.path.realpath(source):
        scratch.cleanup()
        raise SystemExit(f"verify.bench.gate: a run meant for {source} imports verify from {found}")
    doc = os.path.join(scratch.name, "results.json")
    cmd = [sys.executable, "-m", "verify", "run", "--profile", "ci", "--seed", str(seed), "-q", *extra, "--json", doc]
    spinners = [
        subprocess.Popen(  # a CPU-bound neighbour, bounded in time; stopped below
            [sys.executable, "-c", f"import time\nt = time.time() + {timeout}\nwhile time.time() < t: pass"]
        )
        for _ in range(neighbours)
    ]
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(
            cmd, env=env, cwd=scratch.name, capture_output=True, text=True, timeout=timeout, check=False
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # before the neighbours are reaped
    finally:
        for sp in spinners:
            sp.kill()
            sp.wait()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    claims_s = None
    try:
        with open(doc, encoding="utf-8") as f:
            claims_s = sum(float(c.get("wall_time") or 0.0) for c in json.load(f)["claims"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    finally:
        scratch.cleanup()
    m = _SUMMARY.search(proc.stdout + proc.stderr)
    counts = dict(zip(("PASS", "FAIL", "INCONCLUSIVE", "SKIPPED"), map(int, m.groups()), strict=True)) if m else None
    return {"command": " ".join(cmd[2:-2]), "verify_from": found, "wall_s": wall, "cpu_s": cpu,
            "claims_s": claims_s, "exit_code": proc.returncode, "verdicts": counts}  # fmt: skip


def _medians(rows: list[dict[str, Any]], label: str) -> dict[str, dict[str, float]]:
    """Per configuration of source ``label``: the median wall and CPU seconds over its runs."""
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["config"] for r in rows if r["source"] == label):
        mine = [r for r in rows if r["source"] == label and r["config"] == name]
        out[name] = {k: statistics.median(r[k] for r in mine) for k in ("wall_s", "cpu_s")}
    return out


def _print_ratios(rows: list[dict[str, Any]], labels: list[str], neighbours: int) -> None:
    """This checkout / baseline per configuration (median wall and CPU); loaded / quiet per source."""
    meds = {label: _medians(rows, label) for label in labels}
    if "baseline" in meds:
        print("ratios (this checkout / baseline, same configuration; medians):")
        for name, m in meds["this checkout"].items():
            b = meds["baseline"].get(name)
            if b:
                print(
                    f"  {name:10s} wall {m['wall_s']:.1f} / {b['wall_s']:.1f} s = {m['wall_s'] / b['wall_s']:.2f}  "
                    f"CPU {m['cpu_s'] / b['cpu_s']:.2f}"
                )
    print(f"ratios (loaded with {neighbours} neighbour(s) / default, quiet):")
    for label in labels:
        mine = meds[label]
        if "loaded" in mine and "default" in mine:
            print(f"  {label:14s} {mine['loaded']['wall_s'] / mine['default']['wall_s']:.2f}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--neighbours", type=int, default=1, help="CPU-bound processes beside the loaded run")
    ap.add_argument("--neighbour-timeout", type=float, default=900.0, help="upper bound of one run (s)")
    ap.add_argument("--baseline-source", default=None, help="another rnn-verify checkout to measure beside")
    ap.add_argument("--report", action="store_true", help="write the report folder too (default --no-report)")
    ap.add_argument(
        "--configs", nargs="+", choices=("default", "workers-1", "loaded"), default=["default", "workers-1", "loaded"]
    )
    ap.add_argument(
        "--baseline-configs",
        nargs="+",
        choices=("default", "workers-1", "loaded"),
        default=None,
        help="configurations of the baseline (default: --configs)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="run the sources in turn this many times (medians)")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    if args.neighbours < 0:
        ap.error("--neighbours must be >= 0")
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.json:
        refuse_foreign_json(Path(args.json), TOOL)  # before minutes of measuring
    sources: list[tuple[str, str | None]] = [("this checkout", None)]
    if args.baseline_source:
        if not (Path(args.baseline_source) / "verify" / "__init__.py").is_file():
            ap.error(f"--baseline-source {args.baseline_source!r}: no verify/ package there")
        sources.append(("baseline", str(Path(args.baseline_source).resolve())))
    report: list[str] = [] if args.report else ["--no-report"]
    configs = {
        "default": report,
        "workers-1": [*report, "--workers", "1"],
        "loaded": report,
    }
    rows = []
    print(f"machine: {machine()}; {os.cpu_count()} CPUs", flush=True)
    for rnd, (label, src) in ((r, s_) for r in range(args.repeat) for s_ in sources):
        chosen = args.configs if src is None else (args.baseline_configs or args.configs)
        for name in chosen:
            nb = args.neighbours if name == "loaded" else 0
            row = {"source": label, "config": name, "neighbours": nb, "round": rnd,
                   **_run_gate(src, configs[name], args.seed, nb, args.neighbour_timeout)}  # fmt: skip
            rows.append(row)
            claims = f"{row['claims_s']:6.1f}" if row["claims_s"] is not None else "     ?"
            print(f"  {label:14s} {name:10s} {row['wall_s']:7.1f} s wall {row['cpu_s']:7.1f} s CPU {claims} s claims  "
                  f"exit {row['exit_code']}  {row['verdicts']}", flush=True)  # fmt: skip
    _print_ratios(rows, [label for label, _ in sources], args.neighbours)
    result = {"tool": TOOL, "machine": machine(), "cpus": os.cpu_count(), "seed": args.seed, "rows": rows}
    if args.json:
        write_file_atomic(Path(args.json), json.dumps(result, indent=1).encode("utf-8"))
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()
