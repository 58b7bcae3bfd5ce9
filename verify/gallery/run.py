r"""``rnn-verify gallery``: every algorithm of every checkout given, through every claim that applies.

For each repository of :data:`verify.gallery.REPOSITORIES` with a checkout (``--checkout NAME=DIR``, or the
environment variable :func:`verify.gallery.env_var` names), and each of its :class:`~verify.gallery.Entry` rows,
this process runs ``rnn-verify run --impl TARGET=verify.gallery.MODULE:ADAPTER --impl-only [--claims ...]`` as a
child process with the checkout's path in that variable. The child loads the repository's code in its isolated
workers (:mod:`verify.run.pool`); this process imports neither the repository nor the adapters' targets -- it
reads the gallery's declarations, asks ``git`` for the checkout's commit and reads each child's
``results.json``. A row is:

* **ran**: the child's verdict per claim, seconds, and its exit code (1 where a claim FAILed);
* **refused**: the child exited 2 (the implementation did not load or failed its load check), with its one line;
* **skipped**: the entry declares why it cannot run (``Entry.skip``), or a module it needs (``Entry.requires``:
  ``jax``, ``flax``, ``equinox`` ...) is not importable here -- named, never a traceback.

A checkout at another commit than the one the adapters were written for runs, with a warning naming both.
Written to ``--out`` (default ``reports/gallery``) through the guarded writer (:func:`verify.files.write_dir_atomic`):
``gallery.json`` (every row, with its reproducer), ``README.md`` (the tables) and, per row, the child's report
folder ``<repo>/<algorithm>/`` (report.html, results.json, junit.xml, figures).

Exit codes: 0 the gallery was written (a FAIL of published code is a finding, not an error of this command);
2 a usage error (no checkout, an unknown repository, an output folder that is not rnn-verify's).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.errors import InvalidArgument
from verify.exit_codes import EXIT_OK
from verify.files import make_temp_dir, output_lock, preflight_dir, read_marker, remove_temp_dir, write_dir_atomic
from verify.gallery import GLUE_TARGET, Entry, Repository, checkout_path, env_var, glue_lines, repositories
from verify.text import clean

__all__ = ["Row", "cmd_gallery", "git_commit", "markdown", "parse_checkout", "run_gallery"]

#: the modules the ``gallery`` extra installs (pyproject.toml)
_GALLERY_EXTRA = ("jax", "jaxlib", "equinox", "flax", "optax")

#: the files of a child's report folder the gallery keeps (the marker and lock are the child's own bookkeeping)
_KEEP = (".html", ".json", ".xml", ".png", ".svg", ".md", ".csv")


def parse_checkout(text: str) -> tuple[str, Path]:
    """``NAME=DIR`` -> (name, absolute path); :class:`InvalidArgument` naming ``--checkout`` otherwise."""
    name, sep, where = text.partition("=")
    if not sep or not name or not where:
        raise InvalidArgument("--checkout", text, "NAME=DIR, e.g. vanilla-rtrl=~/src/vanilla-rtrl")
    return name.strip(), Path(os.path.abspath(os.path.expanduser(where)))


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (``git rev-parse HEAD``; runs no code of the repository), or None."""
    try:
        done = subprocess.run(
            ["git", "-c", f"safe.directory={root}", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and len(out) == 40 else None


@dataclass
class Row:
    """One gallery row: an entry of a repository, how it ran and what the claims said."""

    repo: str
    algorithm: str
    target: str
    spec: str
    glue_lines: int
    status: str  #: "ran", "refused" or "skipped"
    reason: str = ""
    exit_code: int | None = None
    seconds: float = 0.0
    claims: list[dict[str, Any]] = field(default_factory=list)
    reproducer: str = ""
    note: str = ""
    glue_why: str = ""
    truth: str = ""
    findings: list[str] = field(default_factory=list)
    report: str = ""

    def verdicts(self) -> dict[str, int]:
        """How many claims of the row came out each verdict."""
        return dict(Counter(c["verdict"] for c in self.claims))


def _missing(entry: Entry) -> list[str]:
    """The modules ``entry`` requires that are not importable here (found without importing them)."""
    missing = []
    for name in entry.requires:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in text).strip("-").lower() or "entry"


def _reproducer(repo: Repository, entry: Entry, seed: int) -> str:
    spec = f"{entry.target}=verify.gallery.{repo.module}:{entry.adapter}"
    parts = ["rnn-verify", "run", "--impl", spec, "--impl-only"]
    if entry.claims:
        parts += ["--claims", *entry.claims]
    if seed:
        parts += ["--seed", str(seed)]
    return f"{env_var(repo.name)}=<checkout> " + shlex.join(parts)


def _child_claims(results: Path) -> list[dict[str, Any]]:
    doc = json.loads(results.read_text(encoding="utf-8"))
    return [
        {
            "id": str(c.get("id")),
            "verdict": str(c.get("verdict")),
            "seconds": round(float(c.get("wall_time") or 0.0), 2),
            "summary": clean(str(c.get("summary") or ""))[:400],
            "reason": clean(str(c.get("reason") or ""))[:400],
        }
        for c in doc.get("claims", [])
    ]


def run_entry(
    repo: Repository,
    entry: Entry,
    root: Path,
    staging: Path,
    *,
    seed: int = 0,
    timeout: float | None = None,
    workers: int = 1,
) -> tuple[Row, dict[str, bytes]]:
    """Run one entry in a child ``rnn-verify run``; the row and the files of its report folder (by relative name)."""
    spec = f"{entry.target}=verify.gallery.{repo.module}:{entry.adapter}"
    row = Row(
        repo=repo.name, algorithm=entry.algorithm, target=entry.target, spec=spec,
        glue_lines=glue_lines(repo, entry) if not entry.skip else 0, status="skipped",
        reproducer=_reproducer(repo, entry, seed),
        note=entry.note, glue_why=entry.glue_why, truth=entry.truth, findings=list(entry.findings),
    )  # fmt: skip
    if entry.skip:
        row.reason = entry.skip
        return row, {}
    missing = _missing(entry)
    if missing:
        extra = [m for m in missing if m in _GALLERY_EXTRA]
        other = [m for m in missing if m not in _GALLERY_EXTRA]
        how = ([f"pip install -e '.[gallery]' for {', '.join(extra)}"] if extra else []) + (
            [f"{', '.join(other)}: the repository's own dependencies (see its notes)"] if other else []
        )
        row.reason = f"needs {', '.join(missing)}, not importable here ({'; '.join(how)})"
        return row, {}
    out = staging / _slug(repo.name) / _slug(entry.algorithm)
    cmd = [sys.executable, "-m", "verify", "run", "--impl", spec, "--impl-only", "--out", str(out), "-q"]
    cmd += ["--seed", str(seed), "--workers", str(workers), "--color", "no"]
    if entry.claims:
        cmd += ["--claims", *entry.claims]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    env = {**os.environ, env_var(repo.name): str(root)}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    row.seconds = round(time.perf_counter() - t0, 1)
    row.exit_code = done.returncode
    results = out / "results.json"
    if done.returncode == 2 or not results.is_file():
        lines = [ln for ln in clean(done.stderr).splitlines() if ln.strip()]
        row.status = "refused"
        row.reason = (lines[-1] if lines else f"exit {done.returncode}, no output")[:600]
        return row, {}
    row.status = "ran"
    row.claims = _child_claims(results)
    rel = f"{_slug(repo.name)}/{_slug(entry.algorithm)}"
    row.report = f"{rel}/report.html"
    files = {
        f"{rel}/{p.relative_to(out).as_posix()}": p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in _KEEP and not p.name.startswith(".")
    }
    return row, files


def run_gallery(
    checkouts: Mapping[str, Path],
    *,
    names: Sequence[str] = (),
    seed: int = 0,
    timeout: float | None = None,
    workers: int = 1,
    progress: Any = None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Every entry of every repository with a checkout in ``checkouts`` (by repository name): the gallery
    document and the files to write. ``progress(line)`` is told of each row as it ends."""
    say = progress or (lambda line: None)
    repos = repositories(names)
    known = {r.name for r in repos} | {r.module for r in repos}
    unknown = [n for n in checkouts if n not in known]
    if unknown:
        raise InvalidArgument("--checkout", unknown[0], f"a gallery repository: {', '.join(r.name for r in repos)}")
    doc: dict[str, Any] = {"schema": "rnn-verify-gallery", "version": 1, "seed": seed, "repositories": []}
    files: dict[str, bytes] = {}
    staging = make_temp_dir("gallery")
    try:
        for repo in repos:
            given = checkouts.get(repo.name) or checkouts.get(repo.module)
            if given is None:
                continue
            root = checkout_path(repo, given)
            found = git_commit(root)
            warning = ""
            if found != repo.commit:
                warning = (
                    f"{repo.name}: the checkout {root} is at {found or 'an unknown commit (not a git checkout)'}; "
                    f"the adapters were written for {repo.commit}: its rows may differ from the committed ones"
                )
                say(f"warning: {warning}")
            rows = []
            for entry in repo.entries:
                row, got = run_entry(repo, entry, root, staging, seed=seed, timeout=timeout, workers=workers)
                rows.append(row)
                files.update(got)
                counts = ", ".join(f"{n} {v}" for v, n in sorted(row.verdicts().items())) or row.reason[:120]
                say(f"{repo.name} {entry.algorithm}: {row.status} ({counts}) {row.seconds:.0f} s")
            doc["repositories"].append(
                {
                    "name": repo.name, "module": repo.module, "url": repo.url, "commit": repo.commit,
                    "checked_out": found,
                    "warning": warning, "license": repo.license, "language": repo.language, "cite": repo.cite,
                    "argv": list(sys.argv), "pythonpath": os.environ.get("PYTHONPATH", ""),
                    "rows": [r.__dict__ for r in rows],
                }
            )  # fmt: skip
    finally:
        remove_temp_dir(staging)
    doc["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return doc, files


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 3] + "..."


_MARK = {"PASS": "PASS", "FAIL": "**FAIL**", "SKIPPED": "SKIPPED", "INCONCLUSIVE": "INCONCLUSIVE"}


def _table(repo: Mapping[str, Any], links: bool) -> list[str]:
    """The lines of a repository's verdict table: a line per claim of a row that ran, one for a row that did not."""
    lines = ["", "| algorithm | --impl | claim | verdict | s | glue lines |", "|---|---|---|---|---:|---:|"]
    for row in repo["rows"]:
        link = f"[{row['algorithm']}]({row['report']})" if row.get("report") and links else row["algorithm"]
        if row["status"] != "ran":
            why = _short(row.get("reason", ""), 300)
            lines.append(
                f"| {link} | `{row['target']}` | -- | {row['status'].upper()}: {why} | {row['seconds']:.0f} "
                f"| {row['glue_lines']} |"
            )
            continue
        for i, c in enumerate(row["claims"]):
            first = i == 0
            verdict = _MARK.get(c["verdict"], c["verdict"])
            if c["verdict"] == "SKIPPED" and c.get("reason"):
                verdict += ": " + _short(c["reason"], 100)
            lines.append(
                f"| {link if first else ''} | {'`' + row['target'] + '`' if first else ''} | `{c['id']}` | "
                f"{verdict} | {c['seconds']:.1f} | {row['glue_lines'] if first else ''} |"
            )
    return lines


def markdown(doc: Mapping[str, Any], *, links: bool = True) -> str:
    """The gallery as Markdown: per repository @ commit, a table algorithm x claim -> verdict, seconds, glue
    lines; ``links=False`` leaves out the links to the rows' report folders (the docs site does not hold them)."""
    lines = ["# The gallery: published implementations, judged", ""]
    lines.append(
        "Written by `rnn-verify gallery` (seed {seed}, finished {finished}). Each row ran in its own "
        "`rnn-verify run --impl ... --impl-only`, the repository's code imported from a checkout in isolated "
        "worker processes; its report folder is linked. A FAIL in published code is a finding: see the notes "
        "beside the table for how each was established.".format(seed=doc.get("seed"), finished=doc.get("finished"))
    )
    if links and any(c for repo in doc.get("repositories", []) for r in repo["rows"] for c in r["claims"]):
        lines += ["", "![the verdicts at a glance](gallery.png)"]
    for repo in doc.get("repositories", []):
        lines += ["", f"## {repo['name']} @ {str(repo.get('checked_out') or '?')[:12]}", ""]
        lines.append(
            f"github.com/{repo['url']} ({repo['language']}; license: {repo['license']}); adapters written for "
            f"{repo['commit'][:12]}. {repo.get('cite', '')}"
        )
        notes = f"notes-{repo.get('module', '')}.md"
        lines += [
            "",
            f"Evidence, own checks and reproducers of the findings: [{notes}](../gallery-notes/{notes})."
            if links
            else f"Evidence, own checks and reproducers of the findings: `reports/gallery-notes/{notes}` in the "
            "repository.",
        ]
        if repo.get("warning"):
            lines += ["", f"> warning: {repo['warning']}"]
        lines += _table(repo, links)
        for title, key in (
            ("Notes", "note"),
            (f"Glue over {GLUE_TARGET} lines, and why", "glue_why"),
            ("How the verdicts were established", "truth"),
        ):
            have = [r for r in repo["rows"] if r.get(key)]
            if have:
                lines += ["", f"**{title}.**", ""] + [f"- **{r['algorithm']}**: {r[key]}" for r in have]
        found = [(r, f) for r in repo["rows"] for f in r.get("findings") or ()]
        if found:
            lines += ["", "**Findings.**", ""] + [f"- **{r['algorithm']}**: {f}" for r, f in found]
        ran = [r for r in repo["rows"] if r["status"] != "skipped"]
        if ran:
            lines += ["", "Reproduce a row (the checkout's path in the variable):", ""]
            lines += [f"- {r['algorithm']}: `{r['reproducer']}`" for r in ran]
    return "\n".join(lines) + "\n"


_COLORS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCONCLUSIVE": "#f9a825", "SKIPPED": "#bdbdbd"}


def figure_png(doc: Mapping[str, Any]) -> bytes | None:
    """A grid of the verdicts (rows: repository and algorithm; columns: claims), PNG; None with no claim run."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = [(f"{repo['name']}: {r['algorithm']}", r) for repo in doc.get("repositories", []) for r in repo["rows"]]
    claims = sorted({c["id"] for _, r in rows for c in r["claims"]})
    if not claims:
        return None
    fig = Figure(figsize=(4.5 + 0.3 * len(claims), 1.6 + 0.3 * len(rows)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for i, (_, row) in enumerate(rows):
        got = {c["id"]: c["verdict"] for c in row["claims"]}
        for j, cid in enumerate(claims):
            if cid in got:
                ax.fill_between([j, j + 1], i, i + 1, color=_COLORS.get(got[cid], "white"), linewidth=0)
        if row["status"] != "ran":
            ax.text(0.1, i + 0.5, f"{row['status'].upper()}: {_short(row.get('reason', ''), 70)}", va="center",
                    fontsize=6, color="#555555")  # fmt: skip
    ax.set_xlim(0, len(claims))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(claims))], claims, rotation=90, fontsize=6)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], [name for name, _ in rows], fontsize=7)
    ax.tick_params(length=0)
    ax.legend(handles=[Patch(color=c, label=v) for v, c in _COLORS.items()], fontsize=6, loc="upper left",
              bbox_to_anchor=(1.0, 1.0), frameon=False)  # fmt: skip
    ax.set_title("published implementations x claims", fontsize=8, loc="left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    return buf.getvalue()


def _checkouts(args: argparse.Namespace) -> dict[str, Path]:
    """``--checkout`` pairs, else the environment variables that name checkouts; none is exit 2."""
    given = dict(parse_checkout(t) for t in (args.checkout or []))
    if not given:
        for repo in repositories():
            value = os.environ.get(env_var(repo.name))
            if value:
                given[repo.name] = Path(os.path.abspath(os.path.expanduser(value)))
    if not given:
        names = ", ".join(f"{r.name} (github.com/{r.url} @ {r.commit[:12]})" for r in repositories())
        raise InvalidArgument("--checkout", "none given", f"NAME=DIR for at least one of: {names}")
    return given


def _keep_previous(out: Path, doc: dict[str, Any], files: dict[str, bytes]) -> None:
    """Keep, from the gallery already in ``out`` (written by rnn-verify: its marker lists ``gallery.json``), the
    repositories not run this time -- their rows and report files -- so that a gallery is built one checkout at a
    time. Rows are kept in the table order of :data:`verify.gallery.REPOSITORIES`."""
    marker = read_marker(out) if out.is_dir() else None
    if marker is None or "gallery.json" not in marker.files:
        return
    try:
        old = json.loads((out / "gallery.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    ran = {r["name"] for r in doc["repositories"]}
    for repo in old.get("repositories", []):
        if not isinstance(repo, dict) or repo.get("name") in ran:
            continue
        doc["repositories"].append(repo)
        prefix = _slug(str(repo.get("name"))) + "/"
        for rel in marker.files:
            if rel.startswith(prefix) and (out / rel).is_file():
                files[rel] = (out / rel).read_bytes()
    order = {r.name: i for i, r in enumerate(repositories())}
    doc["repositories"].sort(key=lambda r: order.get(r.get("name"), len(order)))


def cmd_gallery(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``rnn-verify gallery``: run, then write ``gallery.json``, ``README.md`` and the rows' report folders."""
    checkouts = _checkouts(args)
    out = preflight_dir(Path(os.path.abspath(args.out or "reports/gallery")), "--out", needs=("gallery.json",))
    quiet = bool(getattr(args, "quiet", False))

    def say(line: str) -> None:
        if not quiet or line.startswith("warning"):
            print(f"rnn-verify gallery: {clean(line)}", file=sys.stderr, flush=True)

    with output_lock(out, "--out", command="rnn-verify " + shlex.join(argv)):
        doc, files = run_gallery(
            checkouts, names=args.repo or (), seed=args.seed, timeout=args.timeout, workers=args.workers, progress=say
        )
        _keep_previous(out, doc, files)
        doc["command"] = "rnn-verify " + shlex.join(argv)
        files["gallery.json"] = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
        files["README.md"] = markdown(doc).encode()
        png = figure_png(doc)
        if png is not None:
            files["gallery.png"] = png
        write_dir_atomic(out, files)
    rows = [r for repo in doc["repositories"] for r in repo["rows"]]
    fails = sum(c["verdict"] == "FAIL" for r in rows for c in r["claims"])
    print(f"gallery: {len(rows)} rows, {fails} FAIL verdicts in published code; {clean(str(out / 'README.md'))}")
    return EXIT_OK
