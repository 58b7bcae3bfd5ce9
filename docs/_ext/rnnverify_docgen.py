"""Pages generated from the code before every docs build (called by ``docs/conf.py``).

* ``reference/generated/catalog.md`` -- the claim catalog, exactly ``rnn-verify list --markdown``
  (rendered by the CLI itself, so the page cannot drift from ``theory/``);
* ``reference/generated/cli.md`` -- the ``--help`` of ``rnn-verify`` and of every subcommand,
  epilogs included, verbatim;
* ``reference/generated/gallery.md`` -- the gallery's verdict tables (published implementations judged), from
  the committed ``reports/gallery/gallery.json``;
* ``reference/generated/experiments.md`` -- the table of every experiment of the papers
  (:mod:`verify.report.experiments`, the same table as the README's and every report's);
* :func:`substitutions` -- every count, rate and timing a hand-written page quotes (``{{ name }}`` in the page,
  MyST substitutions set in ``conf.py``), computed from the code (the catalog, the gate budget, the report's
  figure policy) or read from a committed report (``reports/gate-calibration/``), so that no page types a
  number that can go stale (issue 41).

The generated folder is git-ignored; nothing else is written.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

GENERATED = Path("reference") / "generated"
#: a fixed terminal width, so that argparse wraps the help the same on every machine
HELP_COLUMNS = "100"


def catalog_markdown() -> str:
    """The catalog table as ``rnn-verify list --markdown`` prints it."""
    from verify.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = main(["list", "--markdown"])
    if rc != 0:
        raise RuntimeError(f"rnn-verify list --markdown exited {rc}")
    return out.getvalue()


def subcommand_helps() -> dict[str, str]:
    """``rnn-verify --help`` and ``rnn-verify CMD --help`` for every subcommand, in the parser's order."""
    from verify.cli import _parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = _parser()
        helps = {"rnn-verify": parser.format_help()}
        for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
            for name, sub in action.choices.items():
                helps[f"rnn-verify {name}"] = sub.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return helps


def _fence(text: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}text\n{text.rstrip()}\n{ticks}\n"


def write_pages(srcdir: Path) -> list[Path]:
    """Write the generated pages under ``srcdir``; returns their paths."""
    out = srcdir / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    catalog = out / "catalog.md"
    catalog.write_text(
        "# Claim catalog\n\n"
        "Every claim rnn-verify checks, generated from `theory/claims/` at build time: this table is the\n"
        "output of `rnn-verify list --markdown`. The paper column is the short citation (full citations:\n"
        "[Papers](../papers.md)); `rnn-verify list --json` gives each claim's statement, math, assumptions,\n"
        "errata, stated false-FAIL rate and full `citation` and `references`, and the report prints them in\n"
        "each claim's section.\n\n" + catalog_markdown(),
        encoding="utf-8",
    )
    cli = out / "cli.md"
    parts = [
        "# Command line: `rnn-verify`\n\n"
        "Generated at build time from the argparse parser of `verify/cli.py`: the `--help` of the\n"
        "command and of every subcommand, verbatim (epilogs, with their exit codes, included).\n"
    ]
    for cmd, text in subcommand_helps().items():
        parts.append(f"\n## `{cmd}`\n\n" + _fence(text))
    cli.write_text("".join(parts), encoding="utf-8")
    experiments = out / "experiments.md"
    experiments.write_text(experiments_markdown(), encoding="utf-8")
    gallery = out / "gallery.md"
    gallery.write_text(gallery_markdown(repository_root()), encoding="utf-8")
    return [catalog, cli, experiments, gallery]


def gallery_markdown(root: Path) -> str:
    """The gallery's verdict tables, rendered from the committed ``reports/gallery/gallery.json`` (the rows'
    report folders are in the repository, not on this site: the links are left out)."""
    from verify.gallery.run import markdown

    path = root / "reports" / "gallery" / "gallery.json"
    if not path.is_file():
        return "# The gallery\n\nNo gallery has been committed yet (`reports/gallery/gallery.json`).\n"
    return markdown(json.loads(path.read_text(encoding="utf-8")), links=False)


def experiments_markdown() -> str:
    """The table of every experiment of the papers (``python -m verify.report.experiments``)."""
    from verify.report import experiments

    return "\n".join(experiments.markdown_table()) + "\n"


# ------------------------------------------------------------------ numbers the pages quote
#: the committed reports the pages quote, relative to the repository root
GATE_BENCH = Path("reports/gate-calibration/bench-gate.json")
GATE_SWEEP = Path("reports/gate-calibration/profile-200-seeds/results.json")
GATE_FIXED = Path("reports/gate-calibration/fixed-claims-200-seeds/results.json")


def repository_root() -> Path:
    """The checkout the docs are built from: the folder above the imported ``verify`` package."""
    import verify

    return Path(verify.__file__).resolve().parents[1]


def _read_json(root: Path, rel: Path) -> Any:
    path = root / rel
    if not path.is_file():
        raise RuntimeError(f"the docs quote {rel}, which is not in {root}: build them from a checkout")
    return json.loads(path.read_text(encoding="utf-8"))


def _ids(ids: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def gate_budget_facts() -> dict[str, str]:
    """The ci profile's stated false-FAIL rate as ``rnn-verify run --profile ci`` prints it, and its terms."""
    from theory.catalog import GATE_ALPHA, all_claims, gate_budget

    total, rows = gate_budget("ci")
    by_alpha: dict[float, list[str]] = defaultdict(list)
    for cid, alpha, _ in rows:
        if alpha:
            by_alpha[alpha].append(cid)
    groups = sorted(by_alpha.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    parts = [f"{len(ids)} claims at {a:g} each" if len(ids) > 3 else f"{_ids(ids)} at {a:g}" for a, ids in groups]
    controls = [f"`{cid}`'s control {b:g}" for cid, _, b in rows if b]
    claims = all_claims().values()
    ci = [c for c in claims if "ci" in c.profiles]
    return {
        "ci_false_fail_rate": f"{total:.2g}",
        "ci_false_fail_terms": "; ".join(parts)
        + (f"; planned controls' miss probabilities: {', '.join(controls)}" if controls else ""),
        "gate_alpha": f"{GATE_ALPHA:g}",
        "ci_claims": str(len(ci)),
        "ci_claims_cpu": str(sum("cuda" not in c.requires for c in ci)),
    }


def gate_bench_facts(root: Path) -> dict[str, str]:
    """The ci profile's wall times from the committed ``python -m verify.bench.gate`` run."""
    bench = _read_json(root, GATE_BENCH)
    wall = {(r["source"], r["config"]): r["wall_s"] for r in bench["rows"]}
    ours = next(r for r in bench["rows"] if r["source"] == "this checkout" and r["config"] == "default")
    verdicts = ", ".join(f"{n} {v}" for v, n in ours["verdicts"].items() if n)
    return {
        "bench_machine": f"{bench['cpus']}-core {bench['machine'].split(',')[0]}",
        "bench_verdicts": verdicts,
        "bench_default_s": f"{wall['this checkout', 'default']:.0f}",
        "bench_workers1_s": f"{wall['this checkout', 'workers-1']:.0f}",
        "bench_loaded_s": f"{wall['this checkout', 'loaded']:.0f}",
        "bench_baseline_s": f"{wall['baseline', 'default']:.0f}",
        "bench_baseline_loaded_s": f"{wall['baseline', 'loaded']:.0f}",
    }


def _sweep_rows(doc: Any) -> dict[str, Any]:
    return {c["id"]: c["data"] for c in doc["claims"] if not c["id"].startswith("gate.")}


def gate_sweep_facts(root: Path) -> dict[str, str]:
    """What the committed 200-seed sweeps of the ci profile covered and found, against today's profile."""
    from theory.catalog import all_claims

    sweep, fixed = _sweep_rows(_read_json(root, GATE_SWEEP)), _sweep_rows(_read_json(root, GATE_FIXED))
    lo, hi = next(iter(sweep.values()))["seeds"]

    def failed(rows: dict[str, Any]) -> dict[str, list[int]]:
        return {cid: d["fail_seeds"] for cid, d in rows.items() if d["counts"]["FAIL"]}

    def missed(rows: dict[str, Any]) -> list[str]:
        return [f"{name} of `{cid}` ({c['caught']}/{c['runs']})" for cid, d in rows.items()
                for name, c in (d.get("controls") or {}).items() if c["caught"] < c["runs"]]  # fmt: skip

    def inconclusive(rows: dict[str, Any]) -> str:
        n = {cid: d["counts"]["INCONCLUSIVE"] for cid, d in rows.items() if d["counts"]["INCONCLUSIVE"]}
        return ", ".join(f"`{cid}` {k}" for cid, k in n.items()) or "none"

    fails = failed(sweep)
    cpu_ci = [c.id for c in all_claims().values() if "ci" in c.profiles and "cuda" not in c.requires]
    not_swept = [cid for cid in cpu_ci if cid not in sweep]
    return {
        "sweep_claims": str(len(sweep)),
        "sweep_seeds": f"{lo}–{hi}",
        "sweep_never_failed": str(len(sweep) - len(fails)),
        "sweep_failed": "; ".join(f"`{cid}` on {len(s)} seed(s) ({', '.join(map(str, s))})" for cid, s in fails.items())
        or "none",
        "sweep_controls": "every control was caught in every seed"
        if not missed(sweep)
        else "controls missed: " + "; ".join(missed(sweep)),
        "fixed_claims": _ids(list(fixed)),
        "fixed_result": _fixed_result(fixed, missed(fixed), inconclusive(fixed)),
        "sweep_not_covered_count": str(len(not_swept)),
        "sweep_not_covered": _ids(not_swept) or "none",
    }


def _fixed_result(fixed: dict[str, Any], missed: list[str], inconclusive: str) -> str:
    fails = {cid: d["fail_seeds"] for cid, d in fixed.items() if d["counts"]["FAIL"]}
    text = f"{sum(d['counts']['FAIL'] for d in fixed.values())} FAIL"
    text += f" ({'; '.join(f'`{c}` seeds {s}' for c, s in fails.items())})" if fails else ""
    text += ", controls missed: " + "; ".join(missed) if missed else ", every control caught"
    return text + f"; INCONCLUSIVE: {inconclusive}"


def _pyproject(root: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def package_facts(root: Path) -> dict[str, str]:
    """Python and torch requirements and the extras, as ``pyproject.toml`` states them."""
    project = _pyproject(root)["project"]
    torch = next(d for d in project["dependencies"] if d.replace(" ", "").startswith("torch"))
    rows = ["| extra | what it adds |", "|---|---|"]
    rows += [
        f"| `{name}` | {', '.join(f'`{r}`' for r in reqs)} |" for name, reqs in project["optional-dependencies"].items()
    ]
    return {
        "requires_python": project["requires-python"],
        "torch_requirement": f"`{torch}`",
        "extras_table": "\n".join(rows),
    }


def without_figure_list() -> str:
    """The claims whose report section has no figure, and why (:data:`verify.report.plots.WITHOUT_FIGURE`)."""
    from verify.report.plots import WITHOUT_FIGURE

    return "\n".join(f"* `{cid}`: {why}." for cid, why in WITHOUT_FIGURE.items())


def substitutions(srcdir: Path) -> dict[str, str]:
    """Every ``{{ name }}`` the pages use, computed at build time (``srcdir``: the docs folder, unused: the
    committed reports are read from the checkout the code is imported from, :func:`repository_root`)."""
    del srcdir
    root = repository_root()
    return {
        **gate_budget_facts(),
        **gate_bench_facts(root),
        **gate_sweep_facts(root),
        **package_facts(root),
        "without_figure_list": without_figure_list(),
    }
