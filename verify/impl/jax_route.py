r"""The JAX route: pure JAX step functions as a toolkit online estimator (issue 38).

JAX code is written as pure functions over explicit state -- the toolkit's own contract
(:mod:`verify.estimators.base`) up to names, layout and array library. :class:`JaxStep` bridges the rest in a
few lines::

    import jax
    jax.config.update("jax_enable_x64", True)      # float64: the toolkit's references are float64
    from verify.impl.jax_route import JaxStep

    def init(params, s0, key):                     # -> carry (any pytree of arrays), one sample
        return {"h": s0, "s_tilde": jnp.zeros_like(s0), ...}

    def step(params, carry, x, y, nu):             # -> (carry, gradient); params in *your* names
        ...
        return carry, {"Wx": gWx, "Wh": gWh, ...}   # a dict of your names, or a flat array in θ's layout

    MyUORO = JaxStep(init, step, names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},
                     factors=lambda c: (c["s_tilde"], c["theta_tilde"]), state=lambda c: c["h"],
                     noise_hook=True, gtilde="pre", name="my-jax-uoro")

and ``rnn-verify run --impl uoro=my_wrap.py:MyUORO --impl-only``.

What it does. θ (flat, :attr:`Problem.layout <verify.model.problem.Problem.layout>`) is mapped to your names and
shapes (``names``: yours -> the toolkit's, ``".T"`` for a transposed one; the mapping is
:class:`verify.impl.adapters._Layout`, the same as :class:`~verify.impl.adapters.Batch1`'s) *inside* a jitted
function, so are your gradient (back to θ's layout) and the carry (kept in the toolkit's state as one
``(M, K)`` float64 tensor: a copy of the state is a valid state, stepping a state twice gives the same result).
The M samples are one ``jax.vmap`` over your per-sample ``step`` under ``jax.jit``; where your step cannot be
traced (Python control flow on values, numpy calls), the adapter falls back to a per-sample loop of eager calls
and says so in its :attr:`~JaxStep.name` (``[per-sample loop: ...]``). Arrays cross between torch and JAX by
DLPack (no copy on the CPU; a numpy copy where DLPack refuses).

Randomness: with ``noise_hook=True`` the last argument of ``step`` is ν (n,), drawn by the toolkit (Tallec &
Ollivier 2017, arXiv:1702.05043, Algorithm 1: random signs; tabulated where a claim enumerates or replays
them -- exact expectation, formula conformance), exactly :class:`~verify.impl.adapters.Batch1`'s hook;
without it, a ``jax.random.PRNGKey`` per sample and step, seeded from the toolkit's generator (the claims that
need tabulated noise are then SKIPPED with the reason). ``init`` always gets a key (for a random start, declare
``random_start=True``).

Precision: float64 is required. With ``jax_enable_x64`` off JAX computes in float32 whatever it is given, and
every exact claim would FAIL on round-off; the adapter refuses instead, in one line (:data:`X64_HINT`).

The toolkit's problems are :class:`~verify.impl.adapters.Batch1`'s: state :math:`s_t = \phi(W s_{t-1} + U x_t +
b)` (Elman; W n×n, U n×d, b n), output :math:`y_t = V s_t + c`, loss :math:`\ell_t = \tfrac12\|y_t - \hat y_t\|^2`,
:math:`s_0` given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.utils.dlpack

from verify.errors import InvalidArgument
from verify.impl.functional import ArrayOps, FunctionalStep, Plan, StepState
from verify.model.problem import Problem

__all__ = ["INSTALL_HINT", "JAX_MODULES", "X64_HINT", "JaxState", "JaxStep", "missing_extra", "to_jax", "to_torch"]

#: the modules of the JAX route and of the gallery's JAX repositories (the ``jax`` / ``gallery`` extras)
JAX_MODULES = ("jax", "jaxlib", "equinox", "flax")

#: how to install them
INSTALL_HINT = "pip install -e '.[jax]'"

#: the refusal when JAX computes in float32
X64_HINT = (
    "JAX is in 32-bit mode (jax_enable_x64 is off) and rnn-verify's references are float64: set JAX_ENABLE_X64=1 "
    'or call jax.config.update("jax_enable_x64", True) before building the arrays'
)


def missing_extra(module: str | None) -> str | None:
    """The one-line refusal for a missing JAX-route module (``jax``, ``jax.numpy``, ``jaxlib``, ``equinox``,
    ``flax``...), naming it and :data:`INSTALL_HINT`; None for any other module."""
    if not module or module.split(".", 1)[0] not in JAX_MODULES:
        return None
    extra = "jax" if module.split(".", 1)[0] in ("jax", "jaxlib") else "gallery"
    return f"no module named {module!r}: the JAX route needs it, install the {extra} extra: " + INSTALL_HINT.replace(
        "[jax]", f"[{extra}]"
    )


def _jax() -> Any:
    import jax  # an optional extra: imported when a JaxStep is built, never at import

    return jax


def require_x64() -> None:
    """:class:`InvalidArgument` with :data:`X64_HINT` when ``jax_enable_x64`` is off."""
    if not bool(_jax().config.read("jax_enable_x64")):
        raise InvalidArgument("jax_enable_x64", False, X64_HINT)


def to_jax(t: torch.Tensor) -> Any:
    """A CPU torch tensor as a JAX array: DLPack (shares the memory), else a numpy copy."""
    jax = _jax()
    t = t.detach().to("cpu").contiguous()
    try:
        return jax.dlpack.from_dlpack(t)
    except Exception:  # DLPack refused (alignment, a read-only view ...): a copy does
        return jax.numpy.asarray(t.numpy())


def to_torch(a: Any, problem: Problem) -> torch.Tensor:
    """A JAX array as a tensor in ``problem``'s dtype and device: DLPack (shares the memory), else a copy."""
    try:
        out = torch.utils.dlpack.from_dlpack(a)
    except Exception:
        out = torch.as_tensor(np.asarray(a))
    return out.to(problem.device, problem.dtype)


JaxState = StepState  #: the adapter's state (:class:`verify.impl.functional.StepState`)


class _JaxOps(ArrayOps):
    """:class:`~verify.impl.functional.ArrayOps` in ``jax.numpy`` (float64 casts: the x64 switch is checked)."""

    def asarray(self, x: Any) -> Any:
        return _jax().numpy.asarray(x)

    def f64(self, x: Any, what: str) -> Any:
        return x.astype(_jax().numpy.float64)

    def T(self, x: Any) -> Any:
        return x.T

    def swap(self, x: Any) -> Any:
        return _jax().numpy.swapaxes(x, -1, -2)

    def concat(self, xs: list[Any], axis: int = 0) -> Any:
        return _jax().numpy.concatenate(xs, axis=axis)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return _jax().numpy.zeros(shape)

    def stack(self, xs: list[Any]) -> Any:
        return _jax().numpy.stack(xs)

    def flatten(self, tree: Any) -> tuple[list[Any], Any]:
        leaves, treedef = _jax().tree_util.tree_flatten(tree)
        return list(leaves), treedef

    def unflatten(self, treedef: Any, leaves: list[Any]) -> Any:
        return _jax().tree_util.tree_unflatten(treedef, leaves)

    def check_leaf(self, leaf: Any) -> None:
        jax = _jax()
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            raise InvalidArgument(
                "init(params, s0, key) carry",
                f"a leaf of dtype {leaf.dtype}",
                "arrays only (the adapter hands step() a fresh key every step; keep keys out of the carry)",
            )
        if leaf.dtype == jax.numpy.float32:
            raise InvalidArgument("init(params, s0, key) carry", "a float32 leaf", "float64 arrays: " + X64_HINT)

    def cast(self, x: Any, dtype: Any) -> Any:
        return x.astype(dtype)


class JaxStep(FunctionalStep):
    """Pure per-sample JAX functions under the toolkit's online-estimator contract (see the module docstring).

    ``init(params, s0, key) -> carry`` and ``step(params, carry, x, y, r) -> (carry, gradient)`` work on one
    sample (``params``: θ in your names and shapes; ``r``: ν (n,) with ``noise_hook=True``, else a PRNG key);
    the gradient estimates ∂ℓ_t/∂θ (a dict of your names, or flat in θ's layout). Optional accessors of the
    carry: ``state(carry)`` s_t; ``influence(carry)`` the estimate of ∂s_t/∂θ (dict name -> (n, *shape), or
    (n, p)); ``factors(carry)`` UORO's (s̃, θ̃) (θ̃ a dict or flat). ``names``, ``cells``, ``losses``, ``gtilde``,
    ``random_start``, ``noise_law``, ``guarantee``, ``name``: as for :class:`~verify.impl.adapters.Batch1`.
    ``vmap=False`` steps the samples one by one, eagerly (what the adapter falls back to when ``jax.vmap`` /
    ``jax.jit`` cannot trace ``step``). The shared machinery: :class:`verify.impl.functional.FunctionalStep`.
    """

    VMAP_LABEL = "jax.vmap+jit"
    RUNNER = "a per-sample JAX step"
    DEFAULT_NAME = "jax adapter"
    ops = _JaxOps()

    def _library(self) -> None:
        _jax()  # a missing jax is a ModuleNotFoundError the loader words (missing_extra)

    def _to(self, t: torch.Tensor) -> Any:
        return to_jax(t.to(torch.float64) if t.is_floating_point() else t)

    def _back(self, a: Any, problem: Problem) -> torch.Tensor:
        return to_torch(a, problem)

    def _batched(self, fn: Callable[..., Any], axes: tuple[int | None, ...]) -> Callable[..., Any]:
        jax = _jax()
        return jax.jit(jax.vmap(fn, in_axes=axes))  # type: ignore[no-any-return]

    def _precision(self) -> None:
        require_x64()

    def _shape(self, plan: Plan, problem: Problem) -> Any:
        jax = _jax()
        theta0, s0 = jax.numpy.zeros(problem.p), jax.numpy.zeros(problem.s0.shape)
        try:
            return jax.eval_shape(lambda th, s, k: self._init(plan.to_user(th, self.ops), s, k), theta0, s0, _key(0))
        except Exception:  # not traceable: learn the shapes from one eager call
            return self._init(plan.to_user(theta0, self.ops), s0, _key(0))

    def _call_init(self, params: Any, s0: Any, r: Any) -> Any:
        return self._init(params, s0, r)

    def _seed_arg(self, seed: Any) -> Any:
        return _key(seed)

    def _user_r(self, r: Any) -> Any:
        return r if self.noise_hook else _key(r)


def _key(seed: Any) -> Any:
    """A PRNG key from an integer seed (traceable)."""
    return _jax().random.PRNGKey(seed)
