"""Bad input for the GPU paths: unknown devices, mixed devices, unsupported dtypes; TF32 settings; CUDA tests."""

from __future__ import annotations

import json

import pytest
import torch

from verify.errors import InvalidArgument
from verify.gpu.parity import Arithmetic, ParityInputs, RTRLParity, compare, parity_reference
from verify.hardware import (
    NO_CUDA_REASON,
    cuda_available,
    describe_device,
    device_record,
    matmul_tf32,
    parity_device,
    require_dtype_supported,
    require_same_device,
    resolve_device,
    tf32_settings,
)
from verify.model.problem import Problem
from verify.testing.strategies import random_problem

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA_REASON)
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "tpu", "", "mps", "meta"])
def test_unknown_device_strings(spec: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        resolve_device(spec)
    assert "device" in str(exc.value)
    assert "device= must be 'cpu', 'cuda', 'cuda:N'" in str(exc.value) or "CUDA device(s)" in str(exc.value)
    assert "torch" not in str(exc.value)  # the allowed values, not torch's own list of device types
    with pytest.raises(InvalidArgument):
        parity_device(spec)


def test_non_string_device() -> None:
    with pytest.raises(InvalidArgument, match="must be a string"):
        resolve_device(0)  # type: ignore[arg-type]


def test_cpu_and_auto() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == (torch.device("cuda") if cuda_available() else torch.device("cpu"))


@no_cuda
def test_cuda_without_cuda() -> None:
    assert resolve_device("cuda") is None and resolve_device("cuda:3") is None
    with pytest.raises(InvalidArgument, match="no CUDA"):
        resolve_device("cuda", strict=True)
    assert parity_device("cpu") is None and parity_device("cuda:0") is None and parity_device("auto") is None


@needs_cuda
@pytest.mark.gpu
def test_cuda_ordinal_out_of_range() -> None:
    with pytest.raises(InvalidArgument, match="CUDA device"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")
    assert parity_device("cpu") == torch.device("cuda", 0)


def test_mixed_device_problem_tensors() -> None:
    P, th = random_problem("elman-tanh", n=2, d=1, T=3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match="one device"):
        Problem(P.cell, P.readout, P.loss, P.inputs, P.targets, P.s0.to("meta"))
    with pytest.raises(InvalidArgument):
        ParityInputs(P, th.to("meta"))
    with pytest.raises(InvalidArgument, match="mixed devices"):
        ParityInputs(P, th, noise=torch.ones(3, device="meta"))
    with pytest.raises(InvalidArgument, match="mixed devices"):
        require_same_device(a=torch.zeros(1), b=torch.zeros(1, device="meta"))
    assert require_same_device(a=torch.zeros(1), b=torch.zeros(2)) == torch.device("cpu")


@pytest.mark.parametrize("dtype", [torch.bool, torch.float8_e4m3fn])
def test_dtype_the_device_cannot_do(dtype: torch.dtype) -> None:
    with pytest.raises(InvalidArgument, match="not supported on cpu"):
        require_dtype_supported(dtype, torch.device("cpu"))


def test_arithmetic_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="dtype"):
        Arithmetic(torch.int32)
    with pytest.raises(InvalidArgument, match="TF32"):
        Arithmetic(torch.float32, torch.device("cpu"), tf32=True)
    with pytest.raises(InvalidArgument, match="TF32"):
        Arithmetic(torch.float64, torch.device("cuda", 0), tf32=True)
    with pytest.raises(InvalidArgument, match=r"torch\.device"):
        Arithmetic(torch.float32, "cpu")  # type: ignore[arg-type]


def test_tf32_toggle_restores_and_records() -> None:
    before = torch.get_float32_matmul_precision()
    with matmul_tf32(True) as on:
        assert on["float32_matmul_precision"] == "high"
        assert on["cuda.matmul.allow_tf32"] is True
    assert torch.get_float32_matmul_precision() == before
    with matmul_tf32(False) as off:
        assert off["cuda.matmul.allow_tf32"] is False
    assert tf32_settings()["float32_matmul_precision"] == before
    with pytest.raises(InvalidArgument):
        with matmul_tf32("yes"):  # type: ignore[arg-type]
            pass


def test_device_record_is_jsonable() -> None:
    rec = device_record(torch.device("cpu"))
    json.dumps(rec)
    assert rec["name"] == "cpu" == describe_device(torch.device("cpu"))
    assert "tf32" in rec


# ------------------------------------------------------------------ on a GPU
@needs_cuda
@pytest.mark.gpu
@pytest.mark.parametrize("tf32", [False, True])
def test_rtrl_cuda_float32_within_budget(tf32: bool) -> None:
    gen = torch.Generator().manual_seed(1)
    P, th = random_problem("lstm", n=4, d=3, T=8, generator=gen)
    alg = RTRLParity()
    ref = parity_reference(alg, alg.prepare(P, th, gen), torch.float32)
    cmp = compare(ref, Arithmetic(torch.float32, torch.device("cuda", 0), tf32=tf32))
    assert cmp.ratio <= 1.0 and "cuda" in cmp.device


@needs_cuda
@pytest.mark.gpu
def test_cuda_float64_round_off() -> None:
    gen = torch.Generator().manual_seed(2)
    P, th = random_problem("gru", n=4, d=3, T=8, generator=gen)
    alg = RTRLParity()
    ref = parity_reference(alg, alg.prepare(P, th, gen), torch.float64)
    cmp = compare(ref, Arithmetic(torch.float64, torch.device("cuda", 0)))
    assert cmp.ratio <= 1.0 and cmp.relative_error < 1e-13
