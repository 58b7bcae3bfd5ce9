"""The benchmark scripts that write folders obey the report-folder rule: nothing rnn-verify did not write is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.bench import gpu, uoro_statistics
from verify.files import read_marker


@pytest.fixture()
def foreign(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    (d / "notes.txt").write_text("mine", encoding="utf-8")
    (d / "calibration.json").write_text("{}", encoding="utf-8")  # a name the bench would write
    return d


def test_adversarial_calibration_refuses_a_foreign_folder_before_computing(
    foreign: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        uoro_statistics.main(["--calibrate", "2", "--what", "adversarial", "--cells", "exact", "--out", str(foreign)])
    assert exc.value.code == 2
    err = capsys.readouterr()
    assert "--out" in err.err and "marker" in err.err and "adversarial calibration" not in err.out
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (foreign / "calibration.json").read_text(encoding="utf-8") == "{}"


def test_adversarial_calibration_writes_a_marked_folder_and_replaces_only_its_files(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    args = ["--calibrate", "2", "--what", "adversarial", "--cells", "exact", "--levels", "0.05", "--out", str(out)]
    uoro_statistics.main(args)
    marker = read_marker(out)
    assert marker is not None and {"calibration.md", "calibration.json"} <= set(marker.files)
    (out / "extra.txt").write_text("user's", encoding="utf-8")
    uoro_statistics.main(args)  # the second run replaces its own files, keeps the user's
    assert (out / "extra.txt").read_text(encoding="utf-8") == "user's"
    assert (out / "calibration.md").read_text(encoding="utf-8").startswith("# Adversarial calibration")


def test_gpu_budget_calibration_refuses_a_foreign_folder(foreign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = gpu.main(["--calibrate", "--seeds", "0", "--large-seeds", "0", "--out", str(foreign)])
    assert rc == 2 and "--out" in capsys.readouterr().err
    assert (foreign / "calibration.json").read_text(encoding="utf-8") == "{}"


def test_gate_bench_refuses_a_foreign_json_and_a_checkout_without_verify(tmp_path: Path) -> None:
    """``python -m verify.bench.gate`` checks its outputs and inputs before minutes of measuring."""
    from verify.bench import gate

    mine = tmp_path / "results.json"
    mine.write_text('{"tool": "someone else"}', encoding="utf-8")
    with pytest.raises(SystemExit, match="refusing to overwrite"):
        gate.main(["--json", str(mine)])
    assert mine.read_text(encoding="utf-8") == '{"tool": "someone else"}'
    with pytest.raises(SystemExit):
        gate.main(["--baseline-source", str(tmp_path)])
    with pytest.raises(SystemExit):
        gate.main(["--neighbours", "-1"])


def test_gate_bench_baseline_imports_the_baseline(tmp_path: Path) -> None:
    """A baseline run imports the baseline's ``verify``: started in this checkout it imported this one (the current
    folder precedes PYTHONPATH for ``python -m``), so old and new measured the same code; runs start elsewhere."""
    import os

    from verify.bench import gate

    other = tmp_path / "old-checkout"
    (other / "verify").mkdir(parents=True)
    (other / "verify" / "__init__.py").write_text("", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(other))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert gate._imported_from(env, str(scratch)) == str(other)
    assert gate._imported_from(env, gate.HERE) == gate.HERE  # the pitfall the scratch folder avoids
