"""Report folders: the marker and its manifest, and the guard that removes only what rnn-verify wrote."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from verify.errors import InvalidArgument
from verify.files import (
    MARKER,
    foreign_entries,
    is_report_folder,
    preflight_dir,
    read_marker,
    write_dir_atomic,
)

FIRST = {"results.json": b"{1}", "report.md": b"# one", "figures/a-1.png": b"png a", "figures/b-1.png": b"png b"}
SECOND = {"results.json": b"{2}", "report.md": b"# two", "figures/a-1.png": b"png a2"}


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under root (links as 'link -> target', folders as 'dir'), without following links."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = f"link -> {os.readlink(p)}"
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def test_marker_lists_what_was_written_and_a_rewrite_removes_only_that(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_dir_atomic(out, FIRST)
    marker = read_marker(out)
    assert marker is not None and marker.files == frozenset(FIRST) and marker.dirs == frozenset({"figures"})
    assert is_report_folder(out) and foreign_entries(out) == []
    (out / "notes.txt").write_text("mine")
    (out / "figures" / "sketch.svg").write_text("mine too")
    write_dir_atomic(out, SECOND)
    tree = _tree(out)
    assert tree["results.json"] == b"{2}" and tree["figures/a-1.png"] == b"png a2"
    assert "figures/b-1.png" not in tree  # written by the first report, not by the second: removed
    assert tree["notes.txt"] == b"mine" and tree["figures/sketch.svg"] == b"mine too"  # foreign: kept
    assert foreign_entries(out) == ["figures/sketch.svg", "notes.txt"]
    marker = read_marker(out)
    assert marker is not None and marker.files == frozenset(SECOND)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no temporary folder left


def test_figures_folder_removed_only_when_empty_and_made_by_us(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_dir_atomic(out, FIRST)
    write_dir_atomic(out, {"results.json": b"{3}"})
    assert not (out / "figures").exists()  # we made it, it is empty now
    write_dir_atomic(out, FIRST)
    (out / "figures" / "keep.txt").write_text("user file")
    write_dir_atomic(out, {"results.json": b"{4}"})
    assert (out / "figures" / "keep.txt").read_text() == "user file"


def test_empty_folder_accepted_and_kept_as_the_same_folder(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    inode = out.stat().st_ino
    write_dir_atomic(out, FIRST)
    assert out.stat().st_ino == inode and read_marker(out) is not None


@pytest.mark.parametrize("content", ["results.json", "notes.txt"])
def test_unmarked_non_empty_folder_refused_before_anything_changes(tmp_path: Path, content: str) -> None:
    out = tmp_path / "project"
    out.mkdir()
    (out / content).write_text("precious")
    before = _tree(out)
    with pytest.raises(InvalidArgument, match="not an rnn-verify report folder") as exc:
        write_dir_atomic(out, FIRST)
    assert str(out) in str(exc.value)
    if content == "results.json":
        assert "holds results.json but no" in str(exc.value)
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]


def test_foreign_file_where_the_report_needs_a_path_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_dir_atomic(out, {"results.json": b"{1}"})
    (out / "report.md").write_text("the user's own report.md")
    before = _tree(out)
    with pytest.raises(InvalidArgument, match=r"report\.md there was not written by rnn-verify"):
        write_dir_atomic(out, {"results.json": b"{2}", "report.md": b"# new"})
    assert _tree(out) == before


def test_symlink_inside_pointing_outside_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a-1.png").write_bytes(b"precious outside")
    (outside / "b-1.png").write_bytes(b"precious outside too")
    out = tmp_path / "rep"
    write_dir_atomic(out, FIRST)
    # someone replaces the figures folder by a link to their own folder, and report.md by a link
    for f in (out / "figures").iterdir():
        f.unlink()
    (out / "figures").rmdir()
    (out / "figures").symlink_to(outside, target_is_directory=True)
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(outside / "a-1.png")
    with pytest.raises(InvalidArgument, match="figures there is not a plain folder"):
        write_dir_atomic(out, FIRST)  # needs figures/a-1.png and report.md: both held by links
    with pytest.raises(InvalidArgument, match=r"report\.md there was not written by rnn-verify"):
        write_dir_atomic(out, {"report.md": b"# new"})
    write_dir_atomic(out, {"results.json": b"{5}"})  # the old manifest lists both: links are not followed
    assert (outside / "a-1.png").read_bytes() == b"precious outside"
    assert (outside / "b-1.png").read_bytes() == b"precious outside too"
    assert (out / "figures").is_symlink() and (out / "report.md").is_symlink()
    assert foreign_entries(out) == ["figures", "report.md"]


def test_symlink_as_out_writes_into_its_folder_under_the_same_rules(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_dir_atomic(real, FIRST)
    link = tmp_path / "latest"
    link.symlink_to(real, target_is_directory=True)
    assert write_dir_atomic(link, SECOND) == real
    assert link.is_symlink() and (real / "results.json").read_bytes() == b"{2}"
    project = tmp_path / "project"
    project.mkdir()
    (project / "results.json").write_text("mine")
    link2 = tmp_path / "to-project"
    link2.symlink_to(project, target_is_directory=True)
    with pytest.raises(InvalidArgument, match="not an rnn-verify report folder"):
        preflight_dir(link2)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(InvalidArgument, match="symbolic link to nothing"):
        preflight_dir(dangling)


def test_read_only_files(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_dir_atomic(out, FIRST)
    (out / "report.md").chmod(stat.S_IRUSR)
    (out / "mine.txt").write_text("read-only and mine")
    (out / "mine.txt").chmod(stat.S_IRUSR)
    write_dir_atomic(out, SECOND)  # a read-only file of ours is replaced (the folder is writable)
    assert (out / "report.md").read_bytes() == b"# two"
    assert (out / "mine.txt").read_text() == "read-only and mine"
    assert stat.S_IMODE((out / "mine.txt").stat().st_mode) == stat.S_IRUSR


@pytest.mark.parametrize(
    "marker",
    [
        "not json",
        '{"format": "something"}',
        '{"format": "rnn-verify.report-folder", "format_version": 1, "tool": "rnn-verify", "version": "1",'
        ' "files": ["../../victim.txt"], "dirs": []}',
        '{"format": "rnn-verify.report-folder", "format_version": 1, "tool": "rnn-verify", "version": "1",'
        ' "files": ["/etc/passwd"], "dirs": []}',
        '{"format": "rnn-verify.report-folder", "format_version": 1, "tool": "rnn-verify", "version": "1",'
        ' "files": "results.json", "dirs": []}',
    ],
)
def test_damaged_or_hostile_marker_is_refused(tmp_path: Path, marker: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("outside the report")
    out = tmp_path / "a" / "rep"
    out.mkdir(parents=True)
    (out / MARKER).write_text(marker)
    (out / "results.json").write_text("{}")
    with pytest.raises(InvalidArgument, match=r"marker .* is damaged"):
        write_dir_atomic(out, FIRST)
    assert victim.read_text() == "outside the report" and (out / "results.json").read_text() == "{}"


def test_marker_file_names_are_plain_relative_paths(tmp_path: Path) -> None:
    for bad in ("../x", "/abs", "a/../b", "a//b", "./a", MARKER, "a\\b", ""):
        with pytest.raises(InvalidArgument):
            write_dir_atomic(tmp_path / "rep", {bad: b"x"})
    assert not (tmp_path / "rep").exists()


def test_marker_is_valid_json_with_the_tool_and_version(tmp_path: Path) -> None:
    write_dir_atomic(tmp_path / "rep", FIRST)
    doc = json.loads((tmp_path / "rep" / MARKER).read_text())
    assert doc["format"] == "rnn-verify.report-folder" and doc["tool"] == "rnn-verify" and doc["version"]
    assert doc["files"] == sorted(FIRST) and doc["dirs"] == ["figures"]


def test_published_report_is_a_report_folder() -> None:
    """reports/latest carries the marker, so `rnn-verify report reports/latest` and its regeneration work."""
    root = Path(__file__).resolve().parents[2] / "reports" / "latest"
    marker = read_marker(root)
    assert marker is not None
    assert {"results.json", "report.md", "report.html", "junit.xml"} <= marker.files
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {MARKER}
    assert on_disk <= marker.files, f"files in reports/latest missing from its manifest: {on_disk - marker.files}"


def test_foreign_entry_on_a_report_name_is_refused_before_any_compute(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_dir_atomic(out, {"results.json": b"{1}"})
    (out / "report.html").write_text("the user's page")
    with pytest.raises(InvalidArgument, match=r"report\.html there was not written by rnn-verify"):
        preflight_dir(out)
    (out / "report.html").unlink()
    (out / "figures").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(InvalidArgument, match="figures there is not a plain folder"):
        preflight_dir(out)
