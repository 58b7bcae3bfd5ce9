"""The reproductions' tables (verify.fpp.judging): the paired test, the environment's level, missing blocks."""

from __future__ import annotations

import math

from verify.fpp.envs import cycle_world_predict_zero_ratio
from verify.fpp.judging import missing_blocks, one_sided_paired
from verify.fpp.reproduction import cycleworld_designs


def test_one_sided_paired_t() -> None:
    a = [0.1, 0.2, 0.15, 0.12]
    b = [0.3, 0.35, 0.32, 0.4]
    assert one_sided_paired(a, b) < 0.01  # a clearly below b
    assert one_sided_paired(b, a) > 0.99
    assert one_sided_paired(a, a) == 1.0  # identical runs: the sign decides (not below)
    assert one_sided_paired([x - 1 for x in a], a) == 0.0
    assert math.isnan(one_sided_paired([0.1], [0.2]))  # one run: no test
    assert math.isnan(one_sided_paired([0.1, math.nan], [0.2, 0.3]))


def test_cycle_world_predict_zero_ratio_is_one() -> None:
    for p in (2, 4, 7, 10):
        assert abs(cycle_world_predict_zero_ratio(p) - 1.0) <= 1e-12


def test_missing_blocks_names_the_blocks_and_their_errors() -> None:
    blocks = cycleworld_designs("ci")[0].all_blocks()
    assert missing_blocks(blocks, {b: {} for b in blocks}, None) == ""
    report = missing_blocks(blocks, {b: {} for b in blocks[1:]}, {blocks[0]: "Traceback: boom"})
    assert report.startswith("1 block(s) of the reproduction did not run:") and "boom" in report
