r"""Adapters for the code people publish: a batch-1, object-oriented (numpy) online estimator as a toolkit estimator.

Most published RTRL / UORO / KF-RTRL code is a class that holds its own parameters
and recurrent state, takes one input and target per call and returns the gradient
in its own parameter layout, in numpy. The toolkit's online-estimator contract
(:mod:`verify.estimators.base`: ``init``/``step`` over an explicit state with M
samples, torch tensors, θ flat in :attr:`Problem.layout <verify.model.problem.Problem.layout>`)
is the opposite on every count. :class:`Batch1` bridges the two in a few lines::

    from verify.impl.adapters import Batch1

    def make(ctx):                      # one object per sample; ctx.params in *your* names, numpy
        p = ctx.params
        est = TheirUORO(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0)
        est.draw_signs = ctx.noise      # optional: ν through the toolkit (noise_hook=True)
        return est

    MyUORO = Batch1(
        make,
        step_fn=lambda est, x, y: est.step(x, y),     # -> gradient: dict of your names, or a flat array
        names={"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"},  # yours -> the toolkit's (or "V.T")
        cells=("elman-tanh",),
        noise_hook=True,
        gtilde="post",                                 # a declared variant (UORO only)
    )

and ``rnn-verify run --impl uoro=their_wrap.py:MyUORO``.

What the adapter does, per sample: builds your object from θ (mapped to your names and shapes,
transposed where a name says ``".T"``), hands it ``x_t`` and ``ŷ_t`` as float64 numpy arrays,
maps the returned gradient back to θ's flat layout, and keeps the objects between steps (the
toolkit's state holds a key per sample; each step works on a deep copy, so the contract's purity
holds). What it declares (:meth:`Batch1.supports`): the cells and losses you name, unbatched problems
only, and the noise hook only where you route ν through ``ctx.noise``. A problem it cannot run is
left out of a claim with that reason (:mod:`verify.impl.capabilities`), never a crash inside your code.
Code that computes in float32 declares ``dtype="float32"``: the claims then judge it against the predicted
float32 round-off budget (:mod:`verify.impl.precision`), not float64's.

The toolkit's problems: state :math:`s_t = \phi(W s_{t-1} + U x_t + b)` (Elman; W n×n, U n×d, b n),
output :math:`y_t = V s_t + c` (V k×n, c k), loss :math:`\ell_t = \tfrac12\|y_t - \hat y_t\|^2`
(``squared-error``) -- Tallec & Ollivier 2017 (arXiv:1702.05043) §1 with :math:`F_{out}` applied to the new
state; ``s_0`` is given (``ctx.s0``), not zero.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from verify._narrow import LOW_PRECISION, NARROW_TORCH, low_precision_seen, reset_precision
from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.guarantee import Guarantee
from verify.estimators.uoro import NoiseSource, Rademacher
from verify.impl.precision import validate_dtype
from verify.model.problem import Problem

__all__ = [
    "Batch1",
    "Batch1State",
    "Context",
    "declared_support",
    "low_precision_seen",
    "problem_kind",
    "reset_precision",
]


def _f64(value: Any) -> np.ndarray:
    """``value`` as a float64 array; a float32/float16 (or bfloat16) input is recorded (:func:`low_precision_seen`):
    its round-off, not a bug, may be what an exact claim then measures."""
    if type(value) is np.ndarray:  # the hot path (every sample, every step): no dtype names built
        kind, size = value.dtype.kind, value.dtype.itemsize
        if kind == "f" and size == 8:
            return value
        if kind == "f" and size < 8:
            LOW_PRECISION.add(str(value.dtype))
        return np.asarray(value, dtype=np.float64)
    dtype = getattr(value, "dtype", None)
    if isinstance(value, torch.Tensor):  # bfloat16 has no numpy dtype: converted by torch
        if dtype in NARROW_TORCH:
            LOW_PRECISION.add(NARROW_TORCH[value.dtype])
        return np.asarray(value.detach().to("cpu", torch.float64).numpy())
    if dtype is not None and str(dtype) in ("float32", "float16", "bfloat16"):  # jax, cupy ... arrays
        LOW_PRECISION.add(str(dtype))
    return np.asarray(value, dtype=np.float64)


def declared_support(
    problem: Problem, name: str, cells: Sequence[str], losses: Sequence[str], runner: str
) -> str | None:
    """None when an adapter named ``name`` that declares ``cells`` and ``losses`` can run ``problem``, else the
    reason: another cell or loss, a batched problem (``runner`` -- "a batch-1 estimator" -- runs unbatched ones),
    a readout other than the linear one the adapters map."""
    kind = problem_kind(problem)
    if kind not in cells:
        return f"{name} declares cells {', '.join(cells)}; this problem is {kind}"
    if problem.loss.name not in losses:
        return f"{name} declares losses {', '.join(losses)}; this problem's loss is {problem.loss.name}"
    if problem.batch_shape:
        return f"{runner} runs unbatched problems; this one has batch {problem.batch_shape}"
    if problem.readout.name != "linear":
        return f"the adapter maps a linear readout y = V s + c; this problem's readout is {problem.readout.name}"
    return None


def _cell_size(problem: Problem) -> int:
    """p_cell: how many of θ's p entries are the cell's (they come first in θ's layout, the readout's after)."""
    return sum(e.size for e in problem.layout.entries if e.name.startswith("cell."))


def problem_kind(problem: Problem) -> str:
    """``elman-tanh``, ``elman-relu``, ``lstm``, ``gru``, ``linear`` ... -- the cell as the fixtures name it."""
    cell = problem.cell
    act = getattr(cell, "activation", None)
    return f"{cell.name}-{act}" if act else str(cell.name)


class Batch1State(NamedTuple):
    """The adapter's state: a key per sample into the objects it keeps, the state s_t, the last draw ν."""

    handle: torch.Tensor  #: (M,) int64, the step t reached; carries the samples' objects (see :func:`_objects`)
    s: torch.Tensor  #: (M, n): the object's state where ``state=`` is given, else the exact rollout's
    nu: torch.Tensor  #: (M, n): the last draw handed out (zeros before the first)


@dataclass
class Context:
    """What :class:`Batch1`'s ``make`` receives for one sample."""

    params: dict[str, np.ndarray]  #: θ in the user's names and shapes (float64 copies)
    s0: np.ndarray  #: the initial state s_0, (n,)
    problem: Problem  #: the toolkit's problem (its ``describe()`` says what it is)
    rng: np.random.Generator  #: for an object's own randomness (seeded from the toolkit's generator)
    layout: _Layout = field(repr=False)
    theta: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))  #: θ the object holds (flat)
    nu: np.ndarray | None = field(default=None, repr=False)  #: this step's draw (noise hook), else None
    drawn: bool = field(default=False, repr=False)

    def noise(self, *shape: Any) -> np.ndarray:
        """One draw of ν (n,): with the noise hook, the toolkit's (Algorithm 1: random signs; tabulated where a
        claim needs it), once per step; without, random signs from ``rng``. ``shape`` is accepted for code that
        passes one (``draw(n)``, ``draw((n,))``) and must say n."""
        if self.nu is None:
            out = self.rng.choice(np.array([-1.0, 1.0]), size=self.s0.size)
        elif self.drawn:
            raise InvalidArgument("ctx.noise()", "a second call in one step", "one draw of ν per step (noise hook)")
        else:
            self.drawn, out = True, np.array(self.nu, dtype=np.float64)
        if not shape:
            return out
        want = tuple(int(v) for s in shape for v in (s if isinstance(s, tuple | list) else (s,)))
        if want and math.prod(want) != out.size:
            raise InvalidArgument("noise(shape)", want, f"one draw of the noise hook has {out.size} values")
        return out.reshape(want) if want else out


def require_theta_tilde(what: str, tt: int | Mapping[str, Any], p: int, p_cell: int, cell: Sequence[str] = ()) -> None:
    """θ̃ as a user's step gives it: a flat array of ``tt`` values over θ (``p``) or over the cell (``p_cell``), or
    a mapping that holds every name of ``cell`` (the readout's may be left out: zeros); InvalidArgument naming
    ``what`` otherwise (the shared check of :class:`Batch1` and :mod:`verify.impl.functional`)."""
    if isinstance(tt, int):
        if tt not in (p, p_cell):
            raise InvalidArgument(
                what, f"array of {tt} values", f"θ̃ over θ (p = {p}) or over the cell (p_cell = {p_cell})"
            )
        return
    missing = [u for u in cell if u not in tt]
    if missing:
        raise InvalidArgument(
            what,
            f"keys {sorted(tt)}",
            f"θ̃ over every parameter or over the cell's ({', '.join(cell)}): {missing[0]!r} missing",
        )


@dataclass(frozen=True, eq=False)
class _Layout:
    """User name <-> a slice of θ: (user name, toolkit entry name, transposed)."""

    entries: tuple[tuple[str, str, bool], ...]
    _cache: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def build(names: Mapping[str, str] | None, problem: Problem) -> _Layout:
        toolkit = [e.name for e in problem.layout.entries]
        if names is None:  # the toolkit's short names
            names = {t.split(".", 1)[-1]: t.split(".", 1)[-1] for t in toolkit}
        out = []
        for user, spec in names.items():
            target, tr = (spec[:-2], True) if spec.endswith(".T") else (spec, False)
            hits = [t for t in toolkit if t == target or t.endswith("." + target)]
            if len(hits) != 1:
                raise NotApplicable(
                    "adapter layout",
                    f"names maps {user!r} to {spec!r}, which is {'ambiguous' if hits else 'not'} a parameter of "
                    f"{problem.cell.describe()} (it has {', '.join(toolkit)})",
                )
            out.append((user, hits[0], tr))
        missing = set(toolkit) - {t for _, t, _ in out}
        if missing:
            raise NotApplicable(
                "adapter layout", f"names gives no user name for {', '.join(sorted(missing))} of {problem.describe()}"
            )
        return _Layout(tuple(out))

    def to_user(self, problem: Problem, theta: torch.Tensor) -> dict[str, np.ndarray]:
        flat = problem.layout.unflatten(theta.detach().to("cpu", torch.float64), "")
        return {u: (flat[t].numpy().T if tr else flat[t].numpy()).copy() for u, t, tr in self.entries}

    def to_flat(self, problem: Problem, grads: Any, what: str, zeros: set[str] | None = None) -> np.ndarray:
        """A user's gradient (dict of user names, or a flat array in θ's layout) as a flat float64 array (p,);
        the user names in ``zeros`` are 0 whatever ``grads`` holds for them."""
        if not isinstance(grads, Mapping):
            arr = _f64(grads).reshape(-1)
            if arr.size != problem.p:
                raise InvalidArgument(what, f"array of {arr.size} values", f"a dict of your names or p = {problem.p}")
            return arr
        out = np.empty(problem.p)
        for u, t, tr, sl, shape in self._slots(problem):
            if zeros and u in zeros:
                out[sl] = 0.0
                continue
            g = grads.get(u) if isinstance(grads, dict) else (grads[u] if u in grads else None)
            if g is None:
                raise InvalidArgument(what, f"keys {sorted(grads)}", f"the gradient of every parameter, {u!r} missing")
            g = _f64(g)
            g = g.T if tr else g
            if g.shape != shape:
                raise InvalidArgument(f"{what}[{u!r}]", f"shape {tuple(g.shape)}", f"{t} has shape {shape}")
            out[sl] = g.reshape(-1)
        return out

    def theta_tilde(self, problem: Problem, tt: Any, what: str) -> np.ndarray:
        """UORO's θ̃ as a flat float64 array (p,): over every parameter (a dict of your names, or flat in θ's
        layout), or over the cell's parameters only -- Tallec & Ollivier 2017, Algorithm 1's own form when the
        readout's gradient is exact: a dict without the readout's names, or flat of the cell's p_cell values --
        whose readout entries are then 0."""
        p_cell = _cell_size(problem)
        if not isinstance(tt, Mapping):
            arr = _f64(tt).reshape(-1)
            if arr.size == p_cell < problem.p:
                return np.concatenate([arr, np.zeros(problem.p - p_cell)])
            require_theta_tilde(what, arr.size, problem.p, p_cell)
            return arr
        require_theta_tilde(what, tt, problem.p, p_cell, cell=[u for u, t, _ in self.entries if t.startswith("cell.")])
        readout = {u for u, t, _ in self.entries if t.startswith("readout.") and u not in tt}
        return self.to_flat(problem, tt, what, zeros=readout)

    def _slots(self, problem: Problem) -> tuple[tuple[str, str, bool, slice, tuple[int, ...]], ...]:
        """Per entry: (user name, toolkit name, transposed, θ's slice, the toolkit's shape), built once per layout."""
        key = id(problem.layout)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is problem.layout:
            cached: tuple[tuple[str, str, bool, slice, tuple[int, ...]], ...] = hit[1]
            return cached
        by = {e.name: e for e in problem.layout.entries}
        slots = tuple((u, t, tr, by[t].slice, tuple(by[t].shape)) for u, t, tr in self.entries)
        self._cache[key] = (problem.layout, slots)
        return slots

    def columns(self, problem: Problem, infl: Any, what: str) -> np.ndarray:
        """A user's influence ∂s/∂θ (dict name -> (n, *shape), or (n, p)) as (n, p) in θ's layout (readout: 0)."""
        n = problem.n
        if not isinstance(infl, Mapping):
            arr = _f64(infl)
            if arr.shape != (n, problem.p):
                raise InvalidArgument(what, f"shape {arr.shape}", f"(n, p) = ({n}, {problem.p}) or a dict")
            return arr
        out = np.zeros((n, problem.p))
        entries = {e.name: e for e in problem.layout.entries}
        for u, t, tr in self.entries:
            if u not in infl:
                continue  # a readout parameter: s_t does not depend on it
            g = _f64(infl[u])
            g = np.swapaxes(g, -1, -2) if tr else g
            out[:, entries[t].slice] = g.reshape(n, -1)
        return out


@dataclass(frozen=True, eq=False)
class Batch1:
    """A batch-1 object-oriented estimator (numpy or anything) under the toolkit's online-estimator contract.

    ``make(ctx) -> object`` builds one object per sample (:class:`Context`: params in your names, s0, a numpy
    rng, ``ctx.noise()``); ``step(obj, x, y) -> gradient`` advances it by one time step and returns
    ∂ℓ_t/∂θ's estimate (a dict of your names, or a flat array in θ's layout); ``names`` maps your
    parameter names to the toolkit's (``"W"``, ``"cell.W"``, ``"V.T"`` for a transposed one; default: the
    toolkit's short names); ``influence(obj)`` (optional) returns the estimate of ∂s_t/∂θ (dict name ->
    (n, *shape), or (n, p)); ``factors(obj)`` (optional, UORO) returns (s̃, θ̃) with θ̃ a dict or flat, over every
    parameter or over the cell's only (Algorithm 1's form with an exact readout gradient: the readout's entries 0);
    ``state(obj)`` (optional) returns s_t; ``set_params(obj, params)`` (optional) takes new θ in an online
    run; ``expectation(obj, xs, ys)`` (optional) returns the T per-step gradients' exact expectation over the
    object's own randomness, from the fresh object ``make`` built and the inputs and targets as lists of numpy
    arrays (each a dict of your names, or flat) -- the adapter then has the ``exact_mean(problem, theta)`` hook
    (T, p) that an estimator with continuous noise needs for its exact claims (OK: ``uoro.ok-unbiased``).
    ``cells`` / ``losses`` say what the code computes (the claims leave other problems out, with the reason);
    ``noise_hook=True`` promises that the object draws ν only through ``ctx.noise()``, once per step
    (then the toolkit can hand it tabulated signs: exact expectation, formula conformance); ``gtilde``
    declares where UORO's g̃ is formed (``"pre"``: Algorithm 1, before the update of s̃, θ̃; ``"post"``: from
    the updated s̃_t, θ̃_t), ``random_start=True`` that ``make`` starts s̃₀, θ̃₀ at random (from ``ctx.rng``: the
    claims that need tabulated noise are then SKIPPED with that reason), ``noise_law="gaussian"`` that ν is standard
    normal (a variant, unbiased; the variance claims compare with it) and ``guarantee`` what the estimator
    promises (:class:`~verify.estimators.Guarantee`). ``dtype="float32"`` declares that the code computes in
    float32: the claims judge it against the predicted float32 round-off budget instead of float64's
    (:mod:`verify.impl.precision`; None, the default: float64 unless the run says ``--dtype float32``).
    """

    make: Callable[[Context], Any]
    step_fn: Callable[[Any, np.ndarray, np.ndarray], Any] = field(default=lambda obj, x, y: obj.step(x, y))
    names: Mapping[str, str] | None = None
    cells: Sequence[str] = ("elman-tanh",)
    losses: Sequence[str] = ("squared-error",)
    influence: Callable[[Any], Any] | None = None
    factors: Callable[[Any], tuple[Any, Any]] | None = None
    state: Callable[[Any], Any] | None = None
    set_params: Callable[[Any, dict[str, np.ndarray]], None] | None = None
    noise_hook: bool = False
    noise: NoiseSource = field(default_factory=Rademacher)
    gtilde: str | None = None
    random_start: bool = False
    noise_law: str | None = None
    guarantee: Guarantee | None = None
    name: str = "batch-1 adapter"
    expectation: Callable[[Any, list[np.ndarray], list[np.ndarray]], Sequence[Any]] | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.make) or not callable(self.step_fn):
            raise InvalidArgument("Batch1(make, step_fn)", (self.make, self.step_fn), "two callables")
        object.__setattr__(self, "dtype", validate_dtype("Batch1(dtype=...)", self.dtype))
        if self.gtilde not in (None, "pre", "post"):
            raise InvalidArgument("gtilde", self.gtilde, "'pre' (Algorithm 1), 'post' or None")
        if self.influence is None:  # no estimate of ds/dtheta: the claims test gradients only
            object.__setattr__(self, "influence_estimate", None)
        if self.factors is None:
            object.__setattr__(self, "uoro_factors", None)
        if self.expectation is None:  # no exact expectation: the claims that need one are SKIPPED, with the reason
            object.__setattr__(self, "exact_mean", None)
        if not self.noise_hook:  # no hook: the claims that need tabulated noise are SKIPPED, with the reason
            for m in ("noise_shape", "noise_draws", "with_noise"):
                object.__setattr__(self, m, None)

    # ------------------------------------------------------------ capabilities
    def supports(self, problem: Problem) -> str | None:
        """None when this adapter can run ``problem``, else the reason (cells, losses, unbatched only)."""
        return declared_support(problem, self.name, self.cells, self.losses, "a batch-1 estimator")

    # ------------------------------------------------------------ noise hook
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        return (problem.n,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> Batch1:
        return dataclasses.replace(self, noise=noise)  # a subclass (with its own fields) stays itself

    # ------------------------------------------------------------ the contract
    def _require(self, problem: Problem) -> None:
        why = self.supports(problem)
        if why is not None:
            raise NotApplicable(self.name, why)

    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> Batch1State:
        self._require(problem)
        layout = _Layout.build(self.names, problem)
        params = layout.to_user(problem, theta)
        s0 = problem.s0.detach().to("cpu", torch.float64).numpy()
        th = theta.detach().to("cpu", torch.float64).numpy().copy()
        seeds = torch.randint(0, 2**62, (samples,), generator=rng).tolist()
        entries = []
        for m in range(samples):
            rng_m = np.random.default_rng(seeds[m])
            ctx = Context({k: v.copy() for k, v in params.items()}, s0.copy(), problem, rng_m, layout, th)
            entries.append((self.make(ctx), ctx))
        s = problem.s0.expand(samples, *problem.s0.shape).clone()
        return Batch1State(_handle(entries, 0, problem.device), s, torch.zeros_like(s))

    def step(
        self, problem: Problem, theta: torch.Tensor, state: Batch1State, t: int, rng: torch.Generator
    ) -> tuple[Batch1State, torch.Tensor]:
        M = int(state.handle.shape[0])
        layout = _Layout.build(self.names, problem)
        x = problem.inputs[t - 1].detach().to("cpu", torch.float64).numpy()
        y = problem.targets[t - 1].detach().to("cpu", torch.float64).numpy()
        th = theta.detach().to("cpu", torch.float64).numpy()
        nu = self._draw_all(problem, state, M, t, rng)
        grads, states, entries = np.empty((M, problem.p)), [], []
        objs = _objects(state.handle, take=True)
        th = th.copy()  # a view of θ's memory would follow an in-place update of θ: compared against a copy
        same: tuple[Any, bool] = (None, False)  # (the θ the samples held, whether it equals th): once per step
        for m, (obj, ctx) in enumerate(objs):
            if ctx.theta is not same[0]:
                same = (ctx.theta, bool(np.array_equal(ctx.theta, th)))
            if not same[1]:
                self._update_params(obj, ctx, problem, th)
            ctx.theta = th
            ctx.nu, ctx.drawn = (None if nu is None else nu[m]), False
            out = self.step_fn(obj, x.copy(), y.copy())
            if self.noise_hook and not ctx.drawn:
                raise InvalidArgument("noise_hook", True, f"the object did not call ctx.noise() at step t={t}")
            ctx.nu = None
            grads[m] = layout.to_flat(problem, out, "the gradient step() returned")
            if self.state is not None:
                states.append(np.asarray(self.state(obj), dtype=np.float64).reshape(-1))
            entries.append((obj, ctx))
        dt, dev = problem.dtype, problem.device
        if states:
            s = torch.as_tensor(np.stack(states), dtype=dt, device=dev)
        else:
            s = self._exact_state(problem, theta, state, t)
        nu_t = state.nu if nu is None else torch.as_tensor(nu, dtype=dt, device=dev)
        out_state = Batch1State(_handle(entries, t, dev), s.reshape(state.s.shape), nu_t)
        return out_state, torch.as_tensor(grads, dtype=dt, device=dev)

    def _draw_all(self, problem: Problem, state: Batch1State, M: int, t: int, rng: torch.Generator) -> Any:
        if not self.noise_hook:
            return None
        nu = self.noise.draw(rng, (M, problem.n), problem.dtype, problem.device, t - 1, state.nu)
        return nu.detach().to("cpu", torch.float64).numpy()

    def _exact_state(self, problem: Problem, theta: torch.Tensor, state: Batch1State, t: int) -> torch.Tensor:
        with torch.no_grad():
            return problem.transition(theta.detach(), state.s, problem.inputs[t - 1])

    def _update_params(self, obj: Any, ctx: Context, problem: Problem, theta: np.ndarray) -> None:
        if np.array_equal(ctx.theta, theta):
            return
        if self.set_params is None:
            raise NotApplicable(
                self.name, "θ changed between steps (an online run) and the adapter has no set_params(obj, params)"
            )
        self.set_params(obj, ctx.layout.to_user(problem, torch.as_tensor(theta)))
        ctx.theta = theta.copy()

    # ------------------------------------------------------------ optional views
    def objects(self, state: Batch1State) -> list[Any]:
        """The samples' objects ``state`` holds, for a hook that reads them (a subclass's ``terms``); stepping
        them here would advance the state behind the adapter's back."""
        return [obj for obj, _ in _objects(state.handle)]

    def exact_mean(self, problem: Problem, theta: torch.Tensor) -> torch.Tensor:
        """E[g̃_t] for t = 1..T, (T, p) in θ's layout: ``expectation(obj, xs, ys)`` on a fresh object."""
        assert self.expectation is not None
        self._require(problem)
        layout = _Layout.build(self.names, problem)
        th = theta.detach().to("cpu", torch.float64).numpy().copy()
        s0 = problem.s0.detach().to("cpu", torch.float64).numpy()
        ctx = Context(layout.to_user(problem, theta), s0.copy(), problem, np.random.default_rng(0), layout, th)
        obj = self.make(ctx)
        xs = [x.detach().to("cpu", torch.float64).numpy() for x in problem.inputs]
        ys = [y.detach().to("cpu", torch.float64).numpy() for y in problem.targets]
        rows = list(self.expectation(obj, xs, ys))
        if len(rows) != problem.T:
            raise InvalidArgument(
                "expectation(obj, xs, ys)", f"{len(rows)} gradients", f"one per step, T = {problem.T}"
            )
        flat = [layout.to_flat(problem, g, f"expectation(obj, xs, ys)[{t}]") for t, g in enumerate(rows)]
        return torch.as_tensor(np.stack(flat), dtype=problem.dtype, device=problem.device)

    def influence_estimate(self, problem: Problem, state: Batch1State) -> torch.Tensor:
        assert self.influence is not None
        layout = _Layout.build(self.names, problem)
        rows = [layout.columns(problem, self.influence(obj), "influence(obj)") for obj, _ in _objects(state.handle)]
        return torch.as_tensor(np.stack(rows), dtype=problem.dtype, device=problem.device)

    def uoro_factors(self, problem: Problem, state: Batch1State) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.factors is not None
        layout = _Layout.build(self.names, problem)
        st, tt = [], []
        for obj, _ in _objects(state.handle):
            s_tilde, theta_tilde = self.factors(obj)
            st.append(np.asarray(s_tilde, dtype=np.float64).reshape(1, -1))
            tt.append(layout.theta_tilde(problem, theta_tilde, "factors(obj)[1]").reshape(1, -1))
        dt, dev = problem.dtype, problem.device
        return torch.as_tensor(np.stack(st), dtype=dt, device=dev), torch.as_tensor(np.stack(tt), dtype=dt, device=dev)


# ---------------------------------------------------------------- the objects behind the state
# The state is tensors (the contract); a batch-1 object is not. The handle tensor carries the samples' objects as
# an attribute, and a step *moves* them to the next state's handle (stepping advances them in place, no copy per
# step): the input state is then spent, and stepping it again is an error that says so, never a silently
# different result. Equal runs have equal handles (the step t), so the contract's purity test compares them.
_OBJECTS = "_rnn_verify_batch1_objects"


def _handle(entries: list[tuple[Any, Context]], t: int, device: torch.device) -> torch.Tensor:
    h = torch.full((len(entries),), t, dtype=torch.int64, device=device)
    setattr(h, _OBJECTS, entries)
    return h


def _objects(handle: torch.Tensor, take: bool = False) -> list[tuple[Any, Context]]:
    entries = getattr(handle, _OBJECTS, None)
    if entries is None:
        raise InvalidArgument(
            "state",
            "a spent or copied batch-1 state" if hasattr(handle, _OBJECTS) else "a tensor without the samples' objects",
            "the state the adapter's last step returned (a batch-1 object advances in place: each state is stepped "
            "once, and a copy of the state does not carry the objects)",
        )
    if take:
        setattr(handle, _OBJECTS, None)
    out: list[tuple[Any, Context]] = entries
    return out


_FIELDS = (
    "make",
    "step_fn",
    "names",
    "cells",
    "losses",
    "influence",
    "factors",
    "state",
    "set_params",
    "noise_hook",
    "noise",
    "gtilde",
    "random_start",
    "noise_law",
    "guarantee",
    "name",
    "expectation",
    "dtype",
)
