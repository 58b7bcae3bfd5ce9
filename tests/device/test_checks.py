"""The device checks: the stand-in PASSes with its controls caught, the GPU claims SKIP without CUDA, mutants FAIL."""

from __future__ import annotations

import json

import pytest
import torch

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.hardware import NO_CUDA_REASON
from verify.impl.mutants import get as get_mutant
from verify.report.figures import normalize_figure
from verify.run.check import run_check
from verify.verdict import CheckResult, Verdict

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


def _run(claim_id: str, mutant: str | None = None, **options: object) -> CheckResult:
    """Run a device claim; ``mutant``: with that catalog mutant as the implementation under test."""
    profile = "full" if claim_id == "device.gpu-unbiasedness" else "ci"
    impls = get_mutant(mutant).implementations if mutant is not None else None
    return run_check(
        all_claims()[claim_id], RunConfig(profile=profile, options=tuple(options.items()), implementations=impls)
    )


@pytest.fixture(scope="module")
def standin() -> CheckResult:
    return _run("device.float32-standin")


def test_catalog_entries() -> None:
    ids = {c for c in all_claims() if c.startswith("device.")}
    assert ids == {"device.float32-standin", "device.cuda-parity", "device.gpu-unbiasedness"}
    assert all_claims()["device.gpu-unbiasedness"].profiles == ("full",)


def test_standin_passes_with_controls(standin: CheckResult) -> None:
    assert standin.verdict is Verdict.PASS, standin.summary
    assert standin.statistic is not None and standin.statistic <= 1.0 == standin.threshold
    names = {c.name for c in standin.controls}
    assert names == {"device.float16-silent", "device.bfloat16-silent", "device.fresh-noise"}
    assert all(c.ok and c.observed == "FAIL" for c in standin.controls)
    rows = standin.data["comparisons"]
    algs = {r["algorithm"] for r in rows}
    assert {"bptt", "tbptt(k=2)", "rtrl", "uoro", "uoro-preact", "fpp-eq7(T=2)"} <= algs
    assert all(r["error"] <= r["budget"] and r["passed"] for r in rows)
    assert {r["order"] for r in rows} == {"natural", "permuted hidden units"}
    assert {r["arithmetic"] for r in rows} == {"float32 cpu", "float64 cpu"}
    json.dumps(standin.to_dict())
    for fig in standin.data["figures"]:
        normalize_figure(fig)


@pytest.mark.parametrize("mutant", ["device.float16-silent", "device.bfloat16-silent", "device.fresh-noise"])
def test_standin_fails_on_mutant(mutant: str) -> None:
    res = _run("device.float32-standin", mutant=mutant)
    assert res.verdict is Verdict.FAIL, res.summary
    assert mutant in res.summary and "over budget" in res.summary


@no_cuda
@pytest.mark.parametrize("claim_id", ["device.cuda-parity", "device.gpu-unbiasedness"])
def test_gpu_claims_skip_with_reason(claim_id: str) -> None:
    res = _run(claim_id)
    assert res.verdict is Verdict.SKIPPED
    assert res.reason == NO_CUDA_REASON and "--device cuda" in res.summary


def test_cuda_parity_path_on_cpu_standin() -> None:
    """The CUDA claim's code path, run on the CPU (option cuda_device='cpu'): labelled a stand-in, never a CUDA PASS."""
    res = _run("device.cuda-parity", cuda_device="cpu")
    assert res.verdict is Verdict.PASS, res.summary
    assert res.summary.startswith("STAND-IN on cpu") and res.device == "cpu" and res.data["standin"] is True
    assert {r["arithmetic"] for r in res.data["comparisons"]} == {"float64 cpu", "float32 cpu"}
    bad = _run("device.cuda-parity", cuda_device="cpu", mutant="device.float16-silent")
    assert bad.verdict is Verdict.FAIL


def test_cuda_parity_bad_device_option() -> None:
    res = _run("device.cuda-parity", cuda_device="gpu7")
    assert res.verdict is Verdict.FAIL and "InvalidArgument" in res.summary and "gpu7" in res.summary


@pytest.mark.statistical
def test_gpu_unbiasedness_standin() -> None:
    """The GPU-scale statistics path at a CPU size: correct UORO PASSes (false-fail <= 1e-3), {0,1} noise FAILs."""
    res = _run("device.gpu-unbiasedness", standin=True, n=3, T=3, max_samples=200_000, directions=8, chunk=4096)
    assert res.verdict is Verdict.PASS, res.summary
    assert res.summary.startswith("STAND-IN on cpu")
    assert res.controls and all(c.ok for c in res.controls)
    assert res.alpha == 1e-3 and res.beta == 1e-3 and res.delta == 0.02
    assert res.data["sampling"]["sampling_precision"] == "float64"  # "auto" samples in float32 on CUDA only
    assert res.samples_used is not None and res.samples_used <= 200_000
    json.dumps(res.to_dict())
    for fig in res.data["figures"]:
        normalize_figure(fig)


@pytest.mark.statistical
def test_gpu_unbiasedness_standin_float32() -> None:
    """The float32 branch of the GPU claim on the CPU: PASS with the rounding allowance reported, control caught."""
    res = _run(
        "device.gpu-unbiasedness",
        standin=True,
        n=3,
        T=4,
        max_samples=200_000,
        directions=8,
        chunk=4096,
        precision="float32",
    )
    assert res.verdict is Verdict.PASS, res.summary
    assert res.data["sampling"]["sampling_precision"] == "float32"
    assert 0 < res.data["sampling"]["rounding_allowance"]["relative"][0] < 0.1 * res.delta
    assert res.controls and all(c.ok for c in res.controls)
