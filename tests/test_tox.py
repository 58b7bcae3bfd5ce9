"""tox never fetches torch's CUDA build (issue 41).

tox installs an env's ``deps`` first, then the package's dependencies, then the package (``--no-deps``). So an env
whose ``deps`` pin torch's CPU build from the CPU index has ``torch>=2.2`` satisfied by the time the package's
dependencies are installed, and pip downloads no nvidia/triton wheel (3+ GB: the CUDA build that PyPI serves on
Linux). The configuration is read as tox resolves it (``tox config --format json``: inheritance from
``[testenv]`` and ``{env:...}`` defaults applied), without creating any environment or touching the network.
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

pytest.importorskip("tox", reason="tox is in the test extra: pip install -e '.[test]'")
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


def _tox_config(tmp_path: Path) -> dict[str, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOX", "TORCH_INDEX_URL"))}
    cmd = [sys.executable, "-m", "tox", "config", "-c", str(ROOT / "tox.ini"), "--workdir", str(tmp_path / "tox")]
    cmd += ["-e", "ALL", "-k", "deps", "skip_install", "commands_pre", "commands", "--format", "json"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    envs: dict[str, dict[str, object]] = json.loads(proc.stdout)["env"]
    return {name: conf for name, conf in envs.items() if not name.startswith(".")}  # .pkg: the build env


def _package_torch() -> Requirement:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (torch,) = [Requirement(d) for d in deps if Requirement(d).name == "torch"]
    return torch


def test_every_env_that_installs_the_package_gets_torch_cpu_first(tmp_path: Path) -> None:
    envs = _tox_config(tmp_path)
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    declared = {s.removeprefix("testenv:") for s in ini.sections() if s.startswith("testenv:")}
    assert declared <= set(envs) and {"py", "full", "docs", "type"} <= set(envs), sorted(envs)
    package_torch = _package_torch()
    installing = [name for name, conf in envs.items() if not conf["skip_install"]]
    assert installing, envs
    for name in installing:
        deps = [str(d) for d in envs[name]["deps"]]  # type: ignore[union-attr]
        pins = [Requirement(d) for d in deps if not d.startswith("-") and Requirement(d).name == "torch"]
        assert len(pins) == 1, f"tox env {name}: deps={deps} must pin torch once"
        (spec,) = pins[0].specifier
        assert spec.operator == "==", f"tox env {name}: torch pin {pins[0]} is not exact"
        # the pin satisfies the package's own requirement, so installing the package's dependencies keeps it
        assert package_torch.specifier.contains(spec.version), (name, str(pins[0]), str(package_torch))
        # ... and the CPU build wins: its index is searched (2.13.0+cpu sorts above PyPI's 2.13.0)
        assert f"--extra-index-url {CPU_INDEX}" in deps or f"--index-url {CPU_INDEX}" in deps, (name, deps)
        # nothing installs torch after the package (the old commands_pre did, after the CUDA build was in)
        later = [str(c) for c in [*envs[name]["commands_pre"], *envs[name]["commands"]]]  # type: ignore[misc]
        assert not [c for c in later if "pip" in c and "install" in c], (name, later)


def test_tox_itself_is_in_the_test_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(Requirement(r).name == "tox" for r in extras["test"]), extras["test"]
