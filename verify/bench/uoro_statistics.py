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

``python -m verify.bench.uoro_statistics --calibrate 1000 --what adversarial [--levels 1e-3,0.05] [--jobs 2]``
    the adversarial calibration suite of the statistics engine (:mod:`verify.stats.calibration`,
    issue 14): false-FAIL and false-certificate rates with Clopper–Pearson bounds for the fixed,
    planned and sequential mechanisms in every cell (ill-conditioned, rotated, rank-deficient,
    round-off-level, exact, heavy-tailed, p = 1 … 10⁴, biased at 1.01 δ‖g‖); writes
    ``reports/calibration/calibration.md`` and ``.json`` (``--out``) with the command line and
    the wall time. ``--cells a,b`` runs a subset, ``--mechanisms fixed,planned`` a subset of the mechanisms.

``--merge A,B --out DIR`` adds up reports over disjoint seed ranges (or cell subsets); ``--from-log LOG --out DIR``
recovers an interrupted run's completed rows; ``--compare BEFORE AFTER`` prints what moved; ``--figure DIR`` adds
one PNG per level and kind of error (each row's rate and CP95 upper bound against the level).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from theory.catalog import all_claims
from verify.bench._timing import machine
from verify.config import RunConfig
from verify.errors import InvalidArgument, VerifyError
from verify.estimators.uoro import UORO
from verify.files import preflight_dir, write_dir_atomic
from verify.run.check import run_check
from verify.stats import calibration as adversarial
from verify.stats import clopper_pearson, clopper_pearson_upper
from verify.uoro.cases import problem_case, stream
from verify.uoro.unbiased import claim_options, unbiased_family
from verify.verdict import Verdict

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
    case = problem_case("elman-tanh", 2, 3, seed, 900)
    res = unbiased_family(UORO(), case, (2, 3), claim_options(float(alpha)), stream(seed, 901), 10_000)
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


def calibrate_adversarial(
    n: int,
    first_seed: int,
    levels: list[float],
    cells: list[str],
    jobs: int,
    out: Path,
    command: str,
    mechanisms: list[str] | None = None,
) -> list[adversarial.ScenarioResult]:
    """Run :func:`verify.stats.calibration.run_suite` and write ``calibration.md`` / ``.json`` under ``out``
    (``mechanisms``: a subset of :data:`~verify.stats.calibration.MECHANISMS`, default all)."""
    mechs = list(mechanisms or adversarial.MECHANISMS)
    bad_mechs = sorted(set(mechs) - set(adversarial.MECHANISMS))
    if bad_mechs:
        raise SystemExit(f"unknown mechanisms {bad_mechs}; known: {list(adversarial.MECHANISMS)}")
    suite = adversarial.suite()
    if cells:
        known = adversarial.all_cells()  # the suite and its costly cells (run by name only)
        unknown = sorted(set(cells) - {c.name for c in known})
        if unknown:
            raise SystemExit(f"unknown cells {unknown}; known: {[c.name for c in known]}")
        suite = [c for c in known if c.name in cells]
    preflight_dir(out, "--out", needs=("calibration.md", "calibration.json"))  # refused now, not after the compute
    seeds = range(first_seed, first_seed + n)
    print(f"machine: {machine()}")
    print(
        f"adversarial calibration: {len(suite)} cells x {len(levels)} levels x {len(mechs)} mechanisms, {n} seeds each"
    )
    t0 = time.perf_counter()

    def progress(r: adversarial.ScenarioResult) -> None:
        kind = "false cert" if r.biased else "false FAIL"
        print(
            f"{r.cell:30s} level {r.level:<6g} {r.mechanism:10s} {kind} {r.errors}/{r.seeds} "
            f"(CP95 {r.cp_upper:.4f}) {'ok' if r.ok else 'NOT OK'}  F{r.fails} P{r.passes} I{r.inconclusive} "
            f"{r.mean_draws:.0f} draws  {r.wall_s:.0f} s",
            flush=True,
        )

    results = adversarial.run_suite(suite, seeds=seeds, levels=levels, mechanisms=mechs, jobs=jobs, progress=progress)
    wall = time.perf_counter() - t0
    table = adversarial.markdown_table(results, command=command, wall_s=wall, machine=machine())
    payload = {
        "command": command,
        "wall_s": wall,
        "machine": machine(),
        "seeds": [seeds.start, seeds.stop - 1],
        "levels": levels,
        "summary": adversarial.summarize(results),
        "cells": [r.to_data() for r in results],
    }
    _write_report(out, table, payload)
    bad = [r for r in results if not r.ok]
    print(f"wrote {out / 'calibration.md'} and .json; wall {wall:.0f} s; cells over their level: {len(bad)}")
    return results


def _write_report(out: Path, table: str, payload: dict[str, object]) -> None:
    """calibration.md and .json into a marked folder: only what rnn-verify wrote is ever replaced (verify.files)."""
    write_dir_atomic(
        out,
        {
            "calibration.md": table.encode("utf-8"),
            "calibration.json": (json.dumps(payload, indent=1) + "\n").encode("utf-8"),
        },
    )


#: a progress line of :func:`calibrate_adversarial` (what ``--from-log`` reads back)
_PROGRESS = re.compile(
    r"^(?P<cell>\S+)\s+level (?P<level>\S+)\s+(?P<mech>fixed|planned|sequential)\s+false (?:FAIL|cert) "
    r"(?P<errors>\d+)/(?P<seeds>\d+) \(CP95 [0-9.]+\) (?:ok|NOT OK)\s+F(?P<f>\d+) P(?P<p>\d+) I(?P<i>\d+) "
    r"(?P<draws>\d+) draws\s+(?P<wall>\d+) s$"
)


def recover_from_log(log: Path, out: Path, command: str, first_seed: int) -> list[adversarial.ScenarioResult]:
    """A calibration report from the progress log of an interrupted run (its completed rows; counts exact, mean
    draws and seconds rounded as printed), written like a finished run's, the log and the rounding in its command."""
    try:
        text = log.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument("--from-log", str(log), f"cannot be read: {exc}") from None
    cells = {c.name: c for c in adversarial.all_cells()}
    rows = []
    for line in text.splitlines():
        m = _PROGRESS.match(line.strip())
        if m is None or m["cell"] not in cells:
            continue
        cell = cells[m["cell"]]
        f, p_, i = int(m["f"]), int(m["p"]), int(m["i"])
        if f + p_ + i != int(m["seeds"]):
            raise InvalidArgument("--from-log", str(log), f"counts do not add up in {line.strip()!r}")
        rows.append(
            adversarial.ScenarioResult(
                cell.name,
                cell.describe(),
                cell.biased,
                float(m["level"]),
                m["mech"],
                int(m["seeds"]),
                f,
                p_,
                i,
                float(m["draws"]),
                float(m["wall"]),
                adversarial.group_of(cell),
            )
        )
    if not rows:
        raise InvalidArgument("--from-log", str(log), "no completed row of a calibration run in it")
    if len({r.seeds for r in rows}) != 1:
        raise InvalidArgument("--from-log", str(log), "rows over different seed counts (one run's log expected)")
    preflight_dir(out, "--out", needs=("calibration.md", "calibration.json"))
    full = (
        f"{command} (recovered from the progress log of an interrupted run: counts exact, mean draws and seconds "
        "rounded as printed)"
    )
    wall = sum(r.wall_s for r in rows)
    host = text.splitlines()[0].removeprefix("machine: ") if text.startswith("machine: ") else machine()
    payload: dict[str, object] = {
        "command": full,
        "wall_s": wall,
        "machine": host,
        "seeds": [first_seed, first_seed + rows[0].seeds - 1],
        "levels": sorted({r.level for r in rows}),
        "summary": adversarial.summarize(rows),
        "cells": [r.to_data() for r in rows],
    }
    _write_report(out, adversarial.markdown_table(rows, command=full, wall_s=wall, machine=host), payload)
    print(f"recovered {len(rows)} rows from {log} into {out}")
    return rows


def _read_report(folder: Path, option: str) -> dict[str, Any]:
    """``folder/calibration.json`` of a calibration report, refused naming the option where it is missing or no JSON
    object."""
    path = folder / "calibration.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidArgument(option, str(folder), f"no calibration report there ({path}: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise InvalidArgument(option, str(folder), f"{path} is not a calibration report (no 'cells' list)")
    return data


def _seed_range(data: dict[str, Any], part: Path) -> tuple[int, int]:
    """A report's seeds as ``(first, last)``; refused when it does not say (a merge must know what it adds)."""
    seeds = data.get("seeds")
    if not (isinstance(seeds, list) and len(seeds) == 2 and all(isinstance(v, int) for v in seeds)):
        raise InvalidArgument("--merge", str(part), f"its calibration.json has no seed range [first, last]: {seeds!r}")
    return int(seeds[0]), int(seeds[1])


def _add_chunks(rows: list[adversarial.ScenarioResult]) -> adversarial.ScenarioResult:
    """One cell's rows over disjoint seed ranges as one row: the counts and the seconds added, the draws weighted."""
    seeds = sum(r.seeds for r in rows)
    return dataclasses.replace(
        rows[0],
        seeds=seeds,
        fails=sum(r.fails for r in rows),
        passes=sum(r.passes for r in rows),
        inconclusive=sum(r.inconclusive for r in rows),
        mean_draws=sum(r.mean_draws * r.seeds for r in rows) / seeds,
        wall_s=sum(r.wall_s for r in rows),
    )


def merge_reports(parts: list[Path], out: Path, command: str) -> None:
    """Merge calibration reports into one under ``out``: runs split over processes (``--cells`` subsets) and runs of
    one cell over disjoint seed ranges (``--first-seed``: their counts added -- a cell's seeds then read as its
    ``seed_ranges``). The cells in suite order, the summary recomputed, the commands and wall times of the parts
    recorded. Parts that share a cell, level and mechanism over overlapping seeds are refused."""
    datas = [_read_report(d, "--merge") for d in parts]
    ranges = [_seed_range(d, part) for d, part in zip(datas, parts, strict=True)]
    keyed: dict[tuple[str, float, str], list[tuple[tuple[int, int], adversarial.ScenarioResult]]] = {}
    for d, rng in zip(datas, ranges, strict=True):
        for r in d["cells"]:
            row = adversarial.ScenarioResult.from_data(r)
            keyed.setdefault((row.cell, row.level, row.mechanism), []).append((rng, row))
    cell_ranges: dict[tuple[str, float, str], list[list[int]]] = {}
    rows = []
    for key, chunks in keyed.items():
        spans = sorted(rng for rng, _ in chunks)
        if any(b[0] <= a[1] for a, b in itertools.pairwise(spans)):
            where = f"{key[0]} (level {key[1]:g}, {key[2]})"
            raise InvalidArgument(
                "--merge", ",".join(map(str, parts)), f"{where} in two parts over overlapping seeds {spans}"
            )
        cell_ranges[key] = [list(s) for s in spans]
        rows.append(_add_chunks([row for _, row in chunks]))
    order = {c.name: i for i, c in enumerate(adversarial.all_cells())}
    mechs = {m: i for i, m in enumerate(adversarial.MECHANISMS)}
    rows.sort(key=lambda r: (order.get(r.cell, len(order)), r.level, mechs[r.mechanism]))
    chunked = any(len(v) > 1 for v in cell_ranges.values())
    per_row = chunked or len(set(ranges)) > 1  # each row says its seeds where the parts' seeds differ
    wall = sum(d["wall_s"] for d in datas) if chunked else max(d["wall_s"] for d in datas)
    commands = "; ".join(f"`{d['command']}`" for d in datas)
    full = f"{command} (merging {len(datas)} runs: {commands})"
    preflight_dir(out, "--out", needs=("calibration.md", "calibration.json"))
    table = adversarial.markdown_table(rows, command=full, wall_s=wall, machine=datas[0]["machine"])
    payload = {
        "command": datas[0]["command"],
        "commands": [c for d in datas for c in d.get("commands", [d["command"]])],
        "wall_s": wall,
        "machine": datas[0]["machine"],
        "seeds": [min(r[0] for r in ranges), max(r[1] for r in ranges)],
        "levels": sorted({lev for d in datas for lev in d["levels"]}),
        "summary": adversarial.summarize(rows),
        "cells": [
            {**r.to_data(), "seed_ranges": cell_ranges[(r.cell, r.level, r.mechanism)]} if per_row else r.to_data()
            for r in rows
        ],
    }
    _write_report(out, table, payload)
    print(f"merged {len(rows)} rows from {len(parts)} reports into {out}")


Key = tuple[str, float, str]

#: a row of :func:`compare_reports` over different seed counts is listed where a rate moved at this two-sided level
MOVED_P = 0.01


def _fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's exact two-sided p-value of k1/n1 against k2/n2."""
    from scipy.stats import fisher_exact  # the bench's, never the gate's path

    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]])[1])


def _pooled_moves(
    old: dict[Key, adversarial.ScenarioResult], new: dict[Key, adversarial.ScenarioResult], both: list[Key]
) -> list[str]:
    """:func:`compare_reports`' summary rows: per level, mechanism and kind of error, both sides pooled."""
    lines = []
    for lv in sorted({k[1] for k in both}):
        for mech in adversarial.MECHANISMS:
            for biased in (False, True):
                keys = [k for k in both if k[1] == lv and k[2] == mech and old[k].biased is biased]
                if not keys:
                    continue
                eb, ea = sum(old[k].errors for k in keys), sum(new[k].errors for k in keys)
                nb, na = sum(old[k].seeds for k in keys), sum(new[k].seeds for k in keys)
                pb, pa = sum(old[k].passes for k in keys), sum(new[k].passes for k in keys)
                lines.append(
                    f"| {lv:g} | {mech} | {'false certificate' if biased else 'false FAIL'} | {len(keys)} | "
                    f"{eb}/{nb} | {ea}/{na} | {clopper_pearson_upper(eb, nb, 0.95):.2e} | "
                    f"{clopper_pearson_upper(ea, na, 0.95):.2e} | {sum(not old[k].ok for k in keys)} | "
                    f"{sum(not new[k].ok for k in keys)} | {pb / nb:.3f} | {pa / na:.3f} |"
                )
    return lines


def _moved(a: adversarial.ScenarioResult, b: adversarial.ScenarioResult) -> tuple[bool, float, float]:
    """(moved, p of the error rates, p of the PASS rates): over the same seeds any change of the counts; over
    different seed counts a rate that moved at :data:`MOVED_P` (Fisher's exact test)."""
    pe = _fisher(a.errors, a.seeds, b.errors, b.seeds)
    pp = _fisher(a.passes, a.seeds, b.passes, b.seeds)
    if a.seeds == b.seeds:
        return (a.fails, a.passes, a.inconclusive) != (b.fails, b.passes, b.inconclusive), pe, pp
    return min(pe, pp) < MOVED_P, pe, pp


def compare_reports(before: Path, after: Path) -> str:
    """What moved between two calibration reports (e.g. the published run and a rerun with a changed engine), as
    markdown: per level, mechanism and kind of error, the pooled errors before and after; then every (cell, level,
    mechanism) that moved -- over the same seeds, any change of its verdict counts; over different seed counts
    (a rerun on fewer seeds), an error rate or a PASS rate that differs at :data:`MOVED_P` by Fisher's exact test --
    with both sides. A row of one report missing from the other is listed as such."""
    rows: list[dict[Key, adversarial.ScenarioResult]] = []
    for path in (before, after):
        data = _read_report(path, "--compare")
        rows.append(
            {(r.cell, r.level, r.mechanism): r for r in map(adversarial.ScenarioResult.from_data, data["cells"])}
        )
    old, new = rows
    both = [k for k in old if k in new]
    same = {old[k].seeds == new[k].seeds for k in both}
    fisher = f"a rate that moved at p < {MOVED_P:g} (Fisher's exact test)"
    rule = {
        frozenset({True}): "any change of the counts",
        frozenset({False}): fisher,
    }.get(frozenset(same), f"over the same seeds any change of the counts, over different seed counts {fisher}")
    lines = [
        f"# What moved: `{before}` -> `{after}`",
        "",
        f"{len(both)} rows in both ({len(old) - len(both)} only before, {len(new) - len(both)} only after). Errors: a "
        "false FAIL in an unbiased cell, a false certificate (PASS) in a biased one; CP95 = one-sided Clopper-Pearson "
        "95 % upper bound; `ok` = observed rate <= level; PASS in unbiased rows is the power (a certificate).",
        "",
        "| level | mechanism | error | rows | errors before | errors after | pooled CP95 before | pooled CP95 after | "
        "rows over the level before | after | PASS rate before | PASS rate after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _pooled_moves(old, new, both)
    moved = [(k, *_moved(old[k], new[k])) for k in both]
    moved = [m for m in moved if m[1]]
    lines += [
        "",
        f"## Rows that moved ({len(moved)} of {len(both)}: {rule}; F/P/I = FAIL/PASS/INCONCLUSIVE)",
        "",
        "| cell | level | mechanism | error | F/P/I before | F/P/I after | error rate before | after | CP95 after "
        "| ok after | p (errors) | p (PASS) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, _, pe, pp in moved:
        a, b = old[k], new[k]
        lines.append(
            f"| {k[0]} | {k[1]:g} | {k[2]} | {'cert' if a.biased else 'FAIL'} | "
            f"{a.fails}/{a.passes}/{a.inconclusive} | {b.fails}/{b.passes}/{b.inconclusive} | "
            f"{a.rate:.4f} | {b.rate:.4f} | {b.cp_upper:.4f} | {'yes' if b.ok else '**NO**'} | {pe:.2g} | {pp:.2g} |"
        )
    for side, only in (("before", [k for k in old if k not in new]), ("after", [k for k in new if k not in old])):
        if only:  # a rerun of part of a report: the count, and the rows where there are few
            named = ": " + ", ".join(f"{k[0]} ({k[1]:g}, {k[2]})" for k in only) if len(only) <= 12 else ""
            lines += ["", f"{len(only)} rows only {side}{named}"]
    return "\n".join(lines) + "\n"


def calibration_figures(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Figure specs (:mod:`verify.report.figures`) of a calibration report, one per level and kind of error: per cell
    (x) and mechanism (a series), the observed error rate with its one-sided Clopper-Pearson 95 % upper bound as the
    bar, against the level (a line). A row whose bar ends below the line is resolved. File name -> spec."""
    from verify.figure_spec import normalize_figure

    rows = [r for r in data["cells"] if isinstance(r, dict)]
    figs: dict[str, dict[str, Any]] = {}
    for level, error in sorted({(float(r["level"]), str(r["error"])) for r in rows}):
        part = [r for r in rows if float(r["level"]) == level and r["error"] == error]
        cells = list(dict.fromkeys(str(r["cell"]) for r in part))
        series = []
        for mech in adversarial.MECHANISMS:
            mine = {str(r["cell"]): r for r in part if r["mechanism"] == mech}
            if mine:
                xs = [c for c in cells if c in mine]
                series.append({
                    "label": mech,
                    "x": xs,
                    "y": [float(mine[c]["rate"]) for c in xs],
                    "ylow": [float(mine[c]["rate"]) for c in xs],
                    "yhigh": [float(mine[c]["cp95_upper"]) for c in xs],
                })  # fmt: skip
        seeds = sorted({int(r["seeds"]) for r in part})
        spread = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        name = f"calibration-{error.replace(' ', '-').lower()}-{level:g}.png"
        figs[name] = normalize_figure({
            "kind": "errorbar",
            "title": f"{error} at level {level:g}: rate and CP95 upper bound, {spread} seeds a row",
            "ylabel": f"{error} rate",
            "series": series,
            "hlines": [{"y": level, "label": f"level {level:g}"}],
        })  # fmt: skip
    return figs


def write_figures(folder: Path) -> list[str]:
    """Add :func:`calibration_figures` as PNGs to the calibration report in ``folder`` (its md and json unchanged,
    rewritten through the guarded writer: only what rnn-verify wrote is replaced). Returns the file names."""
    from verify.report.figures import render_png

    data = _read_report(folder, "--figure")
    try:
        table = (folder / "calibration.md").read_bytes()
    except OSError as exc:
        why = f"no calibration.md beside its calibration.json ({exc})"
        raise InvalidArgument("--figure", str(folder), why) from None
    pngs = {name: render_png(spec) for name, spec in calibration_figures(data).items()}
    keep = {"calibration.md": table, "calibration.json": (folder / "calibration.json").read_bytes()}
    write_dir_atomic(folder, keep | pngs)
    return sorted(pngs)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="ci", choices=("ci", "full"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--calibrate", type=int, nargs="?", const=1000, default=0, metavar="N", help="calibration over N seeds"
    )
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--what", default="unbiased,variance,conformance", help="... or 'adversarial' (the suite)")
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--levels", default="1e-3,0.05", help="adversarial: alpha = beta levels")
    ap.add_argument("--cells", default="", help="adversarial: a comma-separated subset of the cells")
    ap.add_argument(
        "--mechanisms", default="", help="adversarial: a comma-separated subset of fixed,planned,sequential"
    )
    ap.add_argument("--jobs", type=int, default=1, help="adversarial: worker processes")
    ap.add_argument("--out", default="reports/calibration", help="adversarial: output folder")
    ap.add_argument("--merge", default="", help="merge the calibration reports in these comma-separated folders")
    ap.add_argument("--from-log", metavar="LOG", help="a report (--out) from an interrupted run's progress log")
    ap.add_argument(
        "--compare",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="print what moved between two calibration report folders",
    )
    ap.add_argument("--figure", metavar="DIR", help="add the error-rate figures to the calibration report in DIR")
    return ap


def _or_exit_2(work: Callable[[], object]) -> None:
    """Run ``work``; a :class:`~verify.errors.VerifyError` (e.g. --out names a folder rnn-verify did not write) is
    one line on stderr and exit 2."""
    try:
        work()
    except VerifyError as exc:
        print(f"verify.bench.uoro_statistics: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    torch.set_num_threads(1)
    command = "python -m verify.bench.uoro_statistics " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.compare:
        _or_exit_2(lambda: print(compare_reports(Path(args.compare[0]), Path(args.compare[1])), end=""))
        return
    if args.figure:
        _or_exit_2(lambda: print("wrote " + ", ".join(write_figures(Path(args.figure))) + f" into {args.figure}"))
        return
    if args.from_log:
        _or_exit_2(lambda: recover_from_log(Path(args.from_log), Path(args.out), command, args.first_seed))
        return
    if args.merge:
        _or_exit_2(lambda: merge_reports([Path(p) for p in args.merge.split(",") if p], Path(args.out), command))
        return
    what = [w.strip() for w in args.what.split(",") if w.strip()]
    if args.calibrate and "adversarial" in what:
        _or_exit_2(
            lambda: calibrate_adversarial(
                args.calibrate,
                args.first_seed,
                [float(v) for v in args.levels.split(",") if v.strip()],
                [c.strip() for c in args.cells.split(",") if c.strip()],
                args.jobs,
                Path(args.out),
                command,
                [m.strip() for m in args.mechanisms.split(",") if m.strip()],
            )
        )
        what = [w for w in what if w != "adversarial"]
    if args.calibrate and what:
        calibrate(args.calibrate, args.alpha, what, args.first_seed)
    elif not args.calibrate:
        run_group(args.profile, args.seed)


if __name__ == "__main__":
    main()
