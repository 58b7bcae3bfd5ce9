"""The estimators of issue 22 through the public engine, seed after seed: what a user would have seen.

    python -m verify.bench.rare_events --seeds 200

Prints, per estimator and mechanism, the verdict counts over the seeds and the error the issue reported:

* ``rare-biased``: the bias (2δ‖g‖) lives in an event of probability 1e-3; every other draw equals g.
  A PASS is a false certificate (before issue 22: about a quarter of the seeds through ``assert_unbiased``'s
  sequential test at the default δ).
* ``rare-unbiased``: the event pays an offset every other draw shows. A FAIL is a false alarm.
* ``lognormal2-p1`` / ``-p22`` / ``-rot``: unbiased lognormal (σ = 2) noise, every moment finite; at α = 1e-3
  a FAIL is a false alarm (before: 10-23 %).

Only the public API (``verify.stats``), so the same script runs against an older checkout for the "before"
numbers (``PYTHONPATH=<old checkout> python -m verify.bench.rare_events``).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import torch

from verify.stats import TestOptions, planned_test, sequential_test

F64 = torch.float64
P = 22
Q = 1e-3
DELTA = 0.02


def _rotation(seed: int) -> torch.Tensor:
    q: torch.Tensor = torch.linalg.qr(torch.randn(P, P, generator=torch.Generator().manual_seed(seed), dtype=F64))[0]
    return q


def estimators() -> dict[str, tuple[torch.Tensor, Callable[[int, torch.Generator], torch.Tensor], bool]]:
    """name -> (truth, sampler, biased)."""
    g = torch.randn(P, generator=torch.Generator().manual_seed(22), dtype=F64)
    v = torch.zeros(P, dtype=F64)
    v[-1] = 1.0
    gn = float(g.norm())
    rot = _rotation(7)
    var = math.exp(4.0)

    def rare_biased(m: int, rng: torch.Generator) -> torch.Tensor:
        hit = (torch.rand(m, 1, generator=rng, dtype=F64) < Q).to(F64)
        return g + hit * v * (2 * DELTA * gn / Q)

    def rare_unbiased(m: int, rng: torch.Generator) -> torch.Tensor:
        hit = (torch.rand(m, 1, generator=rng, dtype=F64) < Q).to(F64)
        return g - 0.5 * gn * v + hit * v * (0.5 * gn / Q)

    def lognormal(p: int, rotate: bool) -> Callable[[int, torch.Generator], torch.Tensor]:
        def draw(m: int, rng: torch.Generator) -> torch.Tensor:
            z = (torch.exp(2.0 * torch.randn(m, p, generator=rng, dtype=F64)) - math.sqrt(var)) / math.sqrt(
                var * (var - 1)
            )
            return g[:p] + (z @ rot.T if rotate else z) * 0.05 * gn

        return draw

    return {
        "rare-biased": (g, rare_biased, True),
        "rare-unbiased": (g, rare_unbiased, False),
        "lognormal2-p1": (g[:1], lognormal(1, False), False),
        "lognormal2-p22": (g, lognormal(P, False), False),
        "lognormal2-rot": (g, lognormal(P, True), False),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--max-samples", type=int, default=20_000)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    opts = TestOptions(alpha=args.alpha, beta=args.alpha, delta=DELTA)
    print(f"{args.seeds} seeds, alpha = beta = {args.alpha:g}, delta = {DELTA}, at most {args.max_samples} draws")
    for name, (truth, sampler, biased) in estimators().items():
        for mech in ("sequential", "planned"):
            counts = {"FAIL": 0, "PASS": 0, "INCONCLUSIVE": 0}
            t0 = time.perf_counter()
            for s in range(args.seeds):
                gen = torch.Generator().manual_seed(s)
                if mech == "sequential":
                    res = sequential_test(sampler, truth, options=opts, generator=gen, max_samples=args.max_samples)
                else:
                    res = planned_test(sampler, truth, options=opts, generator=gen, max_samples=args.max_samples)
                counts[res.verdict.value] += 1
            err = counts["PASS"] if biased else counts["FAIL"]
            kind = "false certificates" if biased else "false FAILs"
            print(
                f"{name:16s} {mech:10s} FAIL {counts['FAIL']:4d}  PASS {counts['PASS']:4d}  INCONCLUSIVE "
                f"{counts['INCONCLUSIVE']:4d}   {kind}: {err}/{args.seeds}   ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
