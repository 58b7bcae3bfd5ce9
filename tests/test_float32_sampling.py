"""float32 sampling (:mod:`verify.gpu.float32_sampling`): rounding accounted, so it cannot fake a FAIL or a certificate.

Synthetic samplers make the rounding explicit: the "float32" sampler is the float64 one plus a
known offset b. Within the allowance (measured on the paired pilot) b must never turn into a
FAIL, and the certificate is issued at δ' = δ − ε; a real bias must still FAIL; an allowance that
would eat δ switches float32 off. The statistical tests have false-fail rates ≤ 1e-3 each.
"""

from __future__ import annotations

import pytest
import torch

from verify.errors import InvalidArgument
from verify.estimators import UORO
from verify.gpu.float32_sampling import (
    MAX_SHARE,
    parity_factor,
    rounded,
    run_with_precision,
    sequential_test_with_precision,
)
from verify.impl.mutants.uoro import get
from verify.stats.unbiased import TestOptions
from verify.testing.strategies import random_problem
from verify.verdict import Verdict

G = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
NAMES = ["q"]


def synthetic(noise: float, offset: torch.Tensor, bias: torch.Tensor | None = None):
    """make_sampler(dtype): g (+ bias) + noise·N(0, I), the float32 branch shifted by ``offset``."""

    def make(dtype: torch.dtype):
        def sampler(m: int, rng: torch.Generator) -> list[torch.Tensor]:
            x = G + noise * torch.randn(m, G.numel(), generator=rng, dtype=torch.float64)
            if bias is not None:
                x = x + bias
            if dtype == torch.float32:
                x = x + offset
            return [x]

        return sampler

    return make


@pytest.mark.statistical
def test_offset_within_allowance_never_fails() -> None:
    """A float32 offset the engine can resolve (≫ noise/√M) but within the allowance: PASS, not FAIL."""
    offset = torch.zeros(4, dtype=torch.float64)
    offset[0] = 2e-5 * float(G.norm())  # 4 sigma at the final sample size below
    out = run_with_precision(
        synthetic(1e-3, offset),
        [G],
        NAMES,
        options=TestOptions(delta=0.02, event_floor=0.5),
        generator=torch.Generator().manual_seed(0),
        max_samples=200_000,
        precision="float32",
        first=20_000,
        min_step=20_000,
    )
    assert out.result.verdict is Verdict.PASS, out.note
    assert out.allowance is not None and out.allowance.absolute[0] >= float(offset.norm())


@pytest.mark.statistical
def test_certificate_is_issued_against_the_shrunk_delta() -> None:
    out = run_with_precision(
        synthetic(0.05, torch.full((4,), 1e-6, dtype=torch.float64)),
        [G],
        NAMES,
        options=TestOptions(delta=0.02, event_floor=0.5),
        generator=torch.Generator().manual_seed(1),
        max_samples=100_000,
        precision="float32",
    )
    assert out.precision == "float32" and out.result.verdict is Verdict.PASS
    assert out.allowance is not None
    assert out.result.delta == pytest.approx(0.02 - out.allowance.worst_relative)
    assert out.result.relative_bound + out.allowance.worst_relative < 0.02


@pytest.mark.statistical
def test_real_bias_still_fails() -> None:
    bias = torch.zeros(4, dtype=torch.float64)
    bias[1] = 0.1 * float(G.norm())
    out = run_with_precision(
        synthetic(0.05, torch.zeros(4, dtype=torch.float64), bias),
        [G],
        NAMES,
        options=TestOptions(event_floor=0.5),
        generator=torch.Generator().manual_seed(2),
        max_samples=50_000,
        precision="float32",
    )
    assert out.result.verdict is Verdict.FAIL and out.precision == "float32" and "confirmed" in out.note


def test_allowance_that_would_eat_delta_switches_float32_off() -> None:
    offset = torch.full((4,), 0.01, dtype=torch.float64)  # ≫ MAX_SHARE·δ·‖g‖
    out = run_with_precision(
        synthetic(0.05, offset),
        [G],
        NAMES,
        options=TestOptions(delta=0.02, event_floor=0.5),
        generator=torch.Generator().manual_seed(3),
        max_samples=3000,
        precision="float32",
    )
    assert out.precision == "float64" and "float32 off" in out.note
    assert out.allowance is not None and out.allowance.worst_relative > MAX_SHARE * 0.02


@pytest.mark.statistical
def test_uoro_float32_pass_and_mutant_fail() -> None:
    P, th = random_problem("elman-tanh", n=3, d=2, T=8, k=2, generator=torch.Generator().manual_seed(4))
    kw = {"steps": (2, 8), "quantities": ("gradient", "total"), "options": TestOptions(event_floor=0.5)}
    out = sequential_test_with_precision(
        UORO(), P, th, generator=torch.Generator().manual_seed(5), max_samples=200_000, precision="float32", **kw
    )
    assert out.precision == "float32" and out.result.verdict is Verdict.PASS, out.note
    # UORO's float32 rounding is far below the parity model's prediction for these sizes
    assert out.allowance is not None and max(out.allowance.measured_mean) < parity_factor(P, P.T) * 1e3
    bad = sequential_test_with_precision(
        get("uoro.noise-uniform").part(),
        P,
        th,
        generator=torch.Generator().manual_seed(6),
        max_samples=50_000,
        precision="float32",
        **kw,
    )
    assert bad.result.verdict is Verdict.FAIL


def test_rounded_problem_and_bad_precision() -> None:
    P, th = random_problem("gru", n=2, d=1, T=3, k=1, generator=torch.Generator().manual_seed(0))
    P32, th32, P64, th64 = rounded(P, th)
    assert P32.dtype == torch.float32 and P64.dtype == torch.float64
    assert torch.equal(P64.inputs, P32.inputs.double()) and torch.equal(th64, th32.double())
    with pytest.raises(InvalidArgument, match="precision"):
        sequential_test_with_precision(
            UORO(),
            P,
            th,
            steps=(2,),
            quantities=("total",),
            options=TestOptions(event_floor=0.5),
            generator=torch.Generator(),
            max_samples=10,
            precision="half",
        )
    out = sequential_test_with_precision(
        UORO(),
        P,
        th,
        steps=(2,),
        quantities=("total",),
        options=TestOptions(event_floor=0.5),
        generator=torch.Generator(),
        max_samples=2000,
        precision="auto",
    )
    assert out.precision == "float64"  # auto: float32 on CUDA only
