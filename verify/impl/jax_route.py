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

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.utils.dlpack

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.guarantee import Guarantee
from verify.estimators.uoro import NoiseSource, Rademacher
from verify.impl.adapters import _Layout, declared_support
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


class JaxState(NamedTuple):
    """The adapter's state: the samples' carries flattened (M, K), the state s_t, the last draw ν."""

    carry: torch.Tensor  #: (M, K): every leaf of each sample's carry, raveled and concatenated (float64)
    s: torch.Tensor  #: (M, n): ``state(carry)`` where given, else the exact rollout's
    nu: torch.Tensor  #: (M, n): the last draw handed out (zeros before the first, or without the noise hook)


@dataclass(frozen=True)
class _Plan:
    """θ's layout in the user's terms (static, hashable): per entry (user, start, stop, toolkit shape, transposed),
    in θ's order, and the sizes n, p."""

    entries: tuple[tuple[str, int, int, tuple[int, ...], bool], ...]
    n: int
    p: int

    @staticmethod
    def build(names: Mapping[str, str] | None, problem: Problem) -> _Plan:
        lay = _Layout.build(names, problem)
        by = {e.name: e for e in problem.layout.entries}
        rows = [(u, by[t].slice.start, by[t].slice.stop, tuple(by[t].shape), tr) for u, t, tr in lay.entries]
        return _Plan(tuple(sorted(rows, key=lambda r: r[1])), problem.n, problem.p)

    def to_user(self, theta: Any) -> dict[str, Any]:
        return {u: (theta[a:b].reshape(sh).T if tr else theta[a:b].reshape(sh)) for u, a, b, sh, tr in self.entries}

    def to_flat(self, g: Any, what: str) -> Any:
        jnp = _jax().numpy
        if not isinstance(g, Mapping):
            arr = jnp.asarray(g)
            if arr.size != self.p:
                raise InvalidArgument(what, f"array of {arr.size} values", f"a dict of your names or p = {self.p}")
            return arr.reshape(-1).astype(jnp.float64)
        parts = []
        for u, _a, _b, sh, tr in self.entries:
            if u not in g:
                raise InvalidArgument(what, f"keys {sorted(g)}", f"the gradient of every parameter, {u!r} missing")
            v = jnp.asarray(g[u])
            want = sh[::-1] if tr else sh
            if tuple(v.shape) != tuple(want):
                raise InvalidArgument(f"{what}[{u!r}]", f"shape {tuple(v.shape)}", f"shape {tuple(want)}")
            parts.append((v.T if tr else v).reshape(-1))
        return jnp.concatenate(parts).astype(jnp.float64)

    def columns(self, infl: Any, what: str) -> Any:
        """∂s/∂θ (dict name -> (n, *shape), readout names absent; or (n, p)) as (n, p) in θ's layout."""
        jnp = _jax().numpy
        if not isinstance(infl, Mapping):
            arr = jnp.asarray(infl)
            if tuple(arr.shape) != (self.n, self.p):
                raise InvalidArgument(what, f"shape {tuple(arr.shape)}", f"(n, p) = ({self.n}, {self.p}) or a dict")
            return arr.astype(jnp.float64)
        parts = []
        for u, a, b, _sh, tr in self.entries:
            if u not in infl:  # a readout parameter: s_t does not depend on it
                parts.append(jnp.zeros((self.n, b - a)))
                continue
            v = jnp.asarray(infl[u])
            parts.append((jnp.swapaxes(v, -1, -2) if tr else v).reshape(self.n, b - a))
        return jnp.concatenate(parts, axis=1).astype(jnp.float64)


class _Carry:
    """A carry pytree <-> one flat float64 vector (K,): the treedef, leaf shapes and dtypes (from ``eval_shape``)."""

    def __init__(self, shaped: Any) -> None:
        jax = _jax()
        leaves, self.treedef = jax.tree_util.tree_flatten(shaped)
        for leaf in leaves:
            if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                raise InvalidArgument(
                    "init(params, s0, key) carry",
                    f"a leaf of dtype {leaf.dtype}",
                    "arrays only (the adapter hands step() a fresh key every step; keep keys out of the carry)",
                )
            if leaf.dtype == jax.numpy.float32:
                raise InvalidArgument("init(params, s0, key) carry", "a float32 leaf", "float64 arrays: " + X64_HINT)
        self.shapes = [tuple(leaf.shape) for leaf in leaves]
        self.dtypes = [leaf.dtype for leaf in leaves]
        self.size = int(sum(int(np.prod(s)) for s in self.shapes))

    def flat(self, carry: Any) -> Any:
        jax = _jax()
        leaves = jax.tree_util.tree_leaves(carry)
        if not leaves:
            return jax.numpy.zeros((0,))
        return jax.numpy.concatenate([jax.numpy.ravel(x).astype(jax.numpy.float64) for x in leaves])

    def tree(self, flat: Any) -> Any:
        jax = _jax()
        leaves, i = [], 0
        for shape, dt in zip(self.shapes, self.dtypes, strict=True):
            k = int(np.prod(shape))
            leaves.append(flat[i : i + k].reshape(shape).astype(dt))
            i += k
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


class JaxStep:
    """Pure per-sample JAX functions under the toolkit's online-estimator contract (see the module docstring).

    ``init(params, s0, key) -> carry`` and ``step(params, carry, x, y, r) -> (carry, gradient)`` work on one
    sample (``params``: θ in your names and shapes; ``r``: ν (n,) with ``noise_hook=True``, else a PRNG key);
    the gradient estimates ∂ℓ_t/∂θ (a dict of your names, or flat in θ's layout). Optional accessors of the
    carry: ``state(carry)`` s_t; ``influence(carry)`` the estimate of ∂s_t/∂θ (dict name -> (n, *shape), or
    (n, p)); ``factors(carry)`` UORO's (s̃, θ̃) (θ̃ a dict or flat). ``names``, ``cells``, ``losses``, ``gtilde``,
    ``random_start``, ``noise_law``, ``guarantee``, ``name``: as for :class:`~verify.impl.adapters.Batch1`.
    ``vmap=False`` steps the samples one by one, eagerly (what the adapter falls back to when ``jax.vmap`` /
    ``jax.jit`` cannot trace ``step``).
    """

    def __init__(
        self,
        init: Callable[[Any, Any, Any], Any],
        step: Callable[[Any, Any, Any, Any, Any], tuple[Any, Any]],
        *,
        names: Mapping[str, str] | None = None,
        cells: Sequence[str] = ("elman-tanh",),
        losses: Sequence[str] = ("squared-error",),
        state: Callable[[Any], Any] | None = None,
        influence: Callable[[Any], Any] | None = None,
        factors: Callable[[Any], tuple[Any, Any]] | None = None,
        noise_hook: bool = False,
        noise: NoiseSource | None = None,
        gtilde: str | None = None,
        random_start: bool = False,
        noise_law: str | None = None,
        guarantee: Guarantee | None = None,
        name: str = "jax adapter",
        vmap: bool = True,
    ) -> None:
        _jax()  # a missing jax is a ModuleNotFoundError the loader words (missing_extra)
        if not callable(init) or not callable(step):
            raise InvalidArgument("JaxStep(init, step)", (init, step), "two callables")
        if gtilde not in (None, "pre", "post"):
            raise InvalidArgument("gtilde", gtilde, "'pre' (Algorithm 1), 'post' or None")
        self._init, self._step = init, step
        self.names, self.cells, self.losses = names, tuple(cells), tuple(losses)
        self.state, self.influence, self.factors = state, influence, factors
        self.noise_hook, self.noise = bool(noise_hook), noise if noise is not None else Rademacher()
        self.gtilde, self.random_start, self.noise_law, self.guarantee = gtilde, random_start, noise_law, guarantee
        self._name = name
        self._mode: dict[str, str] = {"how": "jax.vmap+jit" if vmap else "per-sample loop (vmap=False)"}
        self._cache: dict[Any, Any] = {}
        if influence is None:  # no estimate of ds/dtheta: the claims test gradients only
            object.__setattr__(self, "influence_estimate", None)
        if factors is None:
            object.__setattr__(self, "uoro_factors", None)
        if not self.noise_hook:  # no hook: the claims that need tabulated noise are SKIPPED, with the reason
            for m in ("noise_shape", "noise_draws", "with_noise"):
                object.__setattr__(self, m, None)

    @property
    def name(self) -> str:
        """The label, with how the samples are stepped (``jax.vmap+jit`` or the per-sample loop and why)."""
        return f"{self._name} [{self._mode['how']}]"

    @property
    def vectorized(self) -> bool:
        return self._mode["how"] == "jax.vmap+jit"

    # ------------------------------------------------------------ capabilities (Batch1's)
    def supports(self, problem: Problem) -> str | None:
        """None when this adapter can run ``problem``, else the reason (cells, losses, unbatched, linear readout)."""
        return declared_support(problem, self._name, self.cells, self.losses, "a per-sample JAX step")

    def _require(self, problem: Problem) -> None:
        why = self.supports(problem)
        if why is not None:
            raise NotApplicable(self._name, why)
        require_x64()

    # ------------------------------------------------------------ noise hook (Batch1's)
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        return (problem.n,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> JaxStep:
        out = copy.copy(self)
        out.noise = noise
        return out

    # ------------------------------------------------------------ the compiled pieces
    def _compiled(self, problem: Problem) -> tuple[_Plan, _Carry, dict[str, Any]]:
        """The plan, the carry's shape and the (lazily) jitted functions for ``problem``'s shapes."""
        plan = _Plan.build(self.names, problem)
        key = (plan, tuple(problem.s0.shape), tuple(problem.inputs.shape[1:]), tuple(problem.targets.shape[1:]))
        hit = self._cache.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        jax = _jax()
        jnp = jax.numpy
        theta0 = jnp.zeros(problem.p)
        s0 = jnp.zeros(problem.s0.shape)
        try:
            shaped = jax.eval_shape(lambda th, s, k: self._init(plan.to_user(th), s, k), theta0, s0, _key(0))
        except Exception:  # not traceable: learn the shapes from one eager call
            shaped = self._init(plan.to_user(theta0), s0, _key(0))
        carry = _Carry(shaped)
        n = problem.n

        def init_one(theta: Any, s0: Any, seed: Any) -> Any:
            return carry.flat(self._init(plan.to_user(theta), s0, _key(seed)))

        def step_one(theta: Any, flat: Any, x: Any, y: Any, r: Any) -> tuple[Any, Any, Any]:
            new, grad = self._step(plan.to_user(theta), carry.tree(flat), x, y, r if self.noise_hook else _key(r))
            s = jnp.zeros(n) if self.state is None else jnp.ravel(self.state(new)).astype(jnp.float64)
            return carry.flat(new), plan.to_flat(grad, "the gradient step() returned"), s

        def factors_one(flat: Any) -> tuple[Any, Any]:
            assert self.factors is not None
            st, tt = self.factors(carry.tree(flat))
            return jnp.ravel(st).astype(jnp.float64), plan.to_flat(tt, "factors(carry)[1]")

        def influence_one(flat: Any) -> Any:
            assert self.influence is not None
            return plan.columns(self.influence(carry.tree(flat)), "influence(carry)")

        fns = {
            "init": (jax.jit(jax.vmap(init_one, in_axes=(None, None, 0))), init_one, (None, None, 0)),
            "step": (jax.jit(jax.vmap(step_one, in_axes=(None, 0, None, None, 0))), step_one, (None, 0, None, None, 0)),
            "factors": (jax.jit(jax.vmap(factors_one)), factors_one, (0,)),
            "influence": (jax.jit(jax.vmap(influence_one)), influence_one, (0,)),
        }
        out = (plan, carry, fns)
        self._cache[key] = out
        return out

    def _call(self, fns: dict[str, Any], what: str, *args: Any) -> Any:
        """``fns[what]`` over the samples: vmapped and jitted, else (and from then on) a loop of eager calls."""
        batched, one, axes = fns[what]
        if self.vectorized:
            try:
                return batched(*args)
            except Exception as exc:  # not traceable: the loop below tells whether the code works
                reason = f"jax.vmap/jit could not trace it: {type(exc).__name__}"
        else:
            reason = ""
        jax = _jax()
        M = next(int(a.shape[0]) for a, ax in zip(args, axes, strict=True) if ax == 0)
        outs = [one(*[a[m] if ax == 0 else a for a, ax in zip(args, axes, strict=True)]) for m in range(M)]
        if reason:  # the loop worked where the vmap did not: say so once, in the name
            self._mode["how"] = f"per-sample loop: {reason}"
        return jax.tree_util.tree_map(lambda *xs: jax.numpy.stack(xs), *outs)

    # ------------------------------------------------------------ the contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> JaxState:
        self._require(problem)
        _plan, carry, fns = self._compiled(problem)
        seeds = torch.randint(0, 2**62, (samples,), generator=rng)
        flat = self._call(
            fns, "init", to_jax(theta.to(torch.float64)), to_jax(problem.s0.to(torch.float64)), to_jax(seeds)
        )
        s = problem.s0.expand(samples, *problem.s0.shape).clone()
        return JaxState(to_torch(flat, problem).reshape(samples, carry.size), s, torch.zeros_like(s))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: JaxState, t: int, rng: torch.Generator
    ) -> tuple[JaxState, torch.Tensor]:
        self._require(problem)
        _plan, _carry, fns = self._compiled(problem)
        M = int(state.carry.shape[0])
        if self.noise_hook:
            nu = self.noise.draw(rng, (M, problem.n), problem.dtype, problem.device, t - 1, state.nu)
            r = to_jax(nu.to(torch.float64))
        else:
            nu, r = state.nu, to_jax(torch.randint(0, 2**62, (M,), generator=rng))
        x, y = problem.inputs[t - 1].to(torch.float64), problem.targets[t - 1].to(torch.float64)
        flat, grads, s = self._call(
            fns, "step", to_jax(theta.to(torch.float64)), to_jax(state.carry), to_jax(x), to_jax(y), r
        )
        if self.state is None:
            with torch.no_grad():
                s_t = problem.transition(theta.detach(), state.s, problem.inputs[t - 1])
        else:
            s_t = to_torch(s, problem).reshape(state.s.shape)
        return JaxState(to_torch(flat, problem), s_t, nu.to(problem.dtype)), to_torch(grads, problem)

    # ------------------------------------------------------------ optional views
    def influence_estimate(self, problem: Problem, state: JaxState) -> torch.Tensor:
        _plan, _carry, fns = self._compiled(problem)
        return to_torch(self._call(fns, "influence", to_jax(state.carry)), problem)

    def uoro_factors(self, problem: Problem, state: JaxState) -> tuple[torch.Tensor, torch.Tensor]:
        _plan, _carry, fns = self._compiled(problem)
        st, tt = self._call(fns, "factors", to_jax(state.carry))
        M = int(state.carry.shape[0])
        return to_torch(st, problem).reshape(M, 1, -1), to_torch(tt, problem).reshape(M, 1, -1)


def _key(seed: Any) -> Any:
    """A PRNG key from an integer seed (traceable)."""
    return _jax().random.PRNGKey(seed)
