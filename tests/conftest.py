"""Shared pytest configuration: hypothesis profiles and common fixtures.

Hypothesis profiles (choose with ``--hypothesis-profile=NAME`` or the environment
variable ``RNN_VERIFY_HYPOTHESIS_PROFILE``; the default is ``ci``):

* ``dev``: 30 examples, random -- fast local iteration;
* ``ci``: derandomized (reproducible), no deadline, the example counts each test asks for;
* ``thorough``: 5x the examples, random, no deadline.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

from verify._func import forward_mode_ready

_common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("dev", max_examples=30, **_common)
settings.register_profile("ci", derandomize=True, print_blob=True, **_common)
settings.register_profile("thorough", max_examples=1000, **_common)
settings.load_profile(os.environ.get("RNN_VERIFY_HYPOTHESIS_PROFILE", "ci"))

torch.set_default_dtype(torch.float64)
# tests call torch.func.jacfwd/hessian themselves under filterwarnings = error: torch's forward-mode set-up
# (a deprecated torch.jit.script inside torch) done once, silently, as the toolkit does before its own forward mode
forward_mode_ready()

#: under pytest-xdist (``-n``, the default: pyproject's addopts) each worker process runs one test at a time with one
#: torch thread: the workers share the CPUs, and OpenMP's spinning threads would stall whenever another worker holds
#: a core (the same reason :data:`verify.run.check.THREADS_PER_PROCESS` is 1)
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

#: the user's cache folder (the sweep cell cache, ``run --lf``'s lastfailed.json) is never touched by the tests: the
#: session has its own, subprocesses included (set before any test module copies the environment)
_CACHE = tempfile.mkdtemp(prefix="rnn-verify-tests-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


def examples(n: int) -> int:
    """Example count for a property test: n under ``ci``, fewer under ``dev``, 5n under ``thorough``."""
    prof = settings.get_current_profile_name()
    if prof == "dev":
        return min(n, 30)
    if prof == "thorough":
        return 5 * n
    return n


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rnn-verify run --claims 'reference.*'`` once per test run (per xdist worker): its report folder, read only."""
    from verify.cli import main

    out = tmp_path_factory.mktemp("run") / "report"
    assert main(["run", "--claims", "reference.*", "--out", str(out), "-q"]) == 0
    return out


# ------------------------------------------------------------------ the heavy tier (issue 42)
_HEAVY_FILE = Path(__file__).with_name("heavy_tests.txt")


def _heavy_ids() -> set[str]:
    lines = _HEAVY_FILE.read_text(encoding="utf-8").splitlines()
    return {s.strip() for s in lines if s.strip() and not s.startswith("#")}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests listed in ``heavy_tests.txt`` ``heavy`` (the README's command deselects them; .ci/run runs
    them in their own step). With the whole of a listed file collected (no -k, no node ids), an entry that names
    none of its tests is a usage error: the list cannot rot silently."""
    heavy = _heavy_ids()
    seen: set[str] = set()
    for item in items:
        for key in (item.nodeid, item.nodeid.split("[")[0]):
            if key in heavy:
                item.add_marker(pytest.mark.heavy)
                seen.add(key)
    whole = not config.getoption("keyword") and not any("::" in str(a) for a in config.args)
    files = {item.nodeid.split("::")[0] for item in items}
    stale = sorted(h for h in heavy - seen if h.split("::")[0] in files)
    if whole and stale:
        raise pytest.UsageError(f"tests/heavy_tests.txt names tests that were not collected: {stale}")
