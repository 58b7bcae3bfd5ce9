"""The trial's implementations (``tests/trial/impls``) keep working: each correct one PASSes, each seeded bug FAILs.

Each file is loaded as ``--impl`` loads it (``verify.impl.loader.load_object`` with a file path) and put through
one short claim in this process (the Python route, ``run_check``): a correct implementation and one seeded bug per
file. The whole trial through the CLI is ``python tests/trial/run_trial.py`` (minutes; its slow test is below).
Where a file has no claim that runs in seconds (the torch.func UORO draws its own Gaussian ν: no noise hook, so
only the statistical claims judge it), the test compares its Monte Carlo mean with exact RTRL instead: 5 000
draws, and the bias must be below 4 standard errors of the mean's norm (a correct estimator's error norm is about
one standard error: with 26 coordinates its ratio is about a chi variable with 26 degrees of freedom over
sqrt(26), so 4 is never reached by a correct one (P < 1e-30 in the Gaussian approximation; the draws are seeded,
so the test is deterministic); the seeded bug's bias is about 80 standard errors).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.impl import DEFAULT
from verify.impl.loader import load_object
from verify.run.check import run_check

ROOT = Path(__file__).resolve().parents[2]
IMPLS = Path(__file__).resolve().parent / "impls"


def _load(spec: str) -> Any:
    obj, _source = load_object("trial", f"{IMPLS / spec.split(':')[0]}:{spec.split(':')[1]}")
    return obj


#: (family, field, file:correct, file:buggy, claim, dtype): one short claim per file
CASES = [
    ("rtrl", "rtrl", "flat_rtrl.py:TrialFlatRTRL", "flat_rtrl.py:TrialFlatRTRLUSign", "rtrl.exact", "float64"),
    ("rtrl", "rtrl", "flat_rtrl.py:TrialFlatRTRL", "flat_rtrl.py:TrialFlatRTRLF32", "rtrl.exact", "float64"),
    ("rtrl", "rtrl", "functional_gru_rtrl.py:TrialGRURTRL", "functional_gru_rtrl.py:TrialGRURTRLStaleH",
     "rtrl.exact", "float64"),
    ("rtrl", "rtrl", "float32_rtrl.py:TrialF32RTRL", "float32_rtrl.py:TrialF32RTRLBiasNoRec", "rtrl.exact", "float64"),
    ("rtrl", "snap", "snap1.py:snap1", "snap1.py:snap1_b_no_decay", "rtrl.snap-exactness", "float64"),
    ("uoro", "uoro", "transposed_uoro.py:TrialTransposedUORO", "transposed_uoro.py:TrialTransposedUORORho1",
     "uoro.algorithm-1-conformance", "float64"),
    ("uoro", "uoro", "float32_uoro.py:TrialF32UORO", "float32_uoro.py:TrialF32UORORho0", "uoro.exact-expectation",
     "float64"),
    ("uoro", "uoro", "float32_uoro.py:TrialF32UOROUndeclared", "float32_uoro.py:TrialF32UORORho0",
     "uoro.exact-expectation", "float32"),
    ("uoro", "uoro", "uoro_recurrent.py:TrialRecurrentUORO", "uoro_recurrent.py:TrialRecurrentUORONoRho",
     "uoro.algorithm-1-conformance", "float64"),
]  # fmt: skip


@pytest.mark.parametrize(("family", "field", "good", "bad", "claim", "dtype"), CASES, ids=[c[3] for c in CASES])
def test_correct_passes_and_seeded_bug_fails(
    family: str, field: str, good: str, bad: str, claim: str, dtype: str
) -> None:
    verdicts = []
    for spec in (good, bad):
        impls = DEFAULT.with_part(family, field, _load(spec))
        res = run_check(all_claims()[claim], RunConfig(implementations=impls, dtype=dtype))
        verdicts.append((res.verdict.value, res.summary[:300]))
    assert verdicts[0][0] == "PASS", verdicts[0]
    assert verdicts[1][0] == "FAIL", verdicts[1]


def _exact_mean_error(est: Any, samples: int = 0) -> float:
    """‖E g̃ − g‖ / ‖g‖ per step (max over t): the exact expectation where the estimator has a noise hook, else a
    Monte Carlo mean over ``samples`` draws, then divided by the mean's standard error (norm of the per-coordinate
    standard errors)."""
    from verify.estimators import enumerate_expectation, run_estimator
    from verify.oracles.bptt import per_step_gradients
    from verify.testing.strategies import random_problem

    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    ref = per_step_gradients(P, th)
    if not samples:
        E = enumerate_expectation(est, P, th).gradients
        return float(((E - ref).norm(dim=-1) / ref.norm(dim=-1)).max())
    G = run_estimator(est, P, th, torch.Generator().manual_seed(1), samples=samples)
    se = G.std(1).norm(dim=-1) / samples**0.5
    return float(((G.mean(1) - ref).norm(dim=-1) / se).max())


def test_batch_first_kfrtrl_is_unbiased_exactly_and_its_bugs_are_not() -> None:
    """KF-RTRL (Mujika et al. 2018 §4) over every sign pattern equals RTRL to round-off; the seeded bugs do not."""
    assert _exact_mean_error(_load("batchfirst_kfrtrl.py:kfrtrl")()) < 1e-12
    for bug in ("kfrtrl_u_new_state", "kfrtrl_rho2_inverted"):
        assert _exact_mean_error(_load(f"batchfirst_kfrtrl.py:{bug}")()) > 1e-3, bug


def test_torch_func_uoro_is_unbiased_and_its_fresh_nu_bug_is_not() -> None:
    """The Gaussian-ν torch.func UORO: Monte Carlo mean within 4 standard errors of RTRL; the bug far outside."""
    assert _exact_mean_error(_load("torchfunc_uoro.py:TrialTorchFuncUORO"), samples=5_000) < 4.0
    assert _exact_mean_error(_load("torchfunc_uoro.py:TrialTorchFuncUOROFreshNu"), samples=5_000) > 20.0


@pytest.mark.slow
def test_the_trial_through_the_cli(tmp_path: Path) -> None:
    """Two rows of the trial as a user runs them (``python -m verify run --impl ... --impl-only``): exit 0 and 1."""
    out = tmp_path / "trial"
    cmd = [
        sys.executable,
        str(ROOT / "tests/trial/run_trial.py"),
        "--out",
        str(out),
        "--only",
        "snap1",
        "snap1-bnodecay",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["name"]: r for r in json.loads((out / "trial.json").read_text())["rows"]}
    assert rows["snap1"]["exit"] == 0 and rows["snap1-bnodecay"]["exit"] == 1
    assert rows["snap1-bnodecay"]["names_part"] is True
    assert (out / "README.md").is_file()
