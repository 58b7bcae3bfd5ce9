r"""The torch route: pure per-sample torch step functions as a toolkit online estimator, through ``torch.func.vmap``.

Torch code written in the ``torch.func`` style -- pure functions over explicit tensors -- is the toolkit's own
contract (:mod:`verify.estimators.base`) up to names and layout. :class:`TorchStep` bridges the rest::

    import torch
    from torch.func import grad, jvp, vjp
    from verify.impl.torch_route import TorchStep

    def init(params, s0):                          # -> carry (a dict/tuple/list of float64 tensors), one sample
        return {"h": s0, "s_tilde": torch.zeros_like(s0), ...}

    def step(params, carry, x, y, nu):             # -> (carry, gradient); params in *your* names, nu (n,)
        ...
        return carry, {"W_ih": g_ih, ...}           # a dict of your names, or a flat tensor in θ's layout

    MyUORO = TorchStep(init, step, names={"W_ih": "U", "W_hh": "W", "b_h": "b", "W_out": "V", "b_out": "c"},
                       factors=lambda c: (c["s_tilde"], c["theta_tilde"]), state=lambda c: c["h"],
                       noise_hook=True, gtilde="pre", name="my-torch-uoro")

and ``rnn-verify run --impl uoro=my_wrap.py:MyUORO --impl-only``.

What it does (:class:`verify.impl.functional.FunctionalStep`, shared with the JAX route): θ (flat,
:attr:`Problem.layout <verify.model.problem.Problem.layout>`) is mapped to your names and shapes (``names``: yours
-> the toolkit's, ``".T"`` for a transposed one), your gradient back to θ's layout, the carry kept in the toolkit's
state as one ``(M, K)`` float64 tensor. The M samples are one ``torch.func.vmap`` over your per-sample ``step``
(no compilation: every call runs your Python once, on batched tensors); inside it use ``torch.func.grad`` /
``jvp`` / ``vjp`` for derivatives. Where ``vmap`` cannot trace the step (``.item()``, Python control flow on a
tensor's value, ``torch.autograd.grad`` / ``requires_grad_``), the adapter falls back to a per-sample loop of
eager calls -- the same results, slower -- and says so in its :attr:`~TorchStep.name` (``[per-sample loop:
torch.func.vmap could not trace it: ...]``).

Randomness. With ``noise_hook=True`` the last argument of ``step`` is ν (n,), drawn by the toolkit (Tallec &
Ollivier 2017, arXiv:1702.05043, Algorithm 1: random signs; tabulated where a claim enumerates or replays them --
exact expectation, formula conformance). Without it the last argument is ``None`` and the step draws from torch's
default generator (``torch.randint``, ``torch.randn`` ... without ``generator=``): each call runs under
``torch.random.fork_rng`` seeded from the toolkit's generator (your process's generator is left as it was, the
same toolkit generator gives the same draws) and ``vmap(randomness="different")`` (each sample its own draws);
the claims that need tabulated noise are then SKIPPED with the reason. ``init`` draws the same way (declare
``random_start=True`` for a random start).

Precision: float64 is required. θ, s0, x, y reach your functions as float64 tensors; a float32 (or float16,
bfloat16) carry leaf, gradient, state or factor is refused in one line naming it (a ``torch.zeros(n)`` without
``dtype=`` is float32: write ``torch.zeros_like(s0)`` or ``dtype=torch.float64``). The toolkit's problems are
:class:`~verify.impl.adapters.Batch1`'s: :math:`s_t = \phi(W s_{t-1} + U x_t + b)` (W n×n, U n×d, b n),
:math:`y_t = V s_t + c`, :math:`\ell_t = \tfrac12\|y_t - \hat y_t\|^2`, :math:`s_0` given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree

from verify.errors import InvalidArgument
from verify.impl.functional import ArrayOps, FunctionalStep, StepState
from verify.model.problem import Problem

__all__ = ["NARROW_HINT", "TorchState", "TorchStep"]

TorchState = StepState  #: the adapter's state (:class:`verify.impl.functional.StepState`)

#: how a refusal of a narrower float says what to do
NARROW_HINT = (
    "float64 tensors (rnn-verify's references are float64: build tensors with dtype=torch.float64 or *_like "
    "the float64 inputs; torch.zeros(n) without dtype= is float32)"
)
_NARROW = (torch.float32, torch.float16, torch.bfloat16)


class _TorchOps(ArrayOps):
    """:class:`~verify.impl.functional.ArrayOps` in torch; a narrower float than float64 is refused."""

    def asarray(self, x: Any) -> Any:
        return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)

    def f64(self, x: Any, what: str) -> Any:
        if x.dtype in _NARROW:
            raise InvalidArgument(what, f"a {str(x.dtype).replace('torch.', '')} tensor", NARROW_HINT)
        return x.to(torch.float64)

    def T(self, x: Any) -> Any:
        return x.permute(*range(x.dim() - 1, -1, -1))

    def swap(self, x: Any) -> Any:
        return x.transpose(-1, -2)

    def concat(self, xs: list[Any], axis: int = 0) -> Any:
        return torch.cat(xs, dim=axis)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return torch.zeros(shape, dtype=torch.float64)

    def stack(self, xs: list[Any]) -> Any:
        return torch.stack(xs)

    def flatten(self, tree: Any) -> tuple[list[Any], Any]:
        leaves, spec = pytree.tree_flatten(tree)
        return list(leaves), spec

    def unflatten(self, treedef: Any, leaves: list[Any]) -> Any:
        return pytree.tree_unflatten(leaves, treedef)

    def check_leaf(self, leaf: Any) -> None:
        what = "init(params, s0) carry"
        if not isinstance(leaf, torch.Tensor):
            raise InvalidArgument(what, f"a leaf of type {type(leaf).__name__}", "tensors only (dict, tuple, list)")
        if leaf.dtype in _NARROW:
            raise InvalidArgument(what, f"a {str(leaf.dtype).replace('torch.', '')} leaf", NARROW_HINT)
        if leaf.is_complex():
            raise InvalidArgument(what, f"a {leaf.dtype} leaf", "real tensors")

    def cast(self, x: Any, dtype: Any) -> Any:
        return x.to(torch.float64 if dtype == "float64" else dtype)


class TorchStep(FunctionalStep):
    """Pure per-sample torch functions under the toolkit's online-estimator contract (see the module docstring).

    ``init(params, s0) -> carry`` and ``step(params, carry, x, y, nu) -> (carry, gradient)`` work on one sample
    (``params``: θ in your names and shapes, float64; ``nu``: ν (n,) with ``noise_hook=True``, else None); the
    gradient estimates ∂ℓ_t/∂θ (a dict of your names, or flat in θ's layout). Optional accessors of the carry:
    ``state(carry)`` s_t; ``influence(carry)`` the estimate of ∂s_t/∂θ (dict name -> (n, *shape), or (n, p));
    ``factors(carry)`` UORO's (s̃, θ̃) (θ̃ a dict or flat, over every parameter or over the
    cell's only: the readout's entries are then 0). ``names``, ``cells``, ``losses``, ``gtilde``,
    ``random_start``, ``noise_law``, ``guarantee``, ``name``: as for :class:`~verify.impl.adapters.Batch1`.
    ``vmap=False`` steps the samples one by one, eagerly (what the adapter falls back to when ``torch.func.vmap``
    cannot trace ``step``).
    """

    VMAP_LABEL = "torch.func.vmap"
    RUNNER = "a per-sample torch step"
    DEFAULT_NAME = "torch adapter"
    ops = _TorchOps()

    def _to(self, t: torch.Tensor) -> Any:
        t = t.detach()
        return t.to(torch.float64) if t.is_floating_point() else t

    def _back(self, a: Any, problem: Problem) -> torch.Tensor:
        # contiguous: vmap returns an output no sample changed (init's s0) expanded, every sample one memory
        return a.detach().to(problem.device, problem.dtype).contiguous()  # type: ignore[no-any-return]

    def _batched(self, fn: Callable[..., Any], axes: tuple[int | None, ...]) -> Callable[..., Any]:
        return torch.func.vmap(fn, in_dims=axes, randomness="different")

    def _why(self, exc: BaseException) -> str:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        first = first.removeprefix("vmap: ")
        return f"{type(exc).__name__}" + (f" ({first[:70]}{'...' if len(first) > 70 else ''})" if first else "")

    def _call_init(self, params: Any, s0: Any, r: Any) -> Any:
        return self._init(params, s0)

    def _seeds(self, rng: torch.Generator, M: int) -> Any:
        return torch.zeros(M)  # a mapped placeholder (vmap needs one): the draws come from _random

    def _step_axis(self) -> int | None:
        return 0 if self.noise_hook else None  # nu (M, n), or None

    @contextlib.contextmanager
    def _random(self, rng: torch.Generator | None) -> Iterator[None]:
        """torch's default generator, seeded from ``rng`` (one draw) for the call, then restored."""
        seed = 0 if rng is None else int(torch.randint(0, 2**62, (1,), generator=rng))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
