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

Calibration cells of issue 39 (``--cells``; both sides at α = β = 1e-3: in an unbiased cell a FAIL is a false FAIL,
in a ``biased-*`` cell -- ‖E ĝ − g‖ = bias·δ‖g‖, the FAIL side's direction and Hotelling tests off as in
:func:`verify.stats.calibration.options`, so that the certificate alone is measured -- a PASS is a false certificate):

* ``biased-pareto1.5`` -- ``pareto1.5`` with a bias 1.01·δ‖g‖ along a random direction;
* ``biased-shared-offset`` -- ``shared-offset`` (offset s.d. 0.03 per call) with a bias 1.01·δ‖g‖;
* ``scale1e-300-cell`` / ``biased-scale1e-170`` -- 100 % noise at 1e-300 (unbiased) and a bias 1.01·δ‖g‖ at 1e-170;
* ``near-singular-p500`` -- p = 500 (dense mode), Gaussian with a random rotation and eigenvalues geometric from 1
  to 1e-16 (a near-singular covariance), ‖g‖ set so that the planner asks for ≈ 4000 draws;
* ``one-noisy-1e6`` -- 22 coordinates N(0, 1), coordinate 0 N(0, 10¹²) (10⁶ times noisier), ‖g‖ set likewise;
* ``biased-exactly-delta`` -- Gaussian (cond 1e4, rotated), bias exactly δ‖g‖ (the certificate claims < δ‖g‖);
* ``biased-low-variance`` -- Gaussian (cond 1e8, rotated), bias 1.01·δ‖g‖ along the least-variance eigen-direction;
* ``drift`` -- Gaussian whose scale drifts with the draw's index within each call (s.d. 0.5 → 1.5) and whose
  skew drifts with the call (the first call's draws Gaussian, then a growing share of centred exponential noise):
  unbiased, not identically distributed.

Each row: verdict counts over the seeds, crashes (an exception is a crash), the error rate with its two-sided
Clopper–Pearson 95 % interval, and one reason seen.

The published calibration (:func:`verify.stats.calibration.issue39_cells`, class ``premises`` of
``reports/calibration/calibration.json``) holds these classes as cells of its own shapes; ``--premise-table JSON ...``
prints its issue-39 rows with their Clopper–Pearson bounds, the seeds that would show ≤ α and each row's replay
command. ``--cells`` runs the issue-39 calibration cells above (``--scale`` multiplies their seeds too),
``--cells-table`` prints them with one-sided Clopper–Pearson 95 % upper bounds; ``--calibration`` reruns cells of
:func:`verify.stats.calibration.suite` (the same seeds as ``reports/calibration/``, fewer of them) at level 0.05 for
the three mechanisms; ``--table`` on two such files prints the false-FAIL / PASS counts before and after side by
side.
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
        biased: bool = False,
        factory: Callable[[], Sampler] | None = None,
    ) -> None:
        self.name, self.sampler, self.truth, self.level, self.seeds, self.error = (
            name, sampler, truth, level, seeds, error,
        )  # fmt: skip
        self.calls, self.event_floor, self.reference_norm = calls, event_floor, reference_norm
        #: a biased cell: the error is a PASS (false certificate); ``factory``: a fresh sampler per run (stateful)
        self.biased, self.factory = biased, factory


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


def _rotation(p: int, gen: torch.Generator) -> torch.Tensor:
    q: torch.Tensor = torch.linalg.qr(torch.randn(p, p, generator=gen, dtype=F64))[0]
    return q


def _planned_norm(sd: torch.Tensor, plan: int = 4000) -> float:
    """‖g‖ for which the planner asks for ≈ ``plan`` draws at α = β = 1e-3, δ = 0.1 (as the calibration suite)."""
    from verify.stats.planner import plan_samples

    pl = plan_samples(delta=DELTA, alpha=1e-3, beta=1e-3, truth_norm=1.0, eigenvalues=sd * sd)
    return math.sqrt(pl.samples / plan)


def gauss_cell(
    p: int, sd: torch.Tensor, *, rotated: bool, bias: float = 0.0, bias_dir: str = "spread", seed: int = 39
) -> tuple[torch.Tensor, Sampler]:
    """(truth, sampler): X = g + b + Q diag(sd) z, z ~ N(0, I); ‖b‖ = bias·δ‖g‖ along a random direction
    (``spread``) or the least-variance eigen-direction (``bottom``)."""
    gen = torch.Generator().manual_seed(seed)
    q = _rotation(p, gen) if rotated else torch.eye(p, dtype=F64)
    g = torch.randn(p, generator=gen, dtype=F64)
    g = g / torch.linalg.vector_norm(g) * _planned_norm(sd)
    v = torch.randn(p, generator=gen, dtype=F64) if bias_dir == "spread" else q[:, int(torch.argmin(sd))].clone()
    b = v / torch.linalg.vector_norm(v) * bias * DELTA * float(torch.linalg.vector_norm(g))
    mean = g + b

    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
        x: torch.Tensor = mean + (torch.randn(m, p, generator=rng, dtype=F64) * sd) @ q.T
        return x

    return g, sampler


def _spread_bias(scale: float = 1.0, factor: float = 1.01) -> torch.Tensor:
    """A bias of norm factor·δ·‖g‖ (‖g‖ = GNORM·scale: formed at scale 1, then scaled, so that no norm underflows)."""
    v = torch.randn(P, generator=torch.Generator().manual_seed(391), dtype=F64)
    b: torch.Tensor = v / torch.linalg.vector_norm(v) * (factor * DELTA * GNORM) * scale
    return b


def drift_factory(g: torch.Tensor) -> Sampler:
    """A fresh drifting sampler (state: the call count): within a call the s.d. grows 0.5 → 1.5 with the index; call
    c mixes a share c/(c+1) of centred Exp(1) noise into Gaussian noise (mean 0 throughout: unbiased)."""
    state = {"calls": 0}

    def sampler(m: int, rng: torch.Generator) -> torch.Tensor:
        c = state["calls"]
        state["calls"] = c + 1
        sd = torch.linspace(0.5, 1.5, m, dtype=F64)[:, None]
        z = torch.randn(m, g.numel(), generator=rng, dtype=F64)
        e = -torch.log1p(-torch.rand(m, g.numel(), generator=rng, dtype=F64)) - 1.0
        w = c / (c + 1.0)
        return g + sd * (math.sqrt(1.0 - w) * z + math.sqrt(w) * e)

    return sampler


def cells(scale: float) -> list[Case]:
    """Issue 39's calibration cells (module docstring), seeds multiplied by ``scale``."""

    def n(fixed: int, planned: int, sequential: int) -> dict[str, int]:
        return {
            k: max(1, round(v * scale)) for k, v in (("fixed", fixed), ("planned", planned), ("sequential", sequential))
        }

    g = _truth()
    b = _spread_bias()
    out = [
        Case("biased-pareto1.5", pareto_sampler(g + b, 1.5), g, 1e-3, n(1000, 200, 200), "PASS", biased=True),
        Case(
            "biased-shared-offset", offset_sampler(g + b, OFFSET_SD), g, 1e-3, n(1000, 200, 200), "PASS",
            calls=CALLS, biased=True,
        ),
    ]  # fmt: skip
    g300 = _truth(1e-300)
    out.append(Case("scale1e-300-cell", scaled_sampler(g300, 1e-300), g300, 1e-3, n(1000, 200, 200), "FAIL"))
    g170 = _truth(1e-170)
    b170 = _spread_bias(1e-170)
    out.append(
        Case("biased-scale1e-170", scaled_sampler(g170 + b170, 1e-170), g170, 1e-3, n(1000, 200, 200), "PASS",
             biased=True)
    )  # fmt: skip
    sd500 = 1e-16 ** (torch.arange(500, dtype=F64) / (2 * 499))
    g500, s500 = gauss_cell(500, sd500, rotated=True)
    out.append(Case("near-singular-p500", s500, g500, 1e-3, n(100, 20, 20), "FAIL"))
    sd1 = torch.ones(P, dtype=F64)
    sd1[0] = 1e6
    g1, s1 = gauss_cell(P, sd1, rotated=False)
    out.append(Case("one-noisy-1e6", s1, g1, 1e-3, n(1000, 200, 200), "FAIL"))
    sd4 = 1e4 ** (-torch.arange(P, dtype=F64) / (2 * (P - 1)))
    g4, s4 = gauss_cell(P, sd4, rotated=True, bias=1.0)
    out.append(Case("biased-exactly-delta", s4, g4, 1e-3, n(1000, 200, 200), "PASS", biased=True))
    sd8 = 1e8 ** (-torch.arange(P, dtype=F64) / (2 * (P - 1)))
    g8, s8 = gauss_cell(P, sd8, rotated=True, bias=1.01, bias_dir="bottom")
    out.append(Case("biased-low-variance", s8, g8, 1e-3, n(1000, 200, 200), "PASS", biased=True))
    out.append(Case("drift", drift_factory(g), g, 1e-3, n(1000, 200, 200), "FAIL", factory=lambda: drift_factory(g)))
    return out


def run_case(case: Case, mechanism: str, seed: int) -> tuple[str, str]:
    """(verdict or 'crash: <exception>', reason) of one run."""
    gen = torch.Generator().manual_seed(seed)
    opts = TestOptions(alpha=case.level, beta=case.level, delta=DELTA, event_floor=case.event_floor)
    if case.biased:  # the certificate alone (verify.stats.calibration.options): every wrong PASS is counted
        opts = TestOptions(
            alpha=case.level, beta=case.level, delta=DELTA, event_floor=case.event_floor, directions=0,
            hotelling=False,
        )  # fmt: skip
    kw: dict[str, Any] = {} if case.reference_norm is None else {"reference_norm": case.reference_norm}
    sampler = case.factory() if case.factory is not None else case.sampler
    budget = MAX_SAMPLES // 2 if case.biased else MAX_SAMPLES
    try:
        if mechanism == "fixed":
            per = FIXED_M // case.calls
            x = torch.cat([sampler(per, gen) for _ in range(case.calls)])
            res = fixed_sample_test(x, case.truth, options=opts, generator=gen, **kw)
        elif mechanism == "planned":
            res = planned_test(sampler, case.truth, options=opts, generator=gen, max_samples=budget, pilot=FIRST, **kw)
        else:
            res = sequential_test(
                sampler, case.truth, options=opts, generator=gen, max_samples=budget, first=FIRST, **kw
            )
    except Exception as exc:
        return f"crash: {type(exc).__name__}", str(exc)[:200]
    return res.verdict.value, res.summary()[:400]


def run(scale: float, only: list[str] | None, *, issue39_cells: bool = False) -> list[dict[str, Any]]:
    rows = []
    for case in cells(scale) if issue39_cells else cases(scale):
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
                "biased": case.biased,
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


def cells_table(rows: list[dict[str, Any]]) -> str:
    """The issue-39 cells: counts, the error (false FAIL or false certificate; a crash counts as one) and its
    one-sided Clopper–Pearson 95 % upper bound against the level."""
    from verify.stats.binomial import clopper_pearson_upper

    lines = [
        "| cell | side | level | mechanism | seeds | FAIL / PASS / INCONCLUSIVE | crashes | errors | rate | "
        "CP95 upper | rate <= level | CP95 <= level | s | one reason |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c, k = r["counts"], r["seeds"]
        crash = c.get("crash", 0)
        err = c.get("PASS", 0) if r.get("biased") else c.get("FAIL", 0)
        err += crash
        hi = clopper_pearson_upper(err, k, 0.95)
        side = "false certificate" if r.get("biased") else "false FAIL"
        why = r["reasons"].get("PASS" if r.get("biased") else "FAIL") or r["reasons"].get("INCONCLUSIVE") or ""
        why = why.replace("||", "‖").replace("|", "/")[:160]
        lines.append(
            f"| {r['case']} | {side} | {r['level']:g} | {r['mechanism']} | {k} | {c.get('FAIL', 0)} / "
            f"{c.get('PASS', 0)} / {c.get('INCONCLUSIVE', 0)} | {crash} | {err} | {err / k:.3g} | {hi:.2g} | "
            f"{'yes' if err / k <= r['level'] else '**NO**'} | {'yes' if hi <= r['level'] else 'no'} | "
            f"{r['seconds']:g} | {why} |"
        )
    return "\n".join(lines)


def seeds_to_show(errors: int, level: float, conf: float = 0.95) -> int:
    """The fewest seeds n with a one-sided Clopper–Pearson ``conf`` upper bound on errors / n at most ``level``,
    if no further error occurs (0 errors at 1e-3: 2995)."""
    from verify.stats.binomial import clopper_pearson_upper

    lo, hi = max(errors, 1), max(errors, 1)
    while clopper_pearson_upper(errors, hi, conf) > level:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if clopper_pearson_upper(errors, mid, conf) > level else (lo, mid)
    return hi


def premise_calibration_table(paths: list[str]) -> str:
    """Issue 39's cells in published calibration reports (``calibration.json`` of
    ``python -m verify.bench.uoro_statistics --what adversarial``; the class ``premises``): per row the counts, the
    error (false FAIL or false certificate), its one-sided Clopper–Pearson 95 % upper bound, whether that bound
    shows the rate ≤ level, the seeds that would show it (no further error), and the command that replays the row."""
    from verify.stats.calibration import KNOWN_GAPS, ScenarioResult, issue39_cells

    names = [c.name for c in issue39_cells()]
    rows: list[tuple[ScenarioResult, int]] = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        first = int(data["seeds"][0])
        rows += [(ScenarioResult.from_data(r), first) for r in data["cells"] if r["cell"] in names]
    rows.sort(key=lambda x: (names.index(x[0].cell), x[0].level, x[0].mechanism, x[1]))
    lines = [
        "| cell | error | level | mechanism | seeds | FAIL / PASS / INCONCLUSIVE | errors | rate | CP95 upper | "
        "≤ level shown | seeds to show it | replay |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r, first in rows:
        kind = "false certificate" if r.biased else "false FAIL"
        shown = "yes" if r.resolved else ("**NO** (known gap)" if r.cell in KNOWN_GAPS and not r.ok else "not yet")
        need = "" if r.resolved else (f"{seeds_to_show(r.errors, r.level):,}" if r.ok else "—")
        seeds = f"{r.seeds} ({first}..{first + r.seeds - 1})"
        replay = (
            f"`python -m verify.bench.uoro_statistics --what adversarial --calibrate {r.seeds} --first-seed {first} "
            f"--levels {r.level:g} --mechanisms {r.mechanism} --cells {r.cell} --out DIR`"
        )
        lines.append(
            f"| {r.cell} | {kind} | {r.level:g} | {r.mechanism} | {seeds} | {r.fails} / {r.passes} / "
            f"{r.inconclusive} | {r.errors} | {r.rate:.2g} | {r.cp_upper:.2g} | {shown} | {need} | {replay} |"
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
    ap.add_argument("--cells", action="store_true", help="run issue 39's calibration cells (both sides, α = 1e-3)")
    ap.add_argument("--cells-table", metavar="JSON", help="print the table of a --cells run")
    ap.add_argument(
        "--premise-table", nargs="+", metavar="JSON", help="print issue 39's cells in calibration.json reports"
    )
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.table:
        with open(a.table[0]) as f0, open(a.table[1]) as f1:
            print(table(json.load(f0), json.load(f1)))
        return
    if a.premise_table:
        print(premise_calibration_table(a.premise_table))
        return
    if a.cells_table:
        with open(a.cells_table) as f:
            print(cells_table(json.load(f)))
        return
    if a.calibration:
        rows = run_calibration(a.calibration, 0.05)
    else:
        rows = run(a.scale, a.cases.split(",") if a.cases else None, issue39_cells=a.cells)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
