"""Benchmark scripts: ``python -m verify.bench.<name>``. They print ratios against a
baseline measured in the same run; tests never assert timings."""
