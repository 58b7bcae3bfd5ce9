"""The cell cache: content keys, the folder's marker rules, atomic validated entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.errors import InvalidArgument
from verify.run.sweep import CellCache, SweepCell, cell_key, code_version
from verify.run.sweep.cache import CACHE_MARKER


def test_keys_depend_on_task_params_and_code_only() -> None:
    a = cell_key("t", {"x": 1, "y": [1, 2]}, code="c1")
    assert a == cell_key("t", {"y": [1, 2], "x": 1}, code="c1")  # key order is irrelevant
    assert a != cell_key("t", {"x": 2, "y": [1, 2]}, code="c1")
    assert a != cell_key("u", {"x": 1, "y": [1, 2]}, code="c1")
    assert a != cell_key("t", {"x": 1, "y": [1, 2]}, code="c2")  # new sources: a new key
    assert len(code_version()) == 16 and code_version() == code_version()
    assert SweepCell("t", {"x": 1}).key == cell_key("t", {"x": 1})


def test_cells_refuse_parameters_that_are_not_json() -> None:
    with pytest.raises(InvalidArgument, match="params"):
        SweepCell("t", {"x": object()})
    with pytest.raises(InvalidArgument, match="params"):
        SweepCell("t", {"x": float("nan")})


def test_put_get_and_invalid_entries(tmp_path: Path) -> None:
    cache = CellCache(tmp_path / "c")
    assert (tmp_path / "c" / CACHE_MARKER).is_file()
    cell = SweepCell("t", {"x": 1})
    assert cache.get(cell.key, cell.task, cell.params) is None
    path = cache.put(cell.key, cell.task, cell.params, {"v": [1.5]}, 0.25, "host:1")
    hit = cache.get(cell.key, cell.task, cell.params)
    assert hit is not None and hit.value == {"v": [1.5]} and hit.wall_time == 0.25 and hit.worker == "host:1"
    assert cache.keys() == [cell.key]
    # other parameters under the same key (an edited file) or another code version: not a hit
    assert cache.get(cell.key, cell.task, {"x": 2}) is None
    assert cache.get(cell.key, cell.task, cell.params, code="other") is None
    path.write_text("{not json")
    assert cache.get(cell.key, cell.task, cell.params) is None  # a damaged entry is recomputed, not trusted
    doc = {"format": "rnn-verify.cell", "format_version": 1, "key": cell.key, "task": "t", "params": {"x": 1},
           "code": code_version(), "wall_time": "soon", "worker": "w", "value": 1}  # fmt: skip
    path.write_text(json.dumps(doc))
    assert cache.get(cell.key, cell.task, cell.params) is None  # field by field
    with pytest.raises(InvalidArgument, match="key"):
        cache.entry_path("../../etc")


def test_the_cache_folder_must_be_new_empty_or_marked(tmp_path: Path) -> None:
    CellCache(tmp_path / "new")  # created and marked
    (tmp_path / "empty").mkdir()
    CellCache(tmp_path / "empty")  # marked
    assert (tmp_path / "empty" / CACHE_MARKER).is_file()
    CellCache(tmp_path / "empty")  # marked: accepted again
    foreign = tmp_path / "project"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(InvalidArgument, match="without the marker"):
        CellCache(foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # untouched
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgument, match="not a folder"):
        CellCache(tmp_path / "file")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / CACHE_MARKER).write_text("[]")
    with pytest.raises(InvalidArgument, match="marker"):
        CellCache(bad)
    (tmp_path / "link").symlink_to(tmp_path / "new")
    with pytest.raises(InvalidArgument, match="symbolic link"):
        CellCache(tmp_path / "link")
