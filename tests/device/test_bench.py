"""The GPU benchmark script runs its CPU part here and says why the GPU part is skipped; calibration rows."""

from __future__ import annotations

import pytest
import torch

from verify.bench.gpu import calibration_rows, main
from verify.hardware import NO_CUDA_REASON
from verify.oracles.budget import C_PARITY


def test_bench_cpu_part_and_gpu_skip(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "8", "--repeats", "1", "--cpu-scale-n", "4", "--scale-chunk", "32"]) == 0
    out = capsys.readouterr().out
    assert "[cpu, float32]" in out and "RTRL step" in out and "UORO step" in out and "FPP update" in out
    assert "GFLOP/s" in out and "% of peak" in out and "draws/s" in out
    if not torch.cuda.is_available():
        assert f"GPU part SKIPPED: {NO_CUDA_REASON}" in out and "[cuda] SKIPPED" in out


def test_calibration_rows_within_the_constant() -> None:
    """A fresh calibration seed (not one of the documented calibration seeds) stays within C_PARITY."""
    rows = calibration_rows([31], [], lambda s: None, cells=("elman-tanh", "gru"))
    assert len(rows) >= 2 * 2 * 8 * 3 - 6
    assert {r["order"] for r in rows} == {"float32", "float32 permuted", "float64 permuted"}
    worst = max(rows, key=lambda r: r["raw_ratio"])
    assert worst["raw_ratio"] <= C_PARITY, worst
