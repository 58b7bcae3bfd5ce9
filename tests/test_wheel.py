"""The wheel: built from this checkout, installed in a fresh venv, it runs the quick start outside the repo.

Slow (a fresh venv with torch: about 30 s and 1.3 GB on a machine with torch's wheel in a local
pip cache or find-links; more where pip downloads it), so deselected by default: ``pytest -m slow
tests/test_wheel.py``. torch is installed first as ``torch==<the running torch's version>``
(``RNN_VERIFY_WHEEL_TORCH`` overrides the requirement, e.g. with ``--index-url
https://download.pytorch.org/whl/cpu`` in ``PIP_INDEX_URL`` for the CPU build), then the wheel
with its dependencies resolved by pip. The wheel is built by ``python -m build --wheel`` where
the ``build`` package is installed, else by ``pip wheel --no-deps``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def _build_wheel(out: Path) -> Path:
    # from a copy of what the wheel is made of: setuptools builds in the source folder, and a build/ left
    # there would ship modules deleted since; the copy also shows that nothing else is needed
    src = out / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in ("verify", "theory"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(src)]
    _run(cmd, cwd=out)
    (wheel,) = out.glob("rnn_verify-*.whl")
    return wheel


def test_wheel_installs_in_a_fresh_venv_and_runs_the_quick_start(tmp_path: Path) -> None:
    import torch

    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    # the packages, their typed markers, the CLI and the pytest plugin's entry points; no tests, docs or reports
    assert "verify/__main__.py" in names and "theory/claims/rtrl.py" in names
    assert "verify/py.typed" in names and "theory/py.typed" in names
    assert not [n for n in names if n.split("/")[0] in ("tests", "docs", "reports", "experiments")]
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "rnn-verify = verify.__main__:main" in text and "rnn_verify = verify.testing.pytest_plugin" in text

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    torch_req = os.environ.get("RNN_VERIFY_WHEEL_TORCH") or f"torch=={torch.__version__.split('+')[0]}"
    _run([str(py), "-m", "pip", "install", "-q", *torch_req.split()], cwd=tmp_path)
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path)

    empty = tmp_path / "empty"  # outside the repo: only the installed wheel can be imported
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["OMP_NUM_THREADS"] = "1"
    where = _run([str(py), "-c", "import verify, theory; print(verify.__file__, theory.__file__)"], empty, env)
    assert str(env_dir) in where and str(ROOT) not in where, where
    cli = env_dir / "bin" / "rnn-verify"
    listing = _run([str(cli), "list"], empty, env)
    assert "rtrl.exact" in listing and "reference.adjoint" in listing
    out = _run([str(cli), "run", "--claims", "rtrl.exact", "reference.adjoint", "--no-report"], empty, env)
    assert "summary: 2 PASS, 0 FAIL" in out, out
    assert not list(empty.iterdir()), "--no-report wrote into the working folder"
