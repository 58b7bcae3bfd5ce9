"""The gallery's declarations (verify.gallery): every entry runnable as declared, small, and backed by a committed
report -- checked without network, without the repositories and without importing them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from theory.catalog import all_claims
from verify.checks import uses
from verify.errors import InvalidArgument
from verify.gallery import REPOSITORIES, Entry, Repository, checkout_path, env_var, glue_lines, repositories
from verify.gallery.run import _reproducer, markdown, parse_checkout
from verify.impl.loader import resolve_target

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "reports" / "gallery"
NOTES = ROOT / "reports" / "gallery-notes"
#: the most lines of glue an adapter may take (issue 38: "<= 30 lines each")
GLUE_MAX = 30

REPOS = repositories()
ENTRIES = [(r, e) for r in REPOS for e in r.entries]


def _id(item: tuple[Repository, Entry]) -> str:
    return f"{item[0].name}:{item[1].algorithm}"


def test_every_repository_is_declared_with_a_commit_and_license() -> None:
    assert [r.module for r in REPOS] == list(REPOSITORIES)
    for repo in REPOS:
        assert len(repo.commit) == 40 and int(repo.commit, 16) >= 0, repo.name
        assert repo.license and repo.language in ("numpy", "torch", "jax"), repo.name
        assert repo.url.count("/") == 1 and repo.marker, repo.name


@pytest.mark.parametrize("item", ENTRIES, ids=_id)
def test_every_entry_runs_claims_that_exercise_its_target(item: tuple[Repository, Entry]) -> None:
    repo, entry = item
    if entry.skip:  # declared not runnable, with the reason: nothing is run for it
        assert not entry.claims and len(entry.skip) > 20, f"{_id(item)}: a skip row states why and runs no claim"
        return
    target = resolve_target(entry.target)
    known = set(all_claims())
    for cid in entry.claims:
        assert cid in known, f"{_id(item)}: {cid} is not a claim"
        assert target in uses(cid), f"{_id(item)}: {cid} does not exercise {target} (it uses {uses(cid)})"
    if not entry.skip and glue_lines(repo, entry) > GLUE_MAX:  # over the target: the table says why
        assert entry.glue_why, f"{_id(item)}: {glue_lines(repo, entry)} lines of glue > {GLUE_MAX}, no glue_why"


def test_the_modules_import_without_the_repositories_or_jax() -> None:
    """``import verify.gallery.<module>`` imports no repository and none of jax/flax/equinox (made unimportable)."""
    code = (
        "import sys\n"
        "for m in ('jax', 'jaxlib', 'flax', 'equinox'): sys.modules[m] = None\n"
        "import importlib\n"
        f"for m in {list(REPOSITORIES)!r}: importlib.import_module('verify.gallery.' + m)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_checkout_errors_name_the_variable_and_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = REPOS[0]
    monkeypatch.delenv(env_var(repo.name), raising=False)
    with pytest.raises(InvalidArgument, match=env_var(repo.name)):
        checkout_path(repo)
    monkeypatch.setenv(env_var(repo.name), str(tmp_path))
    with pytest.raises(InvalidArgument, match="it has no"):
        checkout_path(repo)
    with pytest.raises(InvalidArgument, match="--checkout"):
        parse_checkout("no-equals-sign")
    assert parse_checkout("a=b")[0] == "a"


def _committed() -> dict[str, object]:
    path = GALLERY / "gallery.json"
    if not ENTRIES:
        pytest.skip("no gallery entry is declared yet")
    if not path.is_file():
        pytest.fail(f"{path} is not committed: run `rnn-verify gallery --checkout NAME=DIR ...` and commit it")
    doc: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return doc


@pytest.mark.parametrize("item", ENTRIES, ids=_id)
def test_every_gallery_row_cites_a_committed_report(item: tuple[Repository, Entry]) -> None:
    """Each declared entry has its row in reports/gallery/gallery.json, run at the declared commit, with the
    declared reproducer; a row that ran has its report folder (results.json, report.html) committed."""
    repo, entry = item
    doc = _committed()
    repos = {r["name"]: r for r in doc["repositories"]}  # type: ignore[attr-defined]
    assert repo.name in repos, f"{repo.name} has no rows in {GALLERY / 'gallery.json'}"
    got = repos[repo.name]
    assert got["commit"] == repo.commit and got["checked_out"] == repo.commit, f"{repo.name}: run at another commit"
    rows = {r["algorithm"]: r for r in got["rows"]}
    assert entry.algorithm in rows, f"{_id(item)} has no row in the committed gallery"
    row = rows[entry.algorithm]
    assert row["reproducer"] == _reproducer(repo, entry, int(doc.get("seed", 0))), "declared entry changed since"
    assert row["status"] in ("ran", "skipped", "refused")
    if row["status"] == "ran":
        folder = GALLERY / Path(row["report"]).parent
        assert (folder / "results.json").is_file() and (folder / "report.html").is_file(), folder
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert {c["id"]: c["verdict"] for c in results["claims"]} == {c["id"]: c["verdict"] for c in row["claims"]}
        if entry.claims:
            assert {c["id"] for c in row["claims"]} == set(entry.claims)
    elif row["status"] == "skipped" and entry.skip:
        assert row["reason"] == entry.skip


def test_every_repository_has_its_notes_committed() -> None:
    """The table links each repository's notes (the evidence and reproducers of its findings)."""
    for repo in REPOS:
        assert (NOTES / f"notes-{repo.module}.md").is_file(), repo.name


def test_the_committed_table_is_the_rendering_of_the_committed_rows() -> None:
    doc = _committed()
    assert (GALLERY / "README.md").read_text(encoding="utf-8") == markdown(doc)
