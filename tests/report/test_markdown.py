"""report.md escapes text, prints thresholds properly, never draws an empty figure, cites papers in full,
and a SKIPPED claim's rerun command names what the claim needs (issue 12, case 8)."""

from __future__ import annotations

import re
import shlex

import pytest

from theory.catalog import all_claims
from verify.cli import _parser
from verify.report import claim_png_jobs, claim_record, render_html, render_markdown, rerun_command, run_document
from verify.report.figures import claim_figures, figure_empty_reason, normalize_figure, render_png
from verify.report.render import _stat_line, md_code, md_escape
from verify.verdict import CheckResult, Control, Verdict

UNSHIPPED = re.compile(r"seeds/|DESIGN\.md|[\w-]+\.md\b")


def _doc(*results: CheckResult) -> dict:
    claims = all_claims()
    return run_document([claim_record(r, claims.get(r.claim_id), rerun="rnn-verify run") for r in results], {})


def test_text_fields_are_escaped() -> None:
    """A bound in a summary must not render as italics, a pipe must not split a table row."""
    res = CheckResult(
        "reference.adjoint",
        Verdict.PASS,
        "bound 16*D*Delta/(3N) + 14*sigma^2/(3m) holds; E||G(x_R)||^2 <= it; `code`; [link](x)",
        findings=("the *printed* bound_is | wrong",),
        controls=(Control("mutant a*b", "FAIL", "FAIL", "detail with | pipe and _under_"),),
        data={
            "figures": [
                {
                    "kind": "line",
                    "title": "t*x_1",
                    "x": [1, 2],
                    "series": [{"label": "a", "y": [1, 2]}],
                    "caption": "caption with *stars*",
                }
            ]
        },
    )
    md = render_markdown(_doc(res))
    assert r"16\*D\*Delta/(3N) + 14\*sigma^2/(3m)" in md and r"E\|\|G(x\_R)\|\|^2 <= it" in md
    assert r"\`code\`" in md and r"\[link\](x)" in md
    assert r"the \*printed\* bound\_is \| wrong" in md
    assert r"detail with \| pipe and \_under\_" in md
    assert r"**t\*x\_1**" in md and r"caption with \*stars\*" in md
    # every table row keeps its column count: no unescaped pipe inside a cell
    for line in md.splitlines():
        if line.startswith("| ") and "statistic vs threshold" not in line:
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) - 2 in (2, 4, 6, 7), line


def test_md_helpers() -> None:
    assert md_escape("# not a heading") == r"\# not a heading"
    assert md_escape("<script>") == r"\<script>" and md_escape("a <= b") == "a <= b"
    assert md_escape("two\nlines") == "two lines"
    assert md_code("a`b") == "`` a`b ``" and md_code("plain") == "`plain`"


@pytest.mark.parametrize(
    ("rec", "want"),
    [
        ({"statistic": 0.037}, "0.037"),  # a reported measurement: no "<= —"
        ({"statistic": 5.36e8, "comparison": "grows"}, "5.36e+08 (grows)"),
        ({"threshold": 1.0}, "not measured (threshold <= 1)"),
        ({}, "—"),
        ({"statistic": 0.4477, "threshold": 3.66, "comparison": "|z| <="}, "0.448 |z| <= 3.66"),
    ],
)
def test_stat_line_never_prints_a_missing_side(rec: dict, want: str) -> None:
    assert _stat_line(rec) == want
    assert "— " not in _stat_line(rec) and " —" not in _stat_line(rec)


def test_statistic_without_threshold_in_the_report() -> None:
    res = CheckResult("fpp.cycleworld-reproduction", Verdict.PASS, "reported", statistic=0.037)
    md = render_markdown(_doc(res))
    assert "0.037 <= —" not in md and "<= —" not in md and "| 0.037 |" in md


def test_a_figure_with_nothing_to_draw_is_not_drawn_and_the_report_says_why() -> None:
    empty = {
        "kind": "line",
        "title": "all points dropped",
        "x": [1, 2, 3],
        "series": [{"label": "zeros", "y": [0.0, 0.0, 0.0]}, {"label": "nan", "y": ["nan", None, "inf"]}],
        "logy": True,
    }
    good = {"kind": "line", "title": "fine", "x": [1, 2], "series": [{"label": "a", "y": [1.0, 2.0]}]}
    assert figure_empty_reason(normalize_figure(empty)) == (
        "none of its 6 points can be drawn (not finite, or not positive on a log axis)"
    )
    assert figure_empty_reason(normalize_figure(good)) is None
    figs, problems = claim_figures("x.y", {"figures": [empty, good]})
    assert [f["title"] for f in figs] == ["fine"]
    assert len(problems) == 1 and "all points dropped" in problems[0] and "none of its 6 points" in problems[0]
    res = CheckResult("reference.adjoint", Verdict.PASS, "ok", data={"figures": [empty, good]})
    doc = _doc(res)
    md = render_markdown(doc)
    assert "> figure not drawn: figure 1 (all points dropped): none of its 6 points" in md
    assert "figures/reference.adjoint-1.png" in md and "reference.adjoint-2.png" not in md
    # an old document that still carries an empty figure: described, not drawn, no PNG job
    doc["claims"][0]["figures"].insert(0, normalize_figure(empty))
    md, page = render_markdown(doc), render_html(doc, {})
    assert "> figure not drawn: none of its 6 points" in md and "figure not drawn: none of its 6 points" in page
    assert list(claim_png_jobs(doc["claims"][0])) == ["figures/reference.adjoint-2.png"]


def test_partially_empty_plot_names_the_series_it_could_not_draw() -> None:
    fig = normalize_figure(
        {
            "kind": "line",
            "title": "t",
            "x": [1, 2],
            "series": [{"label": "measured, all zero", "y": [0, 0]}, {"label": "bound", "y": [1e-20, 2e-20]}],
            "logy": True,
        }
    )
    assert figure_empty_reason(fig) is None
    assert render_png(fig).startswith(b"\x89PNG")  # the note names the series (checked by eye in reports)


def test_report_cites_papers_in_full_and_no_unshipped_file() -> None:
    claims = all_claims()
    results = [
        CheckResult(cid, Verdict.SKIPPED, "not run", reason="test: not run", seed=0) for cid in claims
    ]  # every catalog claim, with its metadata
    doc = run_document(
        [
            claim_record(
                r,
                claims[r.claim_id],
                rerun=rerun_command(r.claim_id, profile="ci", seed=0, device="cpu", dtype="float64"),
            )
            for r in results
        ],
        {"command": "rnn-verify run"},
    )
    md, page = render_markdown(doc), render_html(doc, {})
    for text in (md, page):
        assert not UNSHIPPED.search(text.replace("report.md", "")), UNSHIPPED.search(text)
    assert "Corentin Tallec, Yann Ollivier (2017). Unbiased Online Recurrent Optimization" in md
    assert "arXiv:1902.02405" in md and "When Recurrent Models Don" in md
    rec = doc["claims"][0]
    assert rec["citation"] == claims[rec["id"]].citation and rec["references"][0] == rec["citation"]


# ---------------------------------------------------------------- rerun commands
def _argv(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    assert argv[:2] == ["rnn-verify", "run"]
    _parser().parse_args(argv[1:])  # a flag that does not exist fails here
    return argv


def test_rerun_of_a_cuda_claim_asks_for_cuda() -> None:
    cmd = rerun_command("device.cuda-parity", profile="ci", seed=3, device="cpu", dtype="float64")
    argv = _argv(cmd)
    assert argv[argv.index("--device") + 1] == "cuda" and argv[argv.index("--profile") + 1] == "ci"
    # already on a GPU: the device is kept (cuda:1 stays cuda:1)
    cmd = rerun_command("device.cuda-parity", profile="ci", seed=3, device="cuda:1", dtype="float64")
    assert "--device cuda:1" in cmd


def test_rerun_of_a_full_only_claim_asks_for_the_full_profile() -> None:
    cmd = rerun_command("device.gpu-unbiasedness", profile="ci", seed=0, device="cpu", dtype="float64")
    argv = _argv(cmd)
    assert argv[argv.index("--profile") + 1] == "full" and argv[argv.index("--device") + 1] == "cuda"


def test_rerun_of_an_ordinary_claim_keeps_the_settings() -> None:
    cmd = rerun_command("rtrl.exact", profile="ci", seed=7, device="cpu", dtype="float32")
    assert _argv(cmd) == shlex.split(
        "rnn-verify run --profile ci --claims rtrl.exact --seed 7 --device cpu --dtype float32"
    )
    # a claim outside the catalog (a pytest-plugin claim) is left as given
    assert "--device cpu" in rerun_command("mylib.x", profile="ci", seed=None, device="cpu", dtype="float64")


def test_skipped_claims_rerun_in_a_real_run(tmp_path) -> None:
    """End to end: ``run --claims 'device.*'`` on a CPU machine; the SKIPPED CUDA claims' reruns name cuda/full."""
    import json

    import torch

    from verify.cli import main

    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA (the CUDA claims would run)")
    out = tmp_path / "r"
    assert main(["run", "--claims", "device.cuda-parity", "device.gpu-unbiasedness", "--out", str(out), "-q"]) == 0
    doc = json.loads((out / "results.json").read_text())
    by_id = {r["id"]: r for r in doc["claims"]}
    assert (
        by_id["device.cuda-parity"]["verdict"] == "SKIPPED" and "--device cuda" in by_id["device.cuda-parity"]["rerun"]
    )
    gpu = by_id["device.gpu-unbiasedness"]
    assert gpu["verdict"] == "SKIPPED" and "--profile full" in gpu["rerun"] and "--device cuda" in gpu["rerun"]
    assert gpu["rerun"] in (out / "report.md").read_text()
