"""The cost of isolation: the ci profile's claims in this process vs in an isolated worker process, one run.

``python -m verify.bench.isolation [--claims ID ...] [--profile ci] [--seed 0] [--repeats 1] [--json PATH]``

Runs the selected claims (default: every claim of the profile) with the toolkit's own implementations three
ways, alternating, in one invocation on one machine:

* ``in-process``   -- :func:`verify.run.catalog.run_claims` serially in this process (what ``--workers 1``
  does without ``--impl``);
* ``isolated-1``   -- the same claims on an :class:`~verify.run.pool.IsolatedPool` of one worker process (what
  every ``--impl`` run does, and ``--workers 1`` with ``isolate=True``): the worker's start (imports), JSON
  both ways, the per-claim clean-up of the worker's session;
* ``isolated-N``   -- on ``N`` = the CPUs available (the default ``rnn-verify run``).

It prints the wall time of each, the ratio isolated-1 / in-process (the overhead isolation costs) and whether
the verdicts agree (they must: isolation changes where a check runs, never what it decides). Numbers belong in
the closing note and the CHANGELOG, not in a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from verify.bench._timing import machine, refuse_foreign_json
from verify.config import RunConfig
from verify.files import write_file_atomic
from verify.run.catalog import run_claims
from verify.run.check import select_claims
from verify.run.sweep.executors import available_cpus

TOOL = "verify.bench.isolation"


def _once(name: str, claims: list[Any], config: RunConfig, workers: int, isolate: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    results = run_claims(claims, config, workers=workers, isolate=isolate)
    wall = time.perf_counter() - t0
    verdicts = {r.claim_id: r.verdict.value for r in results}
    print(f"  {name:<12} {wall:7.1f} s  ({sum(v == 'PASS' for v in verdicts.values())} PASS)", flush=True)
    return {"config": name, "wall_s": wall, "verdicts": verdicts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {TOOL}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--claims", nargs="+", default=None, help="claim ids or globs (default: the profile's)")
    ap.add_argument("--profile", default="ci", choices=("ci", "full"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="alternating repeats of each configuration")
    ap.add_argument("--json", type=Path, default=None, help="also write the measurements to this JSON file")
    args = ap.parse_args(argv)
    if args.json is not None:
        refuse_foreign_json(args.json, TOOL)
    claims = [c for c in select_claims(args.claims, profile=args.profile) if args.profile in c.profiles]
    claims = [c for c in claims if not c.id.startswith("device.")]  # CUDA claims: not what is measured here
    config = RunConfig(profile=args.profile, seed=args.seed)
    cpus = available_cpus()
    print(f"{len(claims)} claims, profile {args.profile}, seed {args.seed}; {machine()}; {cpus} CPUs", flush=True)
    rows: list[dict[str, Any]] = []
    for _ in range(max(1, args.repeats)):
        rows.append(_once("in-process", claims, config, 1, False))
        rows.append(_once("isolated-1", claims, config, 1, True))
        if cpus > 1:
            rows.append(_once(f"isolated-{cpus}", claims, config, cpus, True))

    def best(name: str) -> float:
        return float(min(r["wall_s"] for r in rows if r["config"] == name))

    ratio = best("isolated-1") / best("in-process")
    same = all(r["verdicts"] == rows[0]["verdicts"] for r in rows)
    print(f"isolation overhead (isolated-1 / in-process, best of {args.repeats}): {ratio:.3f}")
    print(f"verdicts identical across configurations: {same}")
    if args.json is not None:
        doc = {"tool": TOOL, "machine": machine(), "cpus": cpus, "claims": [c.id for c in claims], "rows": rows,
               "overhead_ratio": ratio, "verdicts_identical": same}  # fmt: skip
        write_file_atomic(args.json, (json.dumps(doc, indent=2) + "\n").encode())
    return 0 if same else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
