"""Seed calibration of ``rtrl.online-convergence`` (``-m slow``; ≈ 40 × 5 s CPU).

Reruns the ci check over 40 seeds (:func:`verify.checks.rtrl.calibrate_online_convergence`):
correct RTRL must never fall below the factor (observed false-fail rate 0, one-sided 95 %
Clopper–Pearson upper bound 1 − 0.05^(1/40) = 7.2 %) and the control (RTRL without ∂F/∂θ) must
be caught on every seed. Run with ``-s`` to see the figures. A failure here means the claim's
stated rates (theory/claims/rtrl.py) no longer hold and the factor must be recalibrated.
"""

from __future__ import annotations

import math

import pytest

from verify.checks.rtrl import FACTOR, calibrate_online_convergence

pytestmark = [pytest.mark.slow, pytest.mark.statistical]

SEEDS = range(40)


def test_online_convergence_seed_calibration() -> None:
    cal = calibrate_online_convergence(SEEDS)
    rtrl = sorted(float(r["rtrl"]) for r in cal["rows"])
    ctl = sorted(float(r["control"]) for r in cal["rows"] if r["control"] is not None)
    print(
        f"\nrtrl.online-convergence over {cal['runs']} seeds (ci), factor {FACTOR:g}: "
        f"false fails {cal['false_fails']}/{cal['runs']} (95% upper {cal['false_fail_upper95']:.3f}); "
        f"control caught {cal['controls'] - cal['control_misses']}/{cal['controls']} "
        f"(95% lower {cal['control_catch_lower95']:.3f}); RTRL δ-reduction min {rtrl[0]:.2f}, "
        f"5 lowest {[round(x, 2) for x in rtrl[:5]]}; control max {ctl[-1]:.2f}; "
        f"old Euclidean criterion false fails {cal['euclidean_false_fails']}/{cal['runs']}"
    )
    assert cal["runs"] == len(SEEDS) == cal["controls"]
    assert cal["false_fails"] == 0
    assert cal["control_misses"] == 0
    assert cal["false_fail_upper95"] == pytest.approx(1 - 0.05 ** (1 / len(SEEDS)), rel=1e-9)
    assert all(r["verdict"] == "PASS" for r in cal["rows"])
    assert math.isfinite(cal["rtrl_min"]) and cal["rtrl_min"] >= FACTOR > cal["control_max"]
