"""Smoke test of the estimator benchmark script (tiny sizes; the figures themselves are in the handoff/README)."""

from __future__ import annotations

from verify.bench.estimators import main


def test_benchmark_runs_and_reports_three_ratios(capsys) -> None:  # type: ignore[no-untyped-def]
    out = main(["--n", "4", "--n-vec", "3", "--n-rtrl", "3", "--samples", "5", "--steps", "2", "--repeats", "1"])
    assert set(out) == {"uoro_over_backprop", "vectorized_speedup", "rtrl_speedup"}
    assert all(v > 0 for v in out.values())
    text = capsys.readouterr().out
    assert "target <= 3" in text and "target >= 20" in text
