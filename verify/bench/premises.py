"""Issue 39: the engine's premises on adversarial draws, seed after seed, through the public API only.

    python -m verify.bench.premises --json after.json
    PYTHONPATH=<older checkout> python -m verify.bench.premises --json before.json   # the same cases, older engine
    python -m verify.bench.premises --table before.json after.json                  # the before/after table

Cases (p = 22, ‖g‖ = 10, δ = 0.1; fixed: 2000 draws; planned: pilot 1000, ≤ 30000; sequential: first 1000,
≤ 30000 -- the shapes of ``reports/calibration/``):

* ``pareto1.5`` -- coordinate 0 a centred Pareto(1.5) with scale x_m = 0.3 (infinite variance, right-skewed; at
  that scale no single draw dominates the total scatter), 21 N(0, 1): unbiased.
  At α = β = 1e-3 a FAIL is a false alarm; a PASS is a certificate resting on a failed premise (variance
  infinite), counted too.
* ``gauss22`` -- the same with coordinate 0 N(0, 1) as well: the control (the premises hold; FAILs ≤ α).
* ``shared-offset`` -- every sampler call adds one offset o ~ N(0, 0.03² I) to all its draws (a batched user
  sampler with one random start per call): unbiased over calls, dependent within one. At α = 0.05 a FAIL is a
  false alarm. The fixed mechanism gets its 2000 draws as 8 calls of 250 stacked in call order.
* ``shared-offset-0`` -- the same sampler with o = 0 (independent draws): the control.
* ``scale<s>`` -- g and 100 % noise (N(0, I)·‖g‖/√p) multiplied by s = 1e-155, 1e-170, 1e-300: the verdicts must
  be those at s = 1 (``scale1``), never a crash and never a FAIL from underflow; ``scale1e-170-declared`` adds
  ``event_floor`` = 1 and ``reference_norm`` = ‖g‖.
* ``float16`` / ``bfloat16`` -- draws in that dtype with noise 100 % of ‖g‖: no crash; the reason is reported.

Each row: verdict counts over the seeds, crashes (an exception is a crash), the error rate with its two-sided
Clopper–Pearson 95 % interval, and one reason seen.

``--calibration`` reruns cells of :func:`verify.stats.calibration.suite` (the same seeds as
``reports/calibration/``, fewer of them) at level 0.05 for the three mechanisms; ``--table`` on two such files
prints the false-FAIL / PASS counts before and after side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from typing import Any

import torch
from scipy import stats

from verify.stats import TestOptions, fixed_sample_test, planned_test, sequential_test

F64 = torch.float64
P = 22
GNORM = 10.0
DELTA = 0.1
FIXED_M = 2000
FIRST = 1000
MAX_SAMPLES = 30_000
OFFSET_SD = 0.03
PARETO_SCALE = 0.3
CALLS = 8

Sampler = Callable[[int, torch.Generator], torch.Tensor]


def _truth(scale: float = 1.0) -> torch.Tensor:
    return torch.full((P,), scale * GNORM / math.sqrt(P), dtype=F64)


def _pareto(m: int, gen: torch.Generator, a: float = 1.5) -> torch.Tensor:
    u = torch.rand(m, generator=gen, dtype=F64)
    return PARETO_SCALE * (u.pow(-1.0 / a) - a / (a - 1.0))  # Pareto(a, x_m) minus its mean a x_m/(a-1)


def pareto_sampler(g: torch.Tensor, a: float | None) -> Sampler:
    def sampler(m: int, gen: torch.Generator) -> torch.Tensor:
        z = torch.randn(m, P, generator=gen, dtype=F64)
        if a is not None:
            z[:, 0] = _pareto(m, gen, a)
        return g + z

    return sampler


def offset_sampler(g: torch.Tensor, sd: float) -> Sampler:
    def sampler(m: int, gen: torch.Generator) -> torch.Tensor:
        off = sd * torch.randn(P, generator=gen, dtype=F64)
        return g + off + torch.randn(m, P, generator=gen, dtype=F64)

    return sampler


def scaled_sampler(g: torch.Tensor, scale: float, dtype: torch.dtype = F64) -> Sampler:
    def sampler(m: int, gen: torch.Generator) -> torch.Tensor:
        z = torch.randn(m, P, generator=gen, dtype=F64) * (scale * GNORM / math.sqrt(P))
        return (g + z).to(dtype)

    return sampler


class Case:
    def __init__(
        self,
        name: str,
        sampler: Sampler,
        truth: torch.Tensor,
        level: float,
        seeds: dict[str, int],
        error: str,
        *,
        calls: int = 1,
        event_floor: float | None = None,
        reference_norm: float | None = None,
    ) -> None:
        self.name, self.sampler, self.truth, self.level, self.seeds, self.error = (
            name, sampler, truth, level, seeds, error,
        )  # fmt: skip
        self.calls, self.event_floor, self.reference_norm = calls, event_floor, reference_norm


def cases(scale: float) -> list[Case]:
    """The cases, seeds multiplied by ``scale``."""

    def n(fixed: int, planned: int, sequential: int) -> dict[str, int]:
        return {
            "fixed": max(1, round(fixed * scale)),
            "planned": max(1, round(planned * scale)),
            "sequential": max(1, round(sequential * scale)),
        }

    g = _truth()
    out = [
        Case("pareto1.5", pareto_sampler(g, 1.5), g, 1e-3, n(2000, 500, 500), "FAIL"),
        Case("gauss22", pareto_sampler(g, None), g, 1e-3, n(2000, 500, 500), "FAIL"),
        Case("shared-offset", offset_sampler(g, OFFSET_SD), g, 0.05, n(100, 100, 100), "FAIL", calls=CALLS),
        Case("shared-offset-0", offset_sampler(g, 0.0), g, 0.05, n(100, 100, 100), "FAIL", calls=CALLS),
    ]
    for s in (1.0, 1e-155, 1e-170, 1e-300):
        gs = _truth(s)
        out.append(Case(f"scale{s:g}", scaled_sampler(gs, s), gs, 1e-3, n(20, 10, 10), "FAIL"))
    gs = _truth(1e-170)
    out.append(
        Case(
            "scale1e-170-declared", scaled_sampler(gs, 1e-170), gs, 1e-3, n(20, 10, 10), "FAIL",
            event_floor=1.0, reference_norm=1e-170 * GNORM,
        )
    )  # fmt: skip
    for dt in (torch.float16, torch.bfloat16):
        out.append(Case(str(dt).split(".")[-1], scaled_sampler(g, 1.0, dt), g, 1e-3, n(5, 3, 3), "FAIL"))
    return out


def run_case(case: Case, mechanism: str, seed: int) -> tuple[str, str]:
    """(verdict or 'crash: <exception>', reason) of one run."""
    gen = torch.Generator().manual_seed(seed)
    opts = TestOptions(alpha=case.level, beta=case.level, delta=DELTA, event_floor=case.event_floor)
    kw: dict[str, Any] = {} if case.reference_norm is None else {"reference_norm": case.reference_norm}
    try:
        if mechanism == "fixed":
            per = FIXED_M // case.calls
            x = torch.cat([case.sampler(per, gen) for _ in range(case.calls)])
            res = fixed_sample_test(x, case.truth, options=opts, generator=gen, **kw)
        elif mechanism == "planned":
            res = planned_test(
                case.sampler, case.truth, options=opts, generator=gen, max_samples=MAX_SAMPLES, pilot=FIRST, **kw
            )
        else:
            res = sequential_test(
                case.sampler, case.truth, options=opts, generator=gen, max_samples=MAX_SAMPLES, first=FIRST, **kw
            )
    except Exception as exc:
        return f"crash: {type(exc).__name__}", str(exc)[:200]
    return res.verdict.value, res.summary()[:400]


def run(scale: float, only: list[str] | None) -> list[dict[str, Any]]:
    rows = []
    for case in cases(scale):
        if only and case.name not in only:
            continue
        for mech, k in case.seeds.items():
            t0 = time.perf_counter()
            counts: dict[str, int] = {}
            reasons: dict[str, str] = {}
            for s in range(k):
                v, why = run_case(case, mech, s)
                key = "crash" if v.startswith("crash") else v
                counts[key] = counts.get(key, 0) + 1
                reasons.setdefault(key, why if key != "crash" else f"{v}: {why}")
            row = {
                "case": case.name,
                "mechanism": mech,
                "level": case.level,
                "seeds": k,
                "counts": counts,
                "reasons": reasons,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(json.dumps({x: row[x] for x in ("case", "mechanism", "seeds", "counts", "seconds")}), flush=True)
    return rows


def cp(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    c = row["counts"]
    n = row["seeds"]
    fail, crash = c.get("FAIL", 0), c.get("crash", 0)
    if row.get("biased"):  # a biased calibration cell: the error is a PASS (a false certificate)
        fail = c.get("PASS", 0)
    lo, hi = cp(fail + crash, n)
    parts = [f"{c.get(v, 0)}/{c.get('PASS', 0)}/{c.get('INCONCLUSIVE', 0)}" for v in ("FAIL",)]
    what = "false PASS" if row.get("biased") else "FAIL+crash"
    return f"{parts[0]} crash {crash}; {what} {(fail + crash) / n:.3g} [{lo:.2g}, {hi:.2g}]"


def table(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    key = {(r["case"], r["mechanism"]): r for r in before}
    lines = [
        "| case | level | mechanism | seeds | before: FAIL/PASS/INCONCLUSIVE, crashes; error rate [CP95] "
        "| after: FAIL/PASS/INCONCLUSIVE, crashes; error rate [CP95] | after: one reason (INCONCLUSIVE or FAIL) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in after:
        b = key.get((r["case"], r["mechanism"]))
        why = r["reasons"].get("INCONCLUSIVE") or r["reasons"].get("FAIL") or r["reasons"].get("crash") or ""
        why = why.split("estimate: ", 1)[-1] if why.startswith("INCONCLUSIVE") else why
        why = why.replace("||", "‖").replace("|", "/")[:260]
        lines.append(
            f"| {r['case']} | {r['level']:g} | {r['mechanism']} | {r['seeds']} | {_cell(b)} | {_cell(r)} | {why} |"
        )
    return "\n".join(lines)


#: the calibration cells rerun before/after (the smoke cells and one of each law and corner)
CALIBRATION_CELLS = (
    "gauss-cond1e+16-rot", "t3-cond1e+08-rot", "rank-half-rot", "roundoff-bernoulli", "exact", "gauss-p1000",
    "biased-gauss-top", "t3-cond1e+00-rot", "scale-mixture-cond1e+00-rot", "bounded-cond1e+16-rot",
    "lognormal1-rot", "exponential-rot", "lattice-rot", "rare1e-03-half-unbiased-axis", "rare1e-02-biased-radius",
)  # fmt: skip


def run_calibration(seeds: int, level: float) -> list[dict[str, Any]]:
    from verify.stats.calibration import MECHANISMS, run_scenario, suite

    cells = {c.name: c for c in suite()}
    rows = []
    for name in CALIBRATION_CELLS:
        for mech in MECHANISMS:
            r = run_scenario(cells[name], level, mech, range(seeds))
            row = {
                "case": f"calibration:{name}",
                "mechanism": mech,
                "level": level,
                "seeds": seeds,
                "biased": r.biased,
                "counts": {"FAIL": r.fails, "PASS": r.passes, "INCONCLUSIVE": r.inconclusive},
                "reasons": {},
                "seconds": round(r.wall_s, 1),
            }
            rows.append(row)
            print(json.dumps({x: row[x] for x in ("case", "mechanism", "seeds", "counts", "seconds")}), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case's seed count")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"), help="print the before/after table")
    ap.add_argument("--calibration", type=int, metavar="SEEDS", help="rerun CALIBRATION_CELLS with this many seeds")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.table:
        with open(a.table[0]) as f0, open(a.table[1]) as f1:
            print(table(json.load(f0), json.load(f1)))
        return
    if a.calibration:
        rows = run_calibration(a.calibration, 0.05)
    else:
        rows = run(a.scale, a.cases.split(",") if a.cases else None)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
