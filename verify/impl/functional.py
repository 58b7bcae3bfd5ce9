r"""What the JAX route and the torch route share: pure per-sample step functions as a toolkit online estimator.

A user writes ``init`` and ``step`` for **one** sample, over θ in their own names and a carry (any pytree of
arrays); :class:`FunctionalStep` maps θ to those names (:class:`Plan`, from :class:`verify.impl.adapters._Layout`),
keeps the M samples' carries in the toolkit's state as one ``(M, K)`` float64 tensor (:class:`Carry`: a copy of
the state is a valid state, stepping a state twice gives the same result), steps the M samples in one vectorized
call of the array library (``jax.vmap`` under ``jax.jit``; ``torch.func.vmap``) and falls back to a per-sample
loop of eager calls where the step cannot be traced, saying so in :attr:`~FunctionalStep.name`. The noise hook
(ν drawn by the toolkit: Tallec & Ollivier 2017, arXiv:1702.05043, Algorithm 1's random signs, tabulated where a
claim enumerates or replays them) is :class:`~verify.impl.adapters.Batch1`'s.

A subclass gives the array library: :class:`ArrayOps` (the few array operations the layout and the carry need),
the conversions from and to torch, the batched call, and where its per-sample randomness comes from.
:mod:`verify.impl.jax_route` and :mod:`verify.impl.torch_route` are the two.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.guarantee import Guarantee
from verify.estimators.uoro import NoiseSource, Rademacher
from verify.impl.adapters import _Layout, declared_support, require_theta_tilde
from verify.model.problem import Problem

__all__ = ["ArrayOps", "Carry", "FunctionalStep", "Plan", "StepState"]


class StepState(NamedTuple):
    """The adapter's state: the samples' carries flattened (M, K), the state s_t, the last draw ν."""

    carry: torch.Tensor  #: (M, K): every leaf of each sample's carry, raveled and concatenated (float64)
    s: torch.Tensor  #: (M, n): ``state(carry)`` where given, else the exact rollout's
    nu: torch.Tensor  #: (M, n): the last draw handed out (zeros before the first, or without the noise hook)


class ArrayOps:
    """The array operations of one library that :class:`Plan` and :class:`Carry` need (a subclass per library)."""

    def asarray(self, x: Any) -> Any:
        raise NotImplementedError

    def f64(self, x: Any, what: str) -> Any:
        """``x`` as float64 (a library may refuse a narrower float, naming ``what``)."""
        raise NotImplementedError

    def T(self, x: Any) -> Any:
        """``x`` with its axes reversed (numpy's ``.T``: a matrix transposed, a vector itself)."""
        raise NotImplementedError

    def swap(self, x: Any) -> Any:
        """``x`` with its last two axes swapped."""
        raise NotImplementedError

    def concat(self, xs: list[Any], axis: int = 0) -> Any:
        raise NotImplementedError

    def zeros(self, shape: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def stack(self, xs: list[Any]) -> Any:
        raise NotImplementedError

    def flatten(self, tree: Any) -> tuple[list[Any], Any]:
        """(leaves, treedef) of a pytree."""
        raise NotImplementedError

    def unflatten(self, treedef: Any, leaves: list[Any]) -> Any:
        raise NotImplementedError

    def check_leaf(self, leaf: Any) -> None:
        """Refuse a carry leaf the flat float64 carry cannot hold (naming the argument)."""

    def cast(self, x: Any, dtype: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Plan:
    """θ's layout in the user's terms (static, hashable): per entry (user, start, stop, toolkit shape, transposed),
    in θ's order, and the sizes n, p."""

    entries: tuple[tuple[str, int, int, tuple[int, ...], bool], ...]
    n: int
    p: int
    p_cell: int = -1  #: how many of θ's entries are the cell's (first in θ's layout); -1: all of them

    @staticmethod
    def build(names: Mapping[str, str] | None, problem: Problem) -> Plan:
        lay = _Layout.build(names, problem)
        by = {e.name: e for e in problem.layout.entries}
        rows = [(u, by[t].slice.start, by[t].slice.stop, tuple(by[t].shape), tr) for u, t, tr in lay.entries]
        p_cell = sum(e.size for e in problem.layout.entries if e.name.startswith("cell."))
        return Plan(tuple(sorted(rows, key=lambda r: r[1])), problem.n, problem.p, p_cell)

    def to_user(self, theta: Any, ops: ArrayOps) -> dict[str, Any]:
        return {
            u: (ops.T(theta[a:b].reshape(sh)) if tr else theta[a:b].reshape(sh)) for u, a, b, sh, tr in self.entries
        }

    def to_flat(self, g: Any, what: str, ops: ArrayOps) -> Any:
        """A gradient (dict of the user's names, or flat in θ's layout) as a flat float64 array (p,)."""
        if not isinstance(g, Mapping):
            arr = ops.asarray(g)
            if int(np.prod(tuple(arr.shape))) != self.p:
                size = int(np.prod(tuple(arr.shape)))
                raise InvalidArgument(what, f"array of {size} values", f"a dict of your names or p = {self.p}")
            return ops.f64(arr.reshape(-1), what)
        parts = []
        for u, _a, _b, sh, tr in self.entries:
            if u not in g:
                raise InvalidArgument(what, f"keys {sorted(g)}", f"the gradient of every parameter, {u!r} missing")
            v = ops.asarray(g[u])
            want = sh[::-1] if tr else sh
            if tuple(v.shape) != tuple(want):
                raise InvalidArgument(f"{what}[{u!r}]", f"shape {tuple(v.shape)}", f"shape {tuple(want)}")
            parts.append(ops.f64((ops.T(v) if tr else v).reshape(-1), f"{what}[{u!r}]"))
        return ops.concat(parts)

    def theta_tilde(self, tt: Any, what: str, ops: ArrayOps) -> Any:
        """UORO's θ̃ as a flat float64 array (p,): over every parameter (as :meth:`to_flat` takes a gradient), or
        over the cell's parameters only -- Tallec & Ollivier 2017, Algorithm 1's own form when the readout's
        gradient is exact: a dict without the readout's names, or flat of the cell's p_cell values -- whose
        readout entries are then 0."""
        p_cell = self.p if self.p_cell < 0 else self.p_cell
        if not isinstance(tt, Mapping):
            arr = ops.asarray(tt)
            size = int(np.prod(tuple(arr.shape)))
            if size == p_cell < self.p:
                return ops.concat([ops.f64(arr.reshape(-1), what), ops.zeros((self.p - p_cell,))])
            require_theta_tilde(what, size, self.p, p_cell)
            return ops.f64(arr.reshape(-1), what)
        require_theta_tilde(what, tt, self.p, p_cell, cell=[e[0] for e in self.entries if e[1] < p_cell])
        zeros = {u: ops.T(ops.zeros(sh)) if tr else ops.zeros(sh) for u, a, _b, sh, tr in self.entries if u not in tt}
        return self.to_flat({**tt, **zeros}, what, ops)

    def columns(self, infl: Any, what: str, ops: ArrayOps) -> Any:
        """∂s/∂θ (dict name -> (n, *shape), readout names absent; or (n, p)) as (n, p) in θ's layout."""
        if not isinstance(infl, Mapping):
            arr = ops.asarray(infl)
            if tuple(arr.shape) != (self.n, self.p):
                raise InvalidArgument(what, f"shape {tuple(arr.shape)}", f"(n, p) = ({self.n}, {self.p}) or a dict")
            return ops.f64(arr, what)
        parts = []
        for u, a, b, _sh, tr in self.entries:
            if u not in infl:  # a readout parameter: s_t does not depend on it
                parts.append(ops.zeros((self.n, b - a)))
                continue
            v = ops.asarray(infl[u])
            parts.append(ops.f64((ops.swap(v) if tr else v).reshape(self.n, b - a), f"{what}[{u!r}]"))
        return ops.concat(parts, 1)


class Carry:
    """A carry pytree <-> one flat float64 vector (K,): the treedef, leaf shapes and dtypes (from one example)."""

    def __init__(self, shaped: Any, ops: ArrayOps) -> None:
        leaves, self.treedef = ops.flatten(shaped)
        for leaf in leaves:
            ops.check_leaf(leaf)
        self.ops = ops
        self.shapes = [tuple(leaf.shape) for leaf in leaves]
        self.dtypes = [leaf.dtype for leaf in leaves]
        self.size = int(sum(int(np.prod(s)) for s in self.shapes))

    def flat(self, carry: Any) -> Any:
        leaves, _ = self.ops.flatten(carry)
        if not leaves:
            return self.ops.zeros((0,))
        return self.ops.concat([self.ops.cast(x.reshape(-1), "float64") for x in leaves])

    def tree(self, flat: Any) -> Any:
        leaves, i = [], 0
        for shape, dt in zip(self.shapes, self.dtypes, strict=True):
            k = int(np.prod(shape))
            leaves.append(self.ops.cast(flat[i : i + k].reshape(shape), dt))
            i += k
        return self.ops.unflatten(self.treedef, leaves)


class FunctionalStep:
    """Pure per-sample step functions under the toolkit's online-estimator contract (the module docstring); a
    subclass per array library (:class:`~verify.impl.jax_route.JaxStep`, :class:`~verify.impl.torch_route.TorchStep`).
    """

    #: the label of the vectorized way, in :attr:`name`
    VMAP_LABEL = "vmap"
    #: what the adapter is, in the reasons of :meth:`supports`
    RUNNER = "a per-sample step"
    #: the label without ``name=``
    DEFAULT_NAME = "adapter"

    def __init__(
        self,
        init: Callable[..., Any],
        step: Callable[..., tuple[Any, Any]],
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
        name: str | None = None,
        vmap: bool = True,
    ) -> None:
        self._library()
        if not callable(init) or not callable(step):
            raise InvalidArgument(f"{type(self).__name__}(init, step)", (init, step), "two callables")
        if gtilde not in (None, "pre", "post"):
            raise InvalidArgument("gtilde", gtilde, "'pre' (Algorithm 1), 'post' or None")
        self._init, self._step = init, step
        self.names, self.cells, self.losses = names, tuple(cells), tuple(losses)
        self.state, self.influence, self.factors = state, influence, factors
        self.noise_hook, self.noise = bool(noise_hook), noise if noise is not None else Rademacher()
        self.gtilde, self.random_start, self.noise_law, self.guarantee = gtilde, random_start, noise_law, guarantee
        self._name = self.DEFAULT_NAME if name is None else name
        self._mode: dict[str, str] = {"how": self.VMAP_LABEL if vmap else "per-sample loop (vmap=False)"}
        self._cache: dict[Any, Any] = {}
        if influence is None:  # no estimate of ds/dtheta: the claims test gradients only
            object.__setattr__(self, "influence_estimate", None)
        if factors is None:
            object.__setattr__(self, "uoro_factors", None)
        if not self.noise_hook:  # no hook: the claims that need tabulated noise are SKIPPED, with the reason
            for m in ("noise_shape", "noise_draws", "with_noise"):
                object.__setattr__(self, m, None)

    # ------------------------------------------------------------ what a subclass gives
    ops: ArrayOps

    def _library(self) -> None:
        """Import the array library (a missing one: the ModuleNotFoundError the loader words), at construction."""

    def _to(self, t: torch.Tensor) -> Any:
        """A torch tensor as the library's array (float64)."""
        raise NotImplementedError

    def _back(self, a: Any, problem: Problem) -> torch.Tensor:
        """The library's array as a tensor in ``problem``'s dtype and device."""
        raise NotImplementedError

    def _batched(self, fn: Callable[..., Any], axes: tuple[int | None, ...]) -> Callable[..., Any]:
        """``fn`` over the samples (the axes: 0 mapped, None shared), vectorized."""
        raise NotImplementedError

    def _why(self, exc: BaseException) -> str:
        """Why the vectorized call failed, in a few words (for :attr:`name`)."""
        return type(exc).__name__

    def _precision(self) -> None:
        """Refuse a library set up to compute below float64 (the JAX route's x64 switch)."""

    def _shape(self, plan: Plan, problem: Problem) -> Any:
        """One sample's carry (or its shapes and dtypes) for ``problem``: ``init`` on zeros."""
        with self._random(None):
            return self._call_init(plan.to_user(self._to(torch.zeros(problem.p)), self.ops),
                                   self._to(torch.zeros(problem.s0.shape)), self._seed_arg(0))  # fmt: skip

    def _call_init(self, params: Any, s0: Any, r: Any) -> Any:
        """The user's ``init`` with the per-sample random argument ``r``."""
        raise NotImplementedError

    def _user_r(self, r: Any) -> Any:
        """The last argument of the user's ``step`` from the per-sample ``r`` (ν with the noise hook)."""
        return r

    def _seed_arg(self, seed: Any) -> Any:
        return seed

    def _seeds(self, rng: torch.Generator, M: int) -> Any:
        """Per-sample random arguments for ``init`` (and for ``step`` without the noise hook), (M,)."""
        return self._to(torch.randint(0, 2**62, (M,), generator=rng))

    def _step_axis(self) -> int | None:
        """The vmap axis of ``step``'s random argument (None: shared by the samples)."""
        return 0

    @contextlib.contextmanager
    def _random(self, rng: torch.Generator | None) -> Iterator[None]:
        """The library's own randomness around a call, seeded from ``rng`` (None: a fixed seed): none here."""
        yield

    # ------------------------------------------------------------ name, capabilities, noise hook (Batch1's)
    @property
    def name(self) -> str:
        """The label, with how the samples are stepped (vectorized, or the per-sample loop and why)."""
        return f"{self._name} [{self._mode['how']}]"

    @property
    def vectorized(self) -> bool:
        return self._mode["how"] == self.VMAP_LABEL

    def supports(self, problem: Problem) -> str | None:
        """None when this adapter can run ``problem``, else the reason (cells, losses, unbatched, linear readout)."""
        return declared_support(problem, self._name, self.cells, self.losses, self.RUNNER)

    def _require(self, problem: Problem) -> None:
        why = self.supports(problem)
        if why is not None:
            raise NotApplicable(self._name, why)
        self._precision()

    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        return (problem.n,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> Any:
        out = copy.copy(self)
        out.noise = noise
        return out

    # ------------------------------------------------------------ the per-sample functions, batched
    def _compiled(self, problem: Problem) -> tuple[Plan, Carry, dict[str, Any]]:
        """The plan, the carry's shape and the batched functions for ``problem``'s shapes."""
        plan = Plan.build(self.names, problem)
        key = (plan, tuple(problem.s0.shape), tuple(problem.inputs.shape[1:]), tuple(problem.targets.shape[1:]))
        hit = self._cache.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        ops, n = self.ops, problem.n
        carry = Carry(self._shape(plan, problem), ops)

        def init_one(theta: Any, s0: Any, r: Any) -> Any:
            return carry.flat(self._call_init(plan.to_user(theta, ops), s0, self._seed_arg(r)))

        def step_one(theta: Any, flat: Any, x: Any, y: Any, r: Any) -> tuple[Any, Any, Any]:
            new, grad = self._step(plan.to_user(theta, ops), carry.tree(flat), x, y, self._user_r(r))
            s = (
                ops.zeros((n,))
                if self.state is None
                else ops.f64(ops.asarray(self.state(new)).reshape(-1), "state(carry)")
            )
            return carry.flat(new), plan.to_flat(grad, "the gradient step() returned", ops), s

        def factors_one(flat: Any) -> tuple[Any, Any]:
            assert self.factors is not None
            st, tt = self.factors(carry.tree(flat))
            return ops.f64(ops.asarray(st).reshape(-1), "factors(carry)[0]"), plan.theta_tilde(
                tt, "factors(carry)[1]", ops
            )

        def influence_one(flat: Any) -> Any:
            assert self.influence is not None
            return plan.columns(self.influence(carry.tree(flat)), "influence(carry)", ops)

        step_axes = (None, 0, None, None, self._step_axis())
        fns = {
            "init": (self._batched(init_one, (None, None, 0)), init_one, (None, None, 0)),
            "step": (self._batched(step_one, step_axes), step_one, step_axes),
            "factors": (self._batched(factors_one, (0,)), factors_one, (0,)),
            "influence": (self._batched(influence_one, (0,)), influence_one, (0,)),
        }
        out = (plan, carry, fns)
        self._cache[key] = out
        return out

    def _call(self, fns: dict[str, Any], what: str, M: int, *args: Any) -> Any:
        """``fns[what]`` over the M samples: vectorized, else (and from then on) a loop of eager calls."""
        batched, one, axes = fns[what]
        reason = ""
        if self.vectorized:
            try:
                return batched(*args)
            except Exception as exc:  # not traceable: the loop below tells whether the code works
                reason = f"{self.VMAP_LABEL.replace('+', '/')} could not trace it: {self._why(exc)}"
        outs = [one(*[a[m] if ax == 0 else a for a, ax in zip(args, axes, strict=True)]) for m in range(M)]
        if reason:  # the loop worked where the vectorized call did not: say so once, in the name
            self._mode["how"] = f"per-sample loop: {reason}"
        if isinstance(outs[0], tuple):
            return tuple(self.ops.stack(list(col)) for col in zip(*outs, strict=True))
        return self.ops.stack(outs)

    # ------------------------------------------------------------ the contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> StepState:
        self._require(problem)
        _plan, carry, fns = self._compiled(problem)
        seeds = self._seeds(rng, samples)
        with self._random(rng):
            flat = self._call(fns, "init", samples, self._to(theta), self._to(problem.s0), seeds)
        s = problem.s0.expand(samples, *problem.s0.shape).clone()
        return StepState(self._back(flat, problem).reshape(samples, carry.size), s, torch.zeros_like(s))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: StepState, t: int, rng: torch.Generator
    ) -> tuple[StepState, torch.Tensor]:
        self._require(problem)
        _plan, _carry, fns = self._compiled(problem)
        M = int(state.carry.shape[0])
        if self.noise_hook:
            nu = self.noise.draw(rng, (M, problem.n), problem.dtype, problem.device, t - 1, state.nu)
            r = self._to(nu)
        else:
            nu, r = state.nu, self._seeds(rng, M) if self._step_axis() == 0 else None
        x, y = self._to(problem.inputs[t - 1]), self._to(problem.targets[t - 1])
        with self._random(rng):
            flat, grads, s = self._call(fns, "step", M, self._to(theta), self._to(state.carry), x, y, r)
        if self.state is None:
            with torch.no_grad():
                s_t = problem.transition(theta.detach(), state.s, problem.inputs[t - 1])
        else:
            s_t = self._back(s, problem).reshape(state.s.shape)
        return StepState(self._back(flat, problem), s_t, nu.to(problem.dtype)), self._back(grads, problem)

    # ------------------------------------------------------------ optional views
    def influence_estimate(self, problem: Problem, state: StepState) -> torch.Tensor:
        _plan, _carry, fns = self._compiled(problem)
        return self._back(self._call(fns, "influence", int(state.carry.shape[0]), self._to(state.carry)), problem)

    def uoro_factors(self, problem: Problem, state: StepState) -> tuple[torch.Tensor, torch.Tensor]:
        _plan, _carry, fns = self._compiled(problem)
        M = int(state.carry.shape[0])
        st, tt = self._call(fns, "factors", M, self._to(state.carry))
        return self._back(st, problem).reshape(M, 1, -1), self._back(tt, problem).reshape(M, 1, -1)
