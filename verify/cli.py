"""Command-line interface ``rnn-verify`` (also ``python -m verify``).

Exit codes: 0 every selected claim PASSed (SKIPPED allowed, and listed); 1 a claim
FAILed (or was INCONCLUSIVE under ``--fail-on inconclusive``); 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from theory.catalog import Claim
from verify.errors import VerifyError
from verify.results import PROFILES, CheckResult, RunConfig, Verdict
from verify.runner import run_claims, select_claims

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rnn-verify",
        description="Check online recurrent learning algorithms against exact references and the papers' claims.",
        epilog="exit codes: 0 all PASS (SKIPPED allowed), 1 a FAIL (or INCONCLUSIVE with --fail-on "
        "inconclusive), 2 usage or input error",
    )
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="list the claim catalog")
    ls.add_argument("--json", action="store_true", help="print the catalog as JSON")
    run = sub.add_parser("run", help="run claims and print their verdicts")
    run.add_argument("--profile", choices=PROFILES, default="ci", help="ci: quick CI gate; full: larger sizes")
    run.add_argument("--claims", nargs="+", metavar="ID", help="claim ids or globs (e.g. 'uoro.*')")
    run.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    run.add_argument("--json", metavar="FILE", help="write results as JSON to FILE")
    run.add_argument(
        "--fail-on",
        choices=("fail", "inconclusive"),
        default="fail",
        help="also exit 1 on INCONCLUSIVE with 'inconclusive'",
    )
    return p


def _cmd_list(args: argparse.Namespace) -> int:
    claims = select_claims()
    if args.json:
        print(json.dumps([c.__dict__ for c in claims], indent=2))
        return EXIT_OK
    for c in claims:
        print(f"{c.id:<34} {c.paper:<40} {c.where[:40]:<40} [{','.join(c.profiles)}]")
        print(f"    {c.title}")
    return EXIT_OK


def _progress(event: str, claim: Claim, result: CheckResult | None) -> None:
    if event == "start":
        if sys.stderr.isatty():
            print(f"  running {claim.id} ...", file=sys.stderr, end="\r", flush=True)
        return
    assert result is not None
    print(f"{result.verdict.value:<13} {claim.id:<34} {result.wall_time:7.1f}s  {result.summary}", flush=True)


def _cmd_run(args: argparse.Namespace) -> int:
    config = RunConfig(profile=args.profile, seed=args.seed)
    claims = select_claims(args.claims, profile=args.profile)
    results = run_claims(claims, config, progress=_progress)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([r.to_dict() for r in results], fh, indent=2)
    counts = {v: sum(r.verdict is v for r in results) for v in Verdict}
    print("summary: " + ", ".join(f"{counts[v]} {v.value}" for v in Verdict))
    skipped = [r for r in results if r.verdict is Verdict.SKIPPED]
    for r in skipped:
        print(f"  SKIPPED {r.claim_id}: {r.reason}")
    bad = counts[Verdict.FAIL] + (counts[Verdict.INCONCLUSIVE] if args.fail_on == "inconclusive" else 0)
    return EXIT_FAIL if bad else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.command == "list":
            return _cmd_list(args)
        return _cmd_run(args)
    except VerifyError as exc:
        print(f"rnn-verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
