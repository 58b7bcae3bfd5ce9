r"""Recurrent cells :math:`s_t = f_\theta(s_{t-1}, x_t)`.

Every cell is a frozen dataclass describing sizes; parameters are passed in as a
mapping of named tensors (views of the flat θ, see :mod:`verify.model.params`). All cells
broadcast over any leading batch/sample dimensions: ``s`` has shape ``(..., n)`` and
``x`` shape ``(..., d)``. They run in any real dtype and, when :attr:`Cell.analytic`
is true, in complex dtypes (for complex-step differentiation).

Cells
-----
* :class:`ElmanCell` -- :math:`s' = \phi(W s + U x + b)`, φ ∈ {tanh, relu}
  (Miller & Hardt §6.2; Cooijmans & Martens "the RNN" with φ applied to the
  preactivation :math:`a = W s + U x + b`).
* :class:`LeakyElmanCell` -- leaky rate units :math:`s' = (1-\alpha)s + \alpha\phi(W s + U x + b)` (Murray 2019).
* :class:`LinearCell` -- :math:`s' = W s + U x + b` (Miller & Hardt §6.1).
* :class:`LSTMCell` -- state :math:`s = (c, h)`, Miller & Hardt §6.3 with biases.
* :class:`GRUCell` -- the gated recurrent unit (Cho et al. 2014) in the form used
  by PyTorch, with a single candidate bias.
* :class:`InfluenceBalancingCell` -- Tallec & Ollivier (UORO) §4 eq. (8):
  :math:`s' = A s + (\theta,\dots,\theta,-\theta,\dots,-\theta)^\top`, A with 1/2 on
  the diagonal and the superdiagonal, scalar θ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from verify._validate import require_finite_number
from verify.errors import InvalidArgument

Params = Mapping[str, torch.Tensor]
Activation = Literal["tanh", "relu"]

__all__ = [
    "Cell",
    "ElmanCell",
    "GRUCell",
    "InfluenceBalancingCell",
    "LSTMCell",
    "LeakyElmanCell",
    "LinearCell",
    "sigmoid",
]


def sigmoid(z: torch.Tensor) -> torch.Tensor:
    """Logistic function, written with exp so that it is analytic for complex z."""
    if z.is_complex():
        return 1.0 / (1.0 + torch.exp(-z))
    return torch.sigmoid(z)


def _mv(mat: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """``mat @ vec`` over the last dim of ``vec`` with arbitrary leading dims."""
    return vec @ mat.transpose(-1, -2)


class Cell:
    """Base class: a recurrent transition :math:`s' = f_\\theta(s, x)`.

    Subclasses define :attr:`state_size`, :attr:`input_size`, :meth:`param_shapes`
    and :meth:`step`. :meth:`observe` is the part of the state a readout sees
    (``h`` for the LSTM, the whole state otherwise).
    """

    name: ClassVar[str] = "cell"

    @property
    def analytic(self) -> bool:
        """True when :meth:`step` is a composition of analytic functions (complex step OK)."""
        return True

    @property
    def state_size(self) -> int:
        raise NotImplementedError

    @property
    def input_size(self) -> int:
        raise NotImplementedError

    @property
    def observed_size(self) -> int:
        return self.state_size

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        raise NotImplementedError

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def observe(self, s: torch.Tensor) -> torch.Tensor:
        return s

    def equations(self) -> str:
        """The cell's equations in plain text (used in golden-vector headers)."""
        raise NotImplementedError

    def activation_lipschitz(self) -> float:
        """Lipschitz constant of the elementwise nonlinearity (1 for linear cells)."""
        return 1.0

    def init_params(
        self, generator: torch.Generator, dtype: torch.dtype = torch.float64, scale: float = 0.9
    ) -> dict[str, torch.Tensor]:
        """Random parameters; recurrent matrices get spectral norm about ``scale`` (finite, >= 0)."""
        scale = require_finite_number("scale", scale, minimum=0.0)
        out: dict[str, torch.Tensor] = {}
        for pname, shape in self.param_shapes():
            t = torch.randn(shape, generator=generator, dtype=torch.float64)
            if len(shape) == 2:
                t = t / math.sqrt(shape[1]) * (0.5 * scale)
            else:
                t = 0.1 * t
            out[pname] = t.to(dtype)
        return out

    def describe(self) -> str:
        return f"{self.name}(n={self.state_size}, d={self.input_size})"


@dataclass(frozen=True)
class ElmanCell(Cell):
    r"""Elman RNN :math:`s' = \phi(W s + U x + b)`.

    Parameters: ``W`` (n×n), ``U`` (n×d), ``b`` (n). φ is ``tanh`` (analytic,
    1-Lipschitz, 1-smooth: Miller & Hardt App. A.3.1) or ``relu`` (not analytic:
    complex step is refused; not smooth: Miller & Hardt's bounds do not apply).
    """

    n: int
    d: int
    activation: Activation = "tanh"
    name: ClassVar[str] = "elman"

    def __post_init__(self) -> None:
        _check_sizes(n=self.n, d=self.d)
        if self.activation not in ("tanh", "relu"):
            raise InvalidArgument("activation", self.activation, "must be 'tanh' or 'relu'")

    @property
    def analytic(self) -> bool:
        return self.activation == "tanh"

    def activation_lipschitz(self) -> float:
        return 1.0

    @property
    def state_size(self) -> int:
        return self.n

    @property
    def input_size(self) -> int:
        return self.d

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("W", (self.n, self.n)), ("U", (self.n, self.d)), ("b", (self.n,))]

    def preactivation(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """:math:`a = W s + U x + b` (Cooijmans & Martens, "Projecting in preactivation space")."""
        return _mv(params["W"], s) + _mv(params["U"], x) + params["b"]

    def phi(self, a: torch.Tensor) -> torch.Tensor:
        return torch.tanh(a) if self.activation == "tanh" else torch.relu(a)

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.phi(self.preactivation(params, s, x))

    def equations(self) -> str:
        return f"s_t = {self.activation}(W s_{{t-1}} + U x_t + b)"

    def describe(self) -> str:
        return f"elman-{self.activation}(n={self.n}, d={self.d})"


@dataclass(frozen=True)
class LeakyElmanCell(Cell):
    r"""Leaky rate units :math:`s' = (1-\alpha)\,s + \alpha\,\phi(W s + U x + b)`, :math:`0 < \alpha \le 1`.

    Murray 2019, "Local online learning in recurrent networks with random feedback", eLife 8:e43299
    (bioRxiv 10.1101/458570), its rate dynamics discretised with step :math:`\Delta t` and
    :math:`\alpha = \Delta t/\tau` (equation numbers not checked); the "vanilla" leaky RNN of Marschall, Cho &
    Savin 2020 (arXiv:1907.02649). ``alpha = 1`` is the
    :class:`ElmanCell`'s transition. Same parameters (``W``, ``U``, ``b``) as the Elman cell. Not a subclass of
    :class:`ElmanCell`, on purpose: the fast paths and Elman-only code test ``isinstance(cell, ElmanCell)``.
    """

    n: int
    d: int
    activation: Activation = "tanh"
    alpha: float = 1.0
    name: ClassVar[str] = "leaky-elman"

    def __post_init__(self) -> None:
        _check_sizes(n=self.n, d=self.d)
        if self.activation not in ("tanh", "relu"):
            raise InvalidArgument("activation", self.activation, "must be 'tanh' or 'relu'")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0.0 < self.alpha <= 1.0:
            raise InvalidArgument("alpha", self.alpha, "the leak alpha = dt/tau must be a number in (0, 1]")

    @property
    def leak(self) -> float:
        r""":math:`1-\alpha`, the diagonal of :math:`\partial s'/\partial s` that does not go through W."""
        return 1.0 - float(self.alpha)

    @property
    def analytic(self) -> bool:
        return self.activation == "tanh"

    @property
    def state_size(self) -> int:
        return self.n

    @property
    def input_size(self) -> int:
        return self.d

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("W", (self.n, self.n)), ("U", (self.n, self.d)), ("b", (self.n,))]

    def preactivation(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return _mv(params["W"], s) + _mv(params["U"], x) + params["b"]

    def phi(self, a: torch.Tensor) -> torch.Tensor:
        return torch.tanh(a) if self.activation == "tanh" else torch.relu(a)

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (1.0 - self.alpha) * s + self.alpha * self.phi(self.preactivation(params, s, x))

    def equations(self) -> str:
        return f"s_t = (1-{self.alpha}) s_{{t-1}} + {self.alpha} {self.activation}(W s_{{t-1}} + U x_t + b)"

    def describe(self) -> str:
        return f"leaky-elman-{self.activation}(n={self.n}, d={self.d}, alpha={self.alpha})"


@dataclass(frozen=True)
class LinearCell(Cell):
    r"""Linear dynamical system :math:`s' = W s + U x + b` (Miller & Hardt §6.1)."""

    n: int
    d: int
    name: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        _check_sizes(n=self.n, d=self.d)

    @property
    def state_size(self) -> int:
        return self.n

    @property
    def input_size(self) -> int:
        return self.d

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("W", (self.n, self.n)), ("U", (self.n, self.d)), ("b", (self.n,))]

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return _mv(params["W"], s) + _mv(params["U"], x) + params["b"]

    def equations(self) -> str:
        return "s_t = W s_{t-1} + U x_t + b"


@dataclass(frozen=True)
class LSTMCell(Cell):
    r"""LSTM with state :math:`s = (c, h) \in \mathbb{R}^{2H}` (Miller & Hardt §6.3, with biases).

    .. math::
        f = \sigma(W_f h + U_f x + b_f),\; i = \sigma(W_i h + U_i x + b_i),\;
        o = \sigma(W_o h + U_o x + b_o),\; z = \tanh(W_z h + U_z x + b_z),\\
        c' = i \circ z + f \circ c,\quad h' = o \circ \tanh(c').

    The flat state is ``concat(c, h)``; :meth:`observe` returns ``h``.
    Parameters ``W`` (4H×H), ``U`` (4H×d), ``b`` (4H), gate order f, i, o, z.
    """

    hidden: int
    d: int
    name: ClassVar[str] = "lstm"

    def __post_init__(self) -> None:
        _check_sizes(hidden=self.hidden, d=self.d)

    @property
    def state_size(self) -> int:
        return 2 * self.hidden

    @property
    def observed_size(self) -> int:
        return self.hidden

    @property
    def input_size(self) -> int:
        return self.d

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        H = self.hidden
        return [("W", (4 * H, H)), ("U", (4 * H, self.d)), ("b", (4 * H,))]

    def gates(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        H = self.hidden
        h = s[..., H:]
        pre = _mv(params["W"], h) + _mv(params["U"], x) + params["b"]
        f, i, o, z = pre.chunk(4, dim=-1)
        return sigmoid(f), sigmoid(i), sigmoid(o), torch.tanh(z)

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        H = self.hidden
        c = s[..., :H]
        f, i, o, z = self.gates(params, s, x)
        c_new = i * z + f * c
        h_new = o * torch.tanh(c_new)
        return torch.cat([c_new, h_new], dim=-1)

    def observe(self, s: torch.Tensor) -> torch.Tensor:
        return s[..., self.hidden :]

    def equations(self) -> str:
        return (
            "s=(c,h); [f,i,o,z] = W h + U x + b (gate order f,i,o,z); f,i,o=sigmoid(.), z=tanh(.); "
            "c' = i*z + f*c; h' = o*tanh(c')"
        )

    def describe(self) -> str:
        return f"lstm(H={self.hidden}, n={self.state_size}, d={self.d})"


@dataclass(frozen=True)
class GRUCell(Cell):
    r"""Gated recurrent unit.

    .. math::
        r = \sigma(W_r h + U_r x + b_r),\; z = \sigma(W_z h + U_z x + b_z),\\
        \tilde h = \tanh(U_n x + r \circ (W_n h) + b_n),\quad
        h' = (1 - z) \circ \tilde h + z \circ h.

    Parameters ``W`` (3n×n), ``U`` (3n×d), ``b`` (3n), block order r, z, n.
    """

    n: int
    d: int
    name: ClassVar[str] = "gru"

    def __post_init__(self) -> None:
        _check_sizes(n=self.n, d=self.d)

    @property
    def state_size(self) -> int:
        return self.n

    @property
    def input_size(self) -> int:
        return self.d

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("W", (3 * self.n, self.n)), ("U", (3 * self.n, self.d)), ("b", (3 * self.n,))]

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        W_r, W_z, W_n = params["W"].chunk(3, dim=0)
        ux = _mv(params["U"], x)
        ux_r, ux_z, ux_n = ux.chunk(3, dim=-1)
        b_r, b_z, b_n = params["b"].chunk(3, dim=0)
        r = sigmoid(_mv(W_r, s) + ux_r + b_r)
        z = sigmoid(_mv(W_z, s) + ux_z + b_z)
        cand = torch.tanh(ux_n + r * _mv(W_n, s) + b_n)
        return (1 - z) * cand + z * s

    def equations(self) -> str:
        return (
            "[r,z,n] blocks; r = sigmoid(W_r h + U_r x + b_r); z = sigmoid(W_z h + U_z x + b_z); "
            "n = tanh(U_n x + r*(W_n h) + b_n); h' = (1-z)*n + z*h"
        )


@dataclass(frozen=True)
class InfluenceBalancingCell(Cell):
    r"""Influence balancing (Tallec & Ollivier, UORO §4, eq. (8)).

    .. math::
        s_{t+1} = A s_t + (\underbrace{\theta,\dots,\theta}_{p},
        \underbrace{-\theta,\dots,-\theta}_{n-p})^\top,\qquad
        A_{ii} = A_{i,i+1} = 1/2.

    One scalar parameter ``theta``; the cell ignores its input (d = 0). At the
    equilibrium :math:`s^* = B c\,\theta` (:math:`B_{ij} = 2` for j ≥ i) one has
    :math:`\partial s^1/\partial\theta = 4p - 2n`; the loss of eq. (9) is
    :math:`\ell_t = \tfrac12 (s^1_t - 1)^2`.
    """

    n: int
    p: int
    name: ClassVar[str] = "influence-balancing"

    def __post_init__(self) -> None:
        _check_sizes(n=self.n)
        if not (isinstance(self.p, int) and 0 <= self.p <= self.n):
            raise InvalidArgument("p", self.p, f"number of plus signs must be in [0, n={self.n}]")

    @property
    def state_size(self) -> int:
        return self.n

    @property
    def input_size(self) -> int:
        return 0

    def param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        return [("theta", (1,))]

    def signs(self, dtype: torch.dtype, device: torch.device | str | None = None) -> torch.Tensor:
        c = torch.ones(self.n, dtype=dtype, device=device)
        c[self.p :] = -1
        return c

    def matrix(self, dtype: torch.dtype, device: torch.device | str | None = None) -> torch.Tensor:
        A = 0.5 * torch.eye(self.n, dtype=dtype, device=device)
        idx = torch.arange(self.n - 1, device=device)
        A[idx, idx + 1] = 0.5
        return A

    def step(self, params: Params, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        th = params["theta"]
        A = self.matrix(s.dtype, s.device)
        return _mv(A, s) + th * self.signs(s.dtype, s.device)  # eq. (8)

    def init_params(
        self, generator: torch.Generator, dtype: torch.dtype = torch.float64, scale: float = 0.9
    ) -> dict[str, torch.Tensor]:
        return {"theta": (0.5 * torch.randn(1, generator=generator, dtype=torch.float64)).to(dtype)}

    def equations(self) -> str:
        return f"s_t = A s_{{t-1}} + theta*c, A_ii=A_i,i+1=1/2, c = (+1 x {self.p}, -1 x {self.n - self.p})"

    def describe(self) -> str:
        return f"influence-balancing(n={self.n}, p={self.p})"


def _check_sizes(**sizes: int) -> None:
    for key, val in sizes.items():
        minimum = 0 if key == "d" else 1
        if isinstance(val, bool) or not isinstance(val, int) or val < minimum:
            raise InvalidArgument(key, val, f"must be an integer >= {minimum}")
