"""Benchmark of the UORO claim group and false-fail calibration of its statistical checks.

``python -m verify.bench.uoro_statistics [--profile ci] [--seed 0]``
    runs every ``uoro.*`` claim once (as the CI gate does), prints per claim the
    verdict, wall and CPU seconds, draws used vs the fixed-sample planner's plan, the
    certified bias bound, and the totals next to the 45 s target.

``python -m verify.bench.uoro_statistics --calibrate 1000 [--alpha 1e-3] [--what unbiased,variance,conformance]``
    false-fail calibration: runs the FAIL side of the statistical checks on
    *correct* estimators over N seeds and prints the observed FAIL rate with its
    Clopper–Pearson 95 % upper bound, which must be consistent with α:

    * ``unbiased``    -- the sequential unbiasedness test of toolkit UORO (Elman-tanh
      n = 2, T = 3: g̃_2, g̃_3, Σ g̃, s̃⊗θ̃ at t = 2, 3) with a budget of 10⁴ draws
      (PASS is out of reach at that budget; what is counted is FAIL, whose
      time-uniform rate over *all* looks is ≤ α);
    * ``variance``    -- ``uoro.variance-matches-algorithm-1`` (two-sample tests);
    * ``conformance`` -- ``uoro.algorithm-1-conformance`` (noise-law binomial tests);
    * ``rank``, ``reinforce``, ``growth`` -- the corresponding checks (slower).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

from theory.catalog import all_claims
from verify.bench._timing import machine
from verify.checks.uoro_statistics import _case, _options, _unbiased_family
from verify.estimators.uoro import UORO
from verify.results import RunConfig, Verdict
from verify.runner import run_check
from verify.stats import clopper_pearson, clopper_pearson_upper

TARGET_S = 45.0


def run_group(profile: str, seed: int) -> float:
    claims = [c for cid, c in all_claims().items() if cid.startswith("uoro.")]
    print(f"machine: {machine()}")
    print(f"UORO claim group, profile {profile}, seed {seed}: {len(claims)} claims")
    head = f"{'claim':36s} {'verdict':12s} {'wall s':>7s} {'cpu s':>7s} {'used':>9s} {'planned':>9s} {'ratio':>6s}"
    head += "  statistic vs threshold"
    print(head)
    tot_w = tot_c = 0.0
    used_all = planned_all = 0
    for claim in claims:
        w0, c0 = time.perf_counter(), time.process_time()
        res = run_check(claim, RunConfig(profile=profile, seed=seed))
        w, c = time.perf_counter() - w0, time.process_time() - c0
        tot_w += w
        tot_c += c
        used = res.samples_used
        planned = res.samples_planned
        ratio = f"{used / planned:.2f}" if used and planned else "-"
        if used and planned:
            used_all += used
            planned_all += planned
        stat = "" if res.statistic is None else f"{res.statistic:.4g} {res.comparison} {res.threshold:.4g}"
        print(
            f"{claim.id:36s} {res.verdict.value:12s} {w:7.1f} {c:7.1f} {used or '-':>9} {planned or '-':>9} "
            f"{ratio:>6s}  {stat}"
        )
        if res.verdict is not Verdict.PASS:
            print(f"    {res.summary[:400]}")
    print(f"total: wall {tot_w:.1f} s, cpu {tot_c:.1f} s (target <= {TARGET_S:.0f} s)")
    if planned_all:
        print(
            f"sequential tests: {used_all} draws used vs {planned_all} planned by the fixed-sample planner "
            f"(ratio {used_all / planned_all:.2f})"
        )
    return tot_w


def _unbiased_once(seed: int, alpha: float) -> Verdict:
    cfg = RunConfig(seed=seed, options=(("alpha", alpha),))
    case = _case("elman-tanh", 2, 3, cfg, salt=900)
    res = _unbiased_family(UORO(), case, (2, 3), _options(cfg), cfg.generator(901), 10_000)
    return res.verdict


def _check_once(claim_id: str) -> Callable[[int, float], Verdict]:
    def run(seed: int, alpha: float) -> Verdict:
        claim = all_claims()[claim_id]
        cfg = RunConfig(seed=seed, options=(("alpha", alpha), ("controls", False)))
        return run_check(claim, cfg).verdict

    return run


CALIBRATIONS: dict[str, Callable[[int, float], Verdict]] = {
    "unbiased": _unbiased_once,
    "variance": _check_once("uoro.variance-matches-algorithm-1"),
    "conformance": _check_once("uoro.algorithm-1-conformance"),
    "rank": _check_once("uoro.rank-variance"),
    "reinforce": _check_once("uoro.reinforce-link"),
    "growth": _check_once("uoro.variance-growth"),
}


def calibrate(n: int, alpha: float, what: list[str], first_seed: int) -> dict[str, tuple[int, int]]:
    print(f"machine: {machine()}")
    print(f"false-fail calibration over {n} seeds ({first_seed}..{first_seed + n - 1}), alpha = {alpha:g}")
    out = {}
    for name in what:
        fn = CALIBRATIONS[name]
        fails = other = 0
        t0 = time.perf_counter()
        for s in range(first_seed, first_seed + n):
            v = fn(s, alpha)
            fails += v is Verdict.FAIL
            other += v is Verdict.INCONCLUSIVE
        lo, hi = clopper_pearson(fails, n, 0.95)
        up = clopper_pearson_upper(fails, n, 0.95)
        consistent = lo <= alpha
        print(
            f"{name:12s} FAIL {fails}/{n} = {fails / n:.4f}; Clopper-Pearson 95% two-sided [{lo:.4f}, {hi:.4f}], "
            f"one-sided upper {up:.4f}; alpha = {alpha:g} {'consistent' if consistent else 'NOT consistent'} "
            f"({other} inconclusive; {time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        out[name] = (fails, n)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="ci", choices=("ci", "full"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calibrate", type=int, default=0, metavar="N", help="false-fail calibration over N seeds")
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--what", default="unbiased,variance,conformance")
    ap.add_argument("--first-seed", type=int, default=1000)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.calibrate:
        calibrate(args.calibrate, args.alpha, [w.strip() for w in args.what.split(",") if w.strip()], args.first_seed)
    else:
        run_group(args.profile, args.seed)


if __name__ == "__main__":
    main()
