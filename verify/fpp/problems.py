r"""Buffers for the FPP checks: realizable problems with noise (a teacher RNN plus noise).

A teacher of the same architecture as the student generates the targets,

.. math::
    s^*_i = f_{W^*}(s^*_{i-1}, o_i),\quad y_i = g_{\beta^*}(s^*_i) + \sigma\,\varepsilon_i,
    \quad o_i,\varepsilon_i \sim \mathcal{N}(0, I),

so the RNN objective eq. (10) has a minimiser near the teacher (realizable) but
cannot interpolate the noise when n ≫ the number of parameters (DESIGN.md, FPP
KKT notes). Squared-error loss, linear readout.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from verify._validate import require_fits_memory, require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.model.builders import make_cell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem

__all__ = ["TeacherBuffer", "teacher_buffer"]


class TeacherBuffer(NamedTuple):
    """The buffer problem, the teacher's θ* and s₀*, and the noise level."""

    problem: Problem
    theta: torch.Tensor
    s0: torch.Tensor
    noise: float


def teacher_buffer(
    kind: str = "elman-tanh",
    *,
    k: int = 2,
    d: int = 1,
    m: int = 1,
    n: int = 40,
    noise: float = 0.1,
    recurrent_scale: float = 0.8,
    input_gain: float = 1.0,
    generator: torch.Generator,
) -> TeacherBuffer:
    """A realizable buffer with noise (see the module docstring); float64, unbatched.

    The teacher's recurrent matrix is scaled to spectral norm ``recurrent_scale``
    (a stable teacher); its input matrix and bias are multiplied by ``input_gain``
    (a gain of a few puts tanh units in their nonlinear range, which makes the
    parameters identifiable); its s₀* is drawn with scale 0.5.
    """
    require_positive_int("k", k)
    require_positive_int("d", d)
    require_positive_int("m", m)
    require_positive_int("n", n)
    noise = float(noise)
    if not noise >= 0.0:
        raise InvalidArgument("noise", noise, "must be >= 0")
    require_positive("recurrent_scale", recurrent_scale)
    require_positive("input_gain", input_gain)
    cell = make_cell(kind, k, d)
    require_fits_memory("n", n, 8 * 4 * n * (d + m + cell.state_size), f"a teacher buffer of n={n} steps")
    obs = cell.observed_size
    dummy = Problem(
        cell,
        LinearReadout(obs, m),
        SquaredError(),
        torch.zeros(n, d, dtype=torch.float64),
        torch.zeros(n, m, dtype=torch.float64),
        torch.zeros(cell.state_size, dtype=torch.float64),
    )
    theta = dummy.init_theta(generator)
    lay = dummy.layout
    if "cell.W" in lay.names:
        W = theta[lay["cell.W"].slice].reshape(lay["cell.W"].shape)
        nrm = float(torch.linalg.matrix_norm(W, 2))
        if nrm > 0:
            theta[lay["cell.W"].slice] = (W * (recurrent_scale / nrm)).reshape(-1)
    for name in ("cell.U", "cell.b"):
        if name in lay.names:
            theta[lay[name].slice] = theta[lay[name].slice] * input_gain
    V = theta[lay["readout.V"].slice]
    theta[lay["readout.V"].slice] = V / max(float(torch.linalg.vector_norm(V)), 1e-12) * (m**0.5)
    s0 = 0.5 * torch.randn(cell.state_size, generator=generator, dtype=torch.float64)
    x = torch.randn(n, d, generator=generator, dtype=torch.float64)
    clean = dummy.with_sequence(x, torch.zeros(n, m, dtype=torch.float64), s0)
    with torch.no_grad():
        states = clean.rollout(theta)[1:]
        y = clean.output(theta, states) + noise * torch.randn(n, m, generator=generator, dtype=torch.float64)
    return TeacherBuffer(clean.with_sequence(x, y, s0), theta, s0, noise)
