"""Heavy modules imported on first use (issue 42): the start paths of the CLI and the isolated worker pay torch only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from verify._lazy import LazyModule, scipy_stats

ROOT = Path(__file__).resolve().parents[1]

#: imported by no start path: each is seconds of CPU summed over a test run's processes
HEAVY = ("scipy.stats", "scipy.optimize", "sympy", "matplotlib", "jax", "hypothesis")
_JVP = "torch._decomp.decompositions_for_jvp"


def test_a_lazy_module_answers_from_the_real_module() -> None:
    import scipy.stats

    assert scipy_stats.norm is scipy.stats.norm
    assert scipy_stats.norm.ppf(0.975) == scipy.stats.norm.ppf(0.975)
    assert "norm" in dir(scipy_stats)


def test_a_lazy_module_imports_on_first_use_only() -> None:
    mod = LazyModule("json.decoder")  # already imported: the stand-in still holds nothing until asked
    assert "not imported yet" in repr(mod)
    assert mod.JSONDecodeError is json.decoder.JSONDecodeError
    assert "loaded" in repr(mod) and "not imported" not in repr(mod)


def test_a_missing_attribute_is_an_attribute_error() -> None:
    mod = LazyModule("json")
    try:
        mod.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_the_start_paths_import_no_heavy_module() -> None:
    """``rnn-verify run`` (:mod:`verify.cli`) and an isolated worker (its bootstrap imports
    :mod:`verify.run.sweep.cells` to run a task) leave scipy.stats, sympy, matplotlib and torch's forward-mode
    set-up to the first claim that calls them; the toolkit's forward mode then runs under ``-W error`` (the
    set-up's deprecated ``torch.jit.script`` silenced, :func:`verify._func.forward_mode_ready`)."""
    code = (
        "import json, sys, warnings, torch; import verify.cli, verify.run.worker, verify.run.sweep.cells; "
        f"loaded = [m for m in {(*HEAVY, _JVP)!r} if m in sys.modules]; "
        "from verify.model.builders import random_problem; from verify.oracles.bptt import influence_jacfwd; "
        "P, th = random_problem('elman-tanh', n=2, d=1, T=2, generator=torch.Generator().manual_seed(0)); "
        "warnings.simplefilter('error'); J = influence_jacfwd(P, th); "
        "print(json.dumps([loaded, list(J.shape)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    loaded, shape = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == []
    assert shape[0] == 2
