"""Mutants of the ``device`` family: candidates that break device / precision parity.

Each mutant is a :data:`verify.gpu.parity.Runner` (``(algorithm, inputs) -> rows``)
that replaces how the candidate is computed; the parity checks must FAIL it.

* ``device.float16-silent`` -- computes in float16 and hands back a tensor of the
  requested dtype (a forgotten ``.half()``, autocast left on): errors ~2¹³ × the
  float32 budget.
* ``device.bfloat16-silent`` -- the same in bfloat16 (~2¹⁶ ×).
* ``device.fresh-noise`` -- UORO/preactivation UORO draw fresh noise on the
  candidate's side instead of the tabulated identical draws (the results are then
  different samples of an unbiased estimator: equal in expectation, not in value).
  Deterministic algorithms are unaffected, so it is shown on UORO only.
"""

from __future__ import annotations

import dataclasses

import torch

from verify.errors import InvalidArgument
from verify.gpu.parity import BPTTParity, ParityAlgorithm, ParityInputs
from verify.impl.mutants import Mutant

__all__ = ["MUTANTS", "fresh_noise", "get", "silent_bfloat16", "silent_float16", "silent_half"]

_VISIBLE = ("device.float32-standin", "device.cuda-parity")


def silent_half(algorithm: ParityAlgorithm, inputs: ParityInputs, half: torch.dtype) -> torch.Tensor:
    """Run ``algorithm`` in ``half`` precision and return the result in the inputs' dtype (the bug)."""
    low = inputs.to(half)
    if isinstance(algorithm, BPTTParity):
        # the toolkit's bptt_gradient refuses half precision; a hand-rolled BPTT does not
        th = low.theta.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            (g,) = torch.autograd.grad(low.problem.total_loss(th), th)
        out = g.unsqueeze(0)
    else:
        out = algorithm.run(low)
    return out.to(inputs.dtype)


def silent_float16(algorithm: ParityAlgorithm, inputs: ParityInputs) -> torch.Tensor:
    """``device.float16-silent``."""
    return silent_half(algorithm, inputs, torch.float16)


def silent_bfloat16(algorithm: ParityAlgorithm, inputs: ParityInputs) -> torch.Tensor:
    """``device.bfloat16-silent``."""
    return silent_half(algorithm, inputs, torch.bfloat16)


def fresh_noise(algorithm: ParityAlgorithm, inputs: ParityInputs) -> torch.Tensor:
    """``device.fresh-noise``: the candidate redraws the noise table (seeded independently of the reference)."""
    if inputs.noise is None:
        return algorithm.run(inputs)
    gen = torch.Generator().manual_seed(12345)
    signs = 2 * torch.randint(0, 2, tuple(inputs.noise.shape), generator=gen) - 1
    table = signs.to(dtype=inputs.noise.dtype, device=inputs.noise.device)
    return algorithm.run(dataclasses.replace(inputs, noise=table))


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "device.float16-silent",
        "the candidate silently computes in float16 and returns the requested dtype",
        "device",
        "runner",
        silent_float16,
        _VISIBLE,
    ),
    Mutant(
        "device.bfloat16-silent",
        "the candidate silently computes in bfloat16 and returns the requested dtype",
        "device",
        "runner",
        silent_bfloat16,
        _VISIBLE,
    ),
    Mutant(
        "device.fresh-noise",
        "UORO's candidate draws its own noise instead of the identical tabulated draws",
        "device",
        "runner",
        fresh_noise,
        _VISIBLE,
    ),
)


def get(name: str) -> Mutant:
    """A mutant of this family by name."""
    for m in MUTANTS:
        if m.name == name:
            return m
    raise InvalidArgument("mutant", name, f"known: {', '.join(m.name for m in MUTANTS)}")
