r"""The problem model: a recurrent cell, a readout, a loss, a sequence and :math:`s_0`.

.. math::
    s_t = f_\theta(s_{t-1}, x_t),\qquad y_t = g_\theta(\mathrm{obs}(s_t)),\qquad
    \ell_t = \ell(y_t, \hat y_t),\qquad L(\theta) = \sum_{t=1}^T \ell_t,

for :math:`t = 1..T`; ``inputs[t-1]`` is :math:`x_t` and ``targets[t-1]`` is
:math:`\hat y_t`. θ is one flat vector (:attr:`Problem.layout`): the cell's blocks
``cell.*`` followed by the readout's ``readout.*``.

Shapes: ``inputs`` (T, *B, d), ``targets`` (T, *B, k), ``s0`` (*B, n), where *B is
an optional batch shape (losses are summed over it). Any real floating dtype and
any device; the references insist on float64 (or float32 for precision studies).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from verify._validate import (
    COMPLEX_DTYPES,
    REAL_DTYPES,
    require_finite,
    require_finite_number,
    require_generator,
)
from verify.errors import InvalidArgument
from verify.model.cells import Cell
from verify.model.losses import Loss, Readout, SoftmaxCrossEntropy
from verify.model.params import ParamLayout

__all__ = ["Problem"]


@dataclass(frozen=True, eq=False)
class Problem:
    """A recurrent learning problem (see the module docstring for the equations).

    Integer class labels of shape (T, *B) are accepted as ``targets`` for
    :class:`~verify.model.losses.SoftmaxCrossEntropy` and converted to one-hot
    probabilities in the problem's dtype.
    """

    cell: Cell
    readout: Readout
    loss: Loss
    inputs: torch.Tensor
    targets: torch.Tensor
    s0: torch.Tensor
    layout: ParamLayout = field(init=False)

    def __post_init__(self) -> None:
        cell, readout = self.cell, self.readout
        if not isinstance(cell, Cell):
            raise InvalidArgument("cell", type(cell).__name__, "must be a verify.model.cells.Cell")
        for name in ("inputs", "targets", "s0"):
            if not isinstance(getattr(self, name), torch.Tensor):
                raise InvalidArgument(name, type(getattr(self, name)).__name__, "must be a torch.Tensor")
        x, y, s0 = self.inputs, self.targets, self.s0
        dtype = x.dtype
        if dtype not in REAL_DTYPES + COMPLEX_DTYPES:
            raise InvalidArgument("inputs", f"dtype {dtype}", "must be a floating (or complex) dtype")
        devices = {str(t.device) for t in (x, y, s0)}
        if len(devices) > 1:
            raise InvalidArgument(
                "inputs/targets/s0", f"devices {sorted(devices)}", "all problem tensors must live on one device"
            )
        if x.dim() < 2:
            raise InvalidArgument("inputs", f"tensor of shape {tuple(x.shape)}", "expected shape (T, *B, d)")
        T, batch = x.shape[0], tuple(x.shape[1:-1])
        if T < 1:
            raise InvalidArgument("inputs", f"tensor of shape {tuple(x.shape)}", "need T >= 1 steps")
        if x.shape[-1] != cell.input_size:
            raise InvalidArgument(
                "inputs", f"tensor of shape {tuple(x.shape)}", f"last dim must be the cell's d={cell.input_size}"
            )
        if tuple(s0.shape) != (*batch, cell.state_size):
            raise InvalidArgument(
                "s0",
                f"tensor of shape {tuple(s0.shape)}",
                f"expected {(*batch, cell.state_size)} (batch shape of inputs, then n)",
            )
        if s0.dtype != dtype:
            raise InvalidArgument("s0", f"dtype {s0.dtype}", f"must match inputs' dtype {dtype}")
        k = readout.output_size
        if isinstance(self.loss, SoftmaxCrossEntropy) and not (y.is_floating_point() or y.is_complex()):
            if tuple(y.shape) != (T, *batch):
                raise InvalidArgument(
                    "targets", f"label tensor of shape {tuple(y.shape)}", f"class labels need shape {(T, *batch)}"
                )
            if bool(((y < 0) | (y >= k)).any()):
                raise InvalidArgument("targets", f"labels in [{int(y.min())}, {int(y.max())}]", f"must lie in [0, {k})")
            y = torch.nn.functional.one_hot(y.long(), k).to(dtype)
            object.__setattr__(self, "targets", y)
        if tuple(y.shape) != (T, *batch, k):
            raise InvalidArgument(
                "targets", f"tensor of shape {tuple(y.shape)}", f"expected {(T, *batch, k)} (T, batch, readout size)"
            )
        if y.dtype != dtype:
            raise InvalidArgument("targets", f"dtype {y.dtype}", f"must match inputs' dtype {dtype}")
        for name in ("inputs", "targets", "s0"):
            require_finite(name, getattr(self, name))
        shapes = [(f"cell.{n}", s) for n, s in cell.param_shapes()]
        shapes += [(f"readout.{n}", s) for n, s in readout.param_shapes()]
        object.__setattr__(self, "layout", ParamLayout.from_shapes(shapes))

    # ----------------------------------------------------------------- sizes
    @property
    def T(self) -> int:
        """Sequence length."""
        return int(self.inputs.shape[0])

    @property
    def n(self) -> int:
        """State size."""
        return self.cell.state_size

    @property
    def p(self) -> int:
        """Number of parameters (length of θ)."""
        return self.layout.size

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.inputs.shape[1:-1])

    @property
    def dtype(self) -> torch.dtype:
        return self.inputs.dtype

    @property
    def device(self) -> torch.device:
        return self.inputs.device

    # ------------------------------------------------------------ conversion
    def to(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Problem:
        """A copy with tensors cast to ``dtype`` and/or moved to ``device``."""

        def conv(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype=dtype if dtype is not None else t.dtype, device=device)

        return dataclasses.replace(self, inputs=conv(self.inputs), targets=conv(self.targets), s0=conv(self.s0))

    def with_sequence(self, inputs: torch.Tensor, targets: torch.Tensor, s0: torch.Tensor | None = None) -> Problem:
        """Same model, other data."""
        return dataclasses.replace(self, inputs=inputs, targets=targets, s0=self.s0 if s0 is None else s0)

    def slice(self, start: int, stop: int, s0: torch.Tensor | None = None) -> Problem:
        """The sub-problem on steps ``start+1 .. stop`` (1-based), starting from ``s0``."""
        if not (0 <= start < stop <= self.T):
            raise InvalidArgument("start/stop", (start, stop), f"need 0 <= start < stop <= T={self.T}")
        return dataclasses.replace(
            self,
            inputs=self.inputs[start:stop],
            targets=self.targets[start:stop],
            s0=self.s0 if s0 is None else s0,
        )

    # ---------------------------------------------------------------- params
    def init_theta(self, generator: torch.Generator, scale: float = 0.9) -> torch.Tensor:
        """Random θ in the problem's dtype/device (cell's :meth:`~Cell.init_params`); ``scale`` finite, >= 0."""
        require_generator("generator", generator)
        scale = require_finite_number("scale", scale, minimum=0.0)
        cell_p = self.cell.init_params(generator, torch.float64, scale)
        ro: dict[str, torch.Tensor] = {}
        for name, shape in self.readout.param_shapes():
            t = torch.randn(shape, generator=generator, dtype=torch.float64)
            ro[name] = t / (shape[1] ** 0.5) if len(shape) == 2 else 0.1 * t
        flat = self.layout.flatten(
            {**{f"cell.{k}": v for k, v in cell_p.items()}, **{f"readout.{k}": v for k, v in ro.items()}}
        )
        return flat.to(dtype=self.dtype, device=self.device)

    def check_theta(self, theta: object, name: str = "theta") -> torch.Tensor:
        """Validate θ: a finite 1-D tensor of length p on the problem's device."""
        if not isinstance(theta, torch.Tensor):
            raise InvalidArgument(name, type(theta).__name__, "must be a torch.Tensor")
        if theta.dim() != 1 or theta.shape[0] != self.p:
            raise InvalidArgument(name, f"tensor of shape {tuple(theta.shape)}", f"expected shape ({self.p},)")
        if theta.device != self.device:
            raise InvalidArgument(name, f"device {theta.device}", f"problem tensors live on {self.device}")
        require_finite(name, theta)
        return theta

    def cell_params(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.layout.unflatten(theta, "cell.")

    def readout_params(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.layout.unflatten(theta, "readout.")

    # -------------------------------------------------------------- dynamics
    def transition(self, theta: torch.Tensor, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        r""":math:`f_\theta(s, x)` -- one step of the cell."""
        return self.cell.step(self.cell_params(theta), s, x)

    def output(self, theta: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        r""":math:`y = g_\theta(\mathrm{obs}(s))`."""
        return self.readout(self.readout_params(theta), self.cell.observe(s))

    def step_loss(self, theta: torch.Tensor, s: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        r""":math:`\ell(g_\theta(\mathrm{obs}(s)), \hat y)` for the state ``s`` reached at a step."""
        return self.loss(self.output(theta, s), target)

    def rollout(self, theta: torch.Tensor, s0: torch.Tensor | None = None) -> torch.Tensor:
        """States :math:`s_0..s_T` stacked, shape (T+1, *B, n)."""
        params = self.cell_params(theta)  # unflatten once, not per step
        step = self.cell.step
        s = self.s0 if s0 is None else s0
        states = [s]
        for t in range(self.T):
            s = step(params, s, self.inputs[t])
            states.append(s)
        return torch.stack(states)

    def losses_of_states(self, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        r"""Per-step losses of given states :math:`s_1..s_T` (shape (T, *B, n)), shape (T,)."""
        y = self.output(theta, states)
        per = self.loss.pointwise(y, self.targets)
        return per.reshape(per.shape[0], -1).sum(1)

    def losses(self, theta: torch.Tensor, s0: torch.Tensor | None = None) -> torch.Tensor:
        r"""Per-step losses :math:`\ell_1..\ell_T`, shape (T,)."""
        return self.losses_of_states(theta, self.rollout(theta, s0)[1:])

    def total_loss(self, theta: torch.Tensor) -> torch.Tensor:
        r""":math:`L(\theta) = \sum_t \ell_t`."""
        return self.losses(theta).sum()

    def describe(self) -> str:
        b = f", batch={self.batch_shape}" if self.batch_shape else ""
        return (
            f"{self.cell.describe()} + readout {self.readout.describe()} + {self.loss.name}; "
            f"T={self.T}, p={self.p}{b}, {str(self.dtype).replace('torch.', '')}"
        )
