"""Smoke version of the adversarial calibration suite (issue 14; the full run is ``-m slow`` and
``python -m verify.bench.uoro_statistics --calibrate 1000 --what adversarial``).

A few cells of :func:`verify.stats.calibration.smoke_suite` (one per corner: rotated cond
1e16, Student-t₃, rank-deficient, round-off-level noise, exact draws, large p, a biased cell)
at α = β = 0.05 over 20 seeds per mechanism (the variance anomaly of case 1 is in
``test_roundoff.py``). The round-off and exact cells must never FAIL; elsewhere the count of
errors must stay below ``binomial_upper_quantile(20, 0.05, 1e-4)`` (a correct engine exceeds it
with probability ≤ 1e-4 per cell and mechanism).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from verify.stats import binomial_upper_quantile
from verify.stats.calibration import (
    KNOWN_GAPS,
    LARGE_CELLS,
    MECHANISMS,
    Scenario,
    build,
    issue39_cells,
    markdown_table,
    run_once,
    run_scenario,
    smoke_suite,
    summarize,
)
from verify.verdict import Verdict

pytestmark = pytest.mark.statistical

SEEDS = range(7000, 7020)
NEVER = {"roundoff-bernoulli", "exact"}  # no noise beyond round-off: a FAIL would be round-off called bias


@pytest.mark.parametrize("cell", smoke_suite(), ids=lambda c: c.name)
def test_smoke_cell(cell: Scenario) -> None:
    results = [run_scenario(cell, 0.05, mech, SEEDS) for mech in MECHANISMS]
    for r in results:
        if cell.name in NEVER:
            assert r.fails == 0, r
        assert r.errors <= binomial_upper_quantile(len(SEEDS), 0.05, 1e-4), r
        if cell.name in ("roundoff-bernoulli", "exact"):
            assert r.passes == r.seeds, r  # round-off is certified, with its budget
    text = markdown_table(results, command="smoke", wall_s=0.0, machine="test")
    assert cell.name in text and summarize(results)


def test_suite_covers_the_issue() -> None:
    from verify.stats.calibration import suite

    cells = suite()
    names = {c.name for c in cells}
    assert len(names) == len(cells)
    assert {c.law for c in cells} >= {"gauss", "rademacher", "t3", "bounded", "scale-mixture"}
    assert {c.p for c in cells} >= {1, 10, 100, 1000, 10_000}
    assert {c.cond for c in cells if c.spectrum == "geometric"} >= {1.0, 1e4, 1e8, 1e12, 1e16}
    assert {"rank-half-rot", "rank-half-axis", "roundoff-bernoulli", "roundoff-gauss", "exact"} <= names
    # biased cells at 1.01 δ‖g‖, and issue 39's at exactly δ‖g‖ (the certificate claims < δ‖g‖: still wrong)
    assert sum(c.biased for c in cells) >= 5 and all(c.bias >= 1 for c in cells if c.biased)
    biased = build(next(c for c in cells if c.name == "biased-gauss-top"))
    assert biased.bias_norm > 0.1 * float(biased.truth.norm())  # 1.01 δ‖g‖ with δ = 0.1
    # issue 22: rare events (both sides, three probabilities), skewed and lattice noise, and their biased cells
    assert {c.rare for c in cells if c.rare} == {1e-2, 1e-3, 1e-4}
    assert {c.biased for c in cells if c.rare} == {True, False}
    assert {c.law for c in cells} >= {"lognormal0.5", "lognormal1", "lognormal2", "exponential", "lattice"}
    assert {c.law for c in cells if c.biased} >= {"lognormal1", "lognormal2", "exponential", "lattice"}
    rare = build(next(c for c in cells if c.name == "rare1e-03-biased"))
    x = rare.sampler(5000, torch.Generator().manual_seed(0))
    hits = int((x != rare.truth).any(1).sum())
    assert 0 < hits < 30  # every draw off the event equals g; the bias lives in ~5 hits
    # issue 39: the premise classes, both sides (infinite variance, dependent draws, extreme scales, the issue's shapes)
    p39 = {c.name: c for c in issue39_cells()}
    assert set(p39) - names == LARGE_CELLS and set(KNOWN_GAPS) <= names  # p = 500: run by name (all_cells)
    assert {c.tail for c in p39.values() if c.tail} == {1.5} and {c.biased for c in p39.values() if c.tail} == {
        True,
        False,
    }
    assert {c.biased for c in p39.values() if c.offset} == {True, False} and "shared-offset-0" in p39
    assert {c.scale for c in p39.values()} >= {1e-155, 1e-170, 1e-300}
    assert any(c.declare_norm and c.event_floor == 1.0 and c.scale == 1e-170 for c in p39.values())
    assert {c.p for c in p39.values()} >= {22, 500} and any(c.spectrum == "one-noisy" for c in p39.values())
    assert any(c.bias == 1.0 for c in p39.values()) and any(c.bias_dir == "bottom" for c in p39.values())
    assert {c.biased for c in p39.values() if c.drift} == {True, False}
    offset = build(p39["shared-offset"])
    gen = torch.Generator().manual_seed(0)
    means = torch.stack([offset.sampler(4000, gen).mean(0) - offset.truth for _ in range(50)])  # 50 calls
    # per coordinate: 0.03² (the call's offset) + 1/4000 (the noise) = 1.15e-3; independent draws: 2.5e-4
    assert float(means.var()) > 2.5 * (1 / 4000)


def test_parallel_reports_merge(tmp_path: Path) -> None:
    """Two processes' reports (disjoint --cells) merge into one with the summary recomputed."""
    from verify.bench.uoro_statistics import calibrate_adversarial, merge_reports
    from verify.stats.calibration import ScenarioResult

    for name, cell in (("a", "exact"), ("b", "exact-undeclared")):
        calibrate_adversarial(3, 0, [0.05], [cell], 1, tmp_path / name, f"part {name}")
    merge_reports([tmp_path / "a", tmp_path / "b"], tmp_path / "all", "merge")
    import json

    data = json.loads((tmp_path / "all" / "calibration.json").read_text())
    assert {r["cell"] for r in data["cells"]} == {"exact", "exact-undeclared"} and data["commands"] == [
        "part a",
        "part b",
    ]
    assert all(ScenarioResult.from_data(r).to_data() == r for r in data["cells"])
    exact = [r for r in data["cells"] if r["cell"] == "exact"]
    assert all(r["passes"] == 3 for r in exact)  # declared deterministic: certified
    assert all(r["inconclusive"] == 3 for r in data["cells"] if r["cell"] == "exact-undeclared")


def test_committed_calibration_report() -> None:
    """reports/calibration/calibration.json (generated by the bench command) says what the docs quote."""
    import json
    from pathlib import Path

    from verify.stats.calibration import suite

    path = Path(__file__).resolve().parents[2] / "reports" / "calibration" / "calibration.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["command"].startswith("python -m verify.bench.uoro_statistics --calibrate 1000 --what adversarial")
    assert data["wall_s"] > 0 and data["machine"]
    assert {r["cell"] for r in data["cells"]} == {c.name for c in suite()}
    assert {r["level"] for r in data["cells"]} == {1e-3, 0.05}
    assert {r["mechanism"] for r in data["cells"]} == set(MECHANISMS)
    for r in data["cells"]:
        assert r["seeds"] >= 1000
        if r["cell"] in KNOWN_GAPS:
            continue  # published over its level, with why (below: it still is, so a fix shows here)
        assert r["errors"] <= binomial_upper_quantile(r["seeds"], r["level"], 1e-4), r
        if r["level"] >= 0.05:
            assert r["resolved"], r
        if r["cell"] in ("exact", "roundoff-bernoulli", "roundoff-gauss"):
            assert r["fails"] == 0, r
    for name in KNOWN_GAPS:
        rows = [r for r in data["cells"] if r["cell"] == name]
        assert any(r["errors"] > binomial_upper_quantile(r["seeds"], r["level"], 1e-4) for r in rows), rows
    gap_keys = {(r["level"], r["mechanism"], r["error"]) for r in data["cells"] if r["cell"] in KNOWN_GAPS}
    for s in data["summary"]:
        if s["scope"] in ("all cells", "issue 39 premises") and (s["level"], s["mechanism"], s["error"]) in gap_keys:
            continue  # pools a known gap (its rows are checked above)
        # pooled over the cells: the observed rate is at most the level and not significantly above it; where
        # the seeds can resolve it (level 0.05: 38 000 runs) the CP95 upper bound is below the level too. At
        # 1e-3 a test that spends exactly alpha (the fixed mechanism) has CP95 > alpha however many seeds run.
        assert s["pooled_rate"] <= s["level"], s
        assert s["total_errors"] <= binomial_upper_quantile(s["total_runs"], s["level"], 1e-4), s
        if s["level"] >= 0.05:
            assert s["pooled_cp95_upper"] <= s["level"], s
    # issue 22's must-show, for its classes (rare events, skewed, lattice): at 0.05 every cell's CP95 of false
    # FAIL below the level, pooled at 1e-3 below the level, and no false certificate with CP95 <= beta
    new = {"rare events", "skewed", "lattice"}
    rows22 = [r for r in data["cells"] if r["group"] in new]
    assert {r["group"] for r in rows22} == new
    for r in rows22:
        if r["level"] >= 0.05 and not r["biased"]:
            assert r["cp95_upper"] <= r["level"], r
        if r["biased"] and "declared radius" not in r["description"]:
            assert r["passes"] == 0, r  # nothing declared: a bias carried by an unseen event is never certified
    scoped = [s for s in data["summary"] if s["scope"] == "issue 22 classes"]
    assert {(s["level"], s["mechanism"], s["error"]) for s in scoped} == {
        (lv, m, e) for lv in (1e-3, 0.05) for m in MECHANISMS for e in ("false FAIL", "false certificate")
    }
    for s in scoped:
        assert s["pooled_rate"] <= s["level"], s
        if s["error"] == "false certificate":
            assert s["pooled_cp95_upper"] <= s["level"], s
    # issue 39's must-show: its premise cells at 1e-3, every mechanism, 1000 seeds; no false certificate at all
    rows39 = [r for r in data["cells"] if r["group"] == "premises"]
    assert {r["cell"] for r in rows39} == {c.name for c in issue39_cells() if c.name not in LARGE_CELLS}
    assert {(r["level"], r["mechanism"]) for r in rows39} >= {(1e-3, m) for m in MECHANISMS}
    assert all(r["passes"] == 0 for r in rows39 if r["biased"]), [r for r in rows39 if r["biased"] and r["passes"]]
    md = (path.parent / "calibration.md").read_text(encoding="utf-8")
    assert md.startswith("# Adversarial calibration")
    # the statistics page of the docs quotes the summary table as generated (rows of the pooled error rates)
    readme = (path.parents[2] / "docs" / "explanation" / "statistics.md").read_text(encoding="utf-8")
    head = md.index("## Summary")
    rows = [line for line in md[head:].split("\n## All cells")[0].splitlines() if line.startswith(("| all", "| issue"))]
    assert rows and all(row in readme for row in rows)


def test_cell_seeds_replay_in_any_process() -> None:
    """Issue 20/22: a calibration cell's generator seed is a stable hash of its name, the same in processes with
    different PYTHONHASHSEED (hash() moved one published cell's rate from 0.014 to 0.040)."""

    from verify.stats.calibration import scenario_seed

    names = [c.name for c in smoke_suite()[:3]]
    code = "import sys; from verify.stats.calibration import scenario_seed as s; print([s(n) for n in sys.argv[1:]])"
    outs = _in_two_processes(code, *names)
    assert outs == {str([scenario_seed(n) for n in names])}
    first = build(smoke_suite()[0])
    again = build(smoke_suite()[0])
    assert torch.equal(first.truth, again.truth)


@pytest.mark.parametrize(
    ("cell", "level", "mechanism"),
    [
        # each case is 2 x 1000 seeds in fresh processes (~14 CPU-seconds): one by default (the gate's level),
        # the others slow (the process-independent seeds themselves: test_cell_seeds_replay_in_any_process)
        pytest.param("bounded-cond1e+00-rot", 0.05, "fixed", marks=pytest.mark.slow),
        pytest.param("rare1e-03-half-unbiased-rot", 0.05, "fixed", marks=pytest.mark.slow),
        ("lognormal2-rot", 1e-3, "fixed"),
    ],
)
def test_a_published_cell_replays_with_its_counts_in_two_processes(cell: str, level: float, mechanism: str) -> None:
    """Issues 20 and 22: the published calibration replays cell by cell. A rotated cell (its problem and its runs'
    seeds are stable hashes of its name) rerun in two fresh processes with different PYTHONHASHSEED gives the counts
    reports/calibration/calibration.json publishes (the bench's seeds 1000..1999, one torch thread) -- or, where
    issue 39's design effect moved them, the counts reports/calibration/issue39-calls/replays.json records with both
    (bounded-cond1e+00-rot at 0.05: 23/280/697 published, 16/238/746 with the design effect at 79fba8c, 12/238/750
    with its own degrees of freedom at 5d77534)."""
    import json
    from pathlib import Path

    reports = Path(__file__).resolve().parents[2] / "reports/calibration"
    published = json.loads((reports / "calibration.json").read_text())
    row = next(r for r in published["cells"] if (r["cell"], r["level"], r["mechanism"]) == (cell, level, mechanism))
    moved = json.loads((reports / "issue39-calls" / "replays.json").read_text())["rows"]
    now = next(r for r in moved if (r["cell"], r["level"], r["mechanism"]) == (cell, level, mechanism))
    assert now["published"] == [row["fails"], row["passes"], row["inconclusive"]]
    row = dict(row, fails=now["now"][0], passes=now["now"][1], inconclusive=now["now"][2])
    code = (
        "import torch; from verify.stats.calibration import run_scenario, suite; torch.set_num_threads(1); "
        f"r = run_scenario(next(c for c in suite() if c.name == {cell!r}), {level}, {mechanism!r}, range(1000, 2000)); "
        "print(r.fails, r.passes, r.inconclusive)"
    )
    outs = _in_two_processes(code)
    assert outs == {f"{row['fails']} {row['passes']} {row['inconclusive']}"}, (outs, row)


def _in_two_processes(code: str, *args: str) -> set[str]:
    """The stripped standard outputs of ``python -c code args`` in two processes with PYTHONHASHSEED 1 and 2."""
    import os
    import subprocess
    import sys

    env = {**os.environ}
    return {
        subprocess.run(
            [sys.executable, "-c", code, *args],
            env={**env, "PYTHONHASHSEED": str(h)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for h in (1, 2)
    }


# ------------------------------------------------------------------------------------------------- issue 39
ISSUE39_SEEDS = range(7000, 7003)


@pytest.mark.parametrize(
    "cell",
    [pytest.param(c, marks=pytest.mark.slow) if c.p > 100 else c for c in issue39_cells()],  # p = 500: ~1 s a run
    ids=lambda c: c.name,
)
def test_issue39_cell_smoke(cell: Scenario) -> None:
    """Issue 39's premise cells (class ``premises`` of the published calibration) at the catalog's level α = β = 1e-3,
    3 seeds per mechanism: every run ends in a verdict (no crash at 1e-155 ... 1e-300), and the errors stay at most
    ``binomial_upper_quantile(3, 1e-3, 1e-4)`` = 1 (a correct engine exceeds it w.p. ≤ 1e-4 per cell and
    mechanism) -- except in the cells of ``KNOWN_GAPS``, whose published rate exceeds the level (run, not judged)."""
    for mech in MECHANISMS:
        r = run_scenario(cell, 1e-3, mech, ISSUE39_SEEDS)
        assert r.fails + r.passes + r.inconclusive == len(ISSUE39_SEEDS), r
        if cell.name not in KNOWN_GAPS:
            assert r.errors <= binomial_upper_quantile(len(ISSUE39_SEEDS), 1e-3, 1e-4), r


@pytest.mark.parametrize("name", ["scale1e-300", "scale1e-170-declared", "biased-scale1e-300"])
def test_issue39_scale_cells_decide_as_at_scale_one(name: str) -> None:
    """The same cell at scale 1 (same name: the same problem and seeds, so the same draws unscaled) gets the same
    verdicts: the engine's rescaling makes 1e-300 and 1e-170 (declared floor and norm) invisible."""
    cell = next(c for c in issue39_cells() if c.name == name)
    unit = dataclasses.replace(cell, scale=1.0)
    for mech in MECHANISMS:
        a, b = (run_scenario(c, 1e-3, mech, ISSUE39_SEEDS) for c in (cell, unit))
        assert (a.fails, a.passes, a.inconclusive) == (b.fails, b.passes, b.inconclusive), (a, b)


def test_issue39_infinite_variance_is_named() -> None:
    """The Pareto(1.5) coordinate among 21 Gaussian ones (planned mechanism): no verdict rests on it, every run of
    seeds 7000-7009 is INCONCLUSIVE, and the premise its draws show is named: coordinate 0's tail ("coordinate 0:
    tail index ~ 1.7 ..., variance not finite") or one draw's share of the *total* scatter ("heavy tail") -- both
    among these seeds."""
    cell = next(c for c in issue39_cells() if c.name == "pareto1.5-axis")
    problem = build(cell)
    runs = {seed: run_once(problem, 1e-3, "planned", seed) for seed in range(7000, 7010)}
    assert all(r.verdict is Verdict.INCONCLUSIVE for r in runs.values()), runs
    tail = [r.reason for r in runs.values() if "variance not finite" in r.reason]
    heavy = [r.reason for r in runs.values() if "heavy tail" in r.reason]
    assert tail and heavy, runs
    assert all("coordinate 0: tail index" in t for t in tail)


def test_issue39_bench_runs_a_mechanism_subset_and_prints_the_premise_table(tmp_path: Path) -> None:
    """``--mechanisms`` runs only those; the premise table gives the CP95 bound, the seeds that would show ≤ level
    (0 errors at 1e-3: 2995, the one-sided 95 % bound) and a replay command per row."""
    from verify.bench.premises import premise_calibration_table, seeds_to_show
    from verify.bench.uoro_statistics import calibrate_adversarial

    rows = calibrate_adversarial(2, 1000, [1e-3], ["scale1e-300"], 1, tmp_path / "a", "part", ["fixed"])
    assert [(r.cell, r.mechanism, r.seeds) for r in rows] == [("scale1e-300", "fixed", 2)]
    table = premise_calibration_table([str(tmp_path / "a" / "calibration.json")])
    assert "--mechanisms fixed --cells scale1e-300" in table and "--first-seed 1000" in table
    assert (seeds_to_show(0, 1e-3), seeds_to_show(1, 1e-3), seeds_to_show(0, 1e-3, 0.975)) == (2995, 4742, 3688)
    with pytest.raises(SystemExit, match="unknown mechanisms"):
        calibrate_adversarial(2, 1000, [1e-3], ["scale1e-300"], 1, tmp_path / "b", "part", ["fixd"])


def test_reports_over_disjoint_seeds_add_up_and_overlapping_ones_are_refused(tmp_path: Path) -> None:
    """One cell run over seeds 0-2 and 3-4 (``--first-seed``) merges into 5 seeds, its counts added; a part that
    repeats a seed is refused naming the cell (issue 39: 10 000 seeds of a cell in chunks)."""
    import json

    from verify.bench.uoro_statistics import calibrate_adversarial, merge_reports
    from verify.errors import InvalidArgument

    whole = calibrate_adversarial(5, 0, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "whole", "whole", ["fixed"])
    calibrate_adversarial(3, 0, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "a", "a", ["fixed"])
    calibrate_adversarial(2, 3, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "b", "b", ["fixed"])
    merge_reports([tmp_path / "a", tmp_path / "b"], tmp_path / "ab", "merge")
    (row,) = json.loads((tmp_path / "ab" / "calibration.json").read_text())["cells"]
    (ref,) = whole
    assert (row["seeds"], row["fails"], row["passes"], row["inconclusive"]) == (
        5,
        ref.fails,
        ref.passes,
        ref.inconclusive,
    )
    assert row["seed_ranges"] == [[0, 2], [3, 4]]
    calibrate_adversarial(2, 2, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "c", "c", ["fixed"])
    with pytest.raises(InvalidArgument, match="bounded-cond1e"):
        merge_reports([tmp_path / "a", tmp_path / "c"], tmp_path / "ac", "merge")


def test_compare_lists_the_rows_that_moved(tmp_path: Path) -> None:
    """``--compare`` (issue 39: the published calibration rerun, what moved): a report against itself moves nothing;
    over the same seeds a row whose counts differ is listed with both sides; over different seed counts a row is
    listed only where a rate moved significantly (Fisher's exact test)."""
    import json

    from verify.bench.uoro_statistics import calibrate_adversarial, compare_reports

    calibrate_adversarial(4, 0, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "a", "a", ["fixed"])
    same = compare_reports(tmp_path / "a", tmp_path / "a")
    assert "Rows that moved (0 of 1" in same
    moved = tmp_path / "b"
    data = json.loads((tmp_path / "a" / "calibration.json").read_text())
    row = data["cells"][0]

    def write(folder: Path, fails: int, passes: int, seeds: int) -> None:
        row.update(fails=fails, passes=passes, inconclusive=seeds - fails - passes, seeds=seeds)
        folder.mkdir(exist_ok=True)
        (folder / "calibration.json").write_text(json.dumps(data))

    write(tmp_path / "a", 1, 1, 4)
    write(moved, 2, 1, 4)  # the same 4 seeds, one more FAIL
    text = compare_reports(tmp_path / "a", moved)
    assert "Rows that moved (1 of 1: any change" in text and "| bounded-cond1e+00-rot | 0.05 | fixed | FAIL |" in text
    write(moved, 1000, 1000, 4000)  # 4000 seeds at the same rates: nothing moved
    assert "Rows that moved (0 of 1: a rate" in compare_reports(tmp_path / "a", moved)
    write(moved, 3000, 0, 4000)  # FAIL 3 times in 4, never PASS (1/4, 1/4 before): both rates moved
    assert "Rows that moved (1 of 1: a rate" in compare_reports(tmp_path / "a", moved)
    # a rerun that extends one row's seeds and not another's: each row by its own rule, and the title says both
    base = dict(row, fails=1, passes=1, inconclusive=2, seeds=4)
    before = [base, dict(base, mechanism="planned")]
    after = [  # the fixed row over 4000 seeds at the same rates, the planned one over the same 4 seeds, one more FAIL
        dict(base, seeds=4000, fails=1000, passes=1000, inconclusive=2000),
        dict(base, mechanism="planned", fails=2, inconclusive=1),
    ]
    for folder, cells in ((tmp_path / "c", before), (tmp_path / "d", after)):
        folder.mkdir()
        (folder / "calibration.json").write_text(json.dumps(dict(data, cells=cells)))
    mixed = compare_reports(tmp_path / "c", tmp_path / "d")
    assert "Rows that moved (1 of 2: over the same seeds any change of the counts, over different seed counts" in mixed
    assert "| bounded-cond1e+00-rot | 0.05 | planned | FAIL |" in mixed


def test_figure_adds_the_error_rates_to_a_report_and_changes_nothing_else(tmp_path: Path) -> None:
    """``--figure DIR``: one PNG per level and kind of error (rate and CP95 per cell and mechanism, the level as a
    line) added to the report; its md and json byte for byte as they were, a file rnn-verify did not write left alone,
    and a rerun replaces only its own PNG."""
    import json

    from verify.bench.uoro_statistics import calibrate_adversarial, calibration_figures, write_figures

    out = tmp_path / "rep"
    cells = ["bounded-cond1e+00-rot", "biased-bounded-top"]
    calibrate_adversarial(3, 0, [0.05], cells, 1, out, "cmd", ["fixed", "planned"])
    before = {n: (out / n).read_bytes() for n in ("calibration.md", "calibration.json")}
    (out / "run.log").write_text("mine")
    data = json.loads(before["calibration.json"])
    figs = calibration_figures(data)
    assert sorted(figs) == ["calibration-false-certificate-0.05.png", "calibration-false-fail-0.05.png"]
    fail = figs["calibration-false-fail-0.05.png"]
    assert [s["label"] for s in fail["series"]] == ["fixed", "planned"] and fail["hlines"][0]["y"] == 0.05
    row = next(r for r in data["cells"] if r["mechanism"] == "planned" and not r["biased"])
    assert fail["series"][1]["yhigh"] == [row["cp95_upper"]] and fail["series"][1]["y"] == [row["rate"]]
    for _ in range(2):
        assert write_figures(out) == sorted(figs)
        assert all((out / n).read_bytes().startswith(b"\x89PNG") for n in figs)
        assert {n: (out / n).read_bytes() for n in before} == before and (out / "run.log").read_text() == "mine"


def test_compare_merge_and_figure_refuse_a_folder_without_a_report(tmp_path: Path) -> None:
    """A folder with no calibration.json is a usage error naming the option, exit 2, never a traceback."""
    import subprocess
    import sys

    for argv in (
        ["--compare", str(tmp_path), str(tmp_path)],
        ["--merge", str(tmp_path), "--out", str(tmp_path / "o")],
        ["--figure", str(tmp_path)],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "verify.bench.uoro_statistics", *argv], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"invalid argument {argv[0]}=" in proc.stderr and "no calibration report there" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_report_recovered_from_an_interrupted_runs_log_has_its_counts(tmp_path: Path) -> None:
    """``--from-log``: the completed rows of a run's progress log make a report with the same counts as the run's
    own (mean draws and seconds as rounded in the log), refused for a log with no row."""
    import contextlib
    import io
    import json

    from verify.bench.uoro_statistics import calibrate_adversarial, recover_from_log
    from verify.errors import InvalidArgument

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runs = calibrate_adversarial(3, 0, [0.05], ["bounded-cond1e+00-rot"], 1, tmp_path / "a", "a", ["fixed"])
    log = tmp_path / "run.log"
    log.write_text(buf.getvalue())
    recover_from_log(log, tmp_path / "b", "b", 0)
    (got,) = json.loads((tmp_path / "b" / "calibration.json").read_text())["cells"]
    (ref,) = runs
    assert (got["fails"], got["passes"], got["inconclusive"], got["seeds"]) == (
        ref.fails,
        ref.passes,
        ref.inconclusive,
        3,
    )
    assert got["group"] == ref.group and got["description"] == ref.description
    log.write_text("machine: x\nnothing here\n")
    with pytest.raises(InvalidArgument, match="no completed row"):
        recover_from_log(log, tmp_path / "c", "c", 0)
