"""Smoke tests of the issue-15 benchmarks and the device script (tiny sizes; timings are never asserted)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from verify.bench import online, samplers

ROOT = Path(__file__).resolve().parents[2]


def test_samplers_bench_writes_rows_with_baseline_and_limits(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bench.json"
    res = samplers.main(
        ["--ns", "4", "--ms", "1", "50", "--T", "3", "--repeats", "1", "--bandwidth-mb", "4", "--json", str(out)]
    )
    data = json.loads(out.read_text())
    assert data["tool"] == samplers.TOOL and data["limits"]["bandwidth_gbs"] > 0 and data["limits"]["matmul_gflops"] > 0
    names = {r["sampler"] for r in res["rows"]}
    assert names == {"uoro", "uoro-T4", "uoro-r4", "uoro-preact", "uoro-step", "rtrl"}
    for r in res["rows"]:
        assert r["sample_steps_per_s"] > 0 and r["frac_bandwidth"] > 0 and r["frac_matmul_peak"] > 0
        assert "speedup_vs_generic" in r or "speedup_vs_generic_estimated" in r
    text = capsys.readouterr().out
    assert "streaming bandwidth" in text and "speed-up" in text
    samplers.main(
        [
            "--ns",
            "4",
            "--ms",
            "20",
            "--T",
            "2",
            "--samplers",
            "uoro",
            "--project",
            "3",
            "--repeats",
            "1",
            "--bandwidth-mb",
            "4",
            "--json",
            str(out),
        ]
    )  # rewrites its own file
    (tmp_path / "foreign.json").write_text("{}")
    with pytest.raises(SystemExit, match="refusing"):
        samplers.main(
            [
                "--ns",
                "4",
                "--ms",
                "1",
                "--T",
                "2",
                "--samplers",
                "rtrl",
                "--bandwidth-mb",
                "4",
                "--json",
                str(tmp_path / "foreign.json"),
            ]
        )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message printed without CUDA")
def test_samplers_bench_cuda_is_skipped_with_reason(capsys) -> None:  # type: ignore[no-untyped-def]
    assert "skipped" in samplers.main(["--device", "cuda"])
    assert "SKIPPED" in capsys.readouterr().out


def test_online_bench_reports_fast_and_generic(tmp_path: Path) -> None:
    res = online.main(["--ns", "3", "--steps", "4", "--repeats", "1", "--json", str(tmp_path / "o.json")])
    rows = {r["estimator"]: r for r in res["rows"]}
    assert {"rtrl", "tbptt(k=8)", "truncated-model(k=8)", "uoro", "rtrl-step"} <= set(rows)
    assert rows["rtrl"]["speedup"] > 0 and 0 < rows["rtrl-step"]["work_share"]


def test_device_script_parses() -> None:
    script = ROOT / "verify" / "bench" / "device_script.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    for needle in ("verify.bench.samplers", "verify.bench.online", "device.gpu-unbiasedness", "-p no:benchmark"):
        assert needle in text
