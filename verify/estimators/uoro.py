r"""UORO and its family: Algorithm 1, UORO-T, rank-r UORO, preactivation-space UORO.

**UORO** (Tallec & Ollivier, uoro-tallec-ollivier.md, Algorithm 1, eq. (5)-(7)).
In this toolkit's problem model the transition of the paper is

.. math:: F(x_t, s_{t-1}, \theta) = (o_t, s_t),\quad s_t = f_\theta(s_{t-1}, x_t),\quad
          o_t = g_\theta(\mathrm{obs}(s_t)),\quad \ell_t = \ell(o_t, \hat o_t),

so :math:`F_{out}(x_t, s_{t-1}, \theta) = g_\theta(\mathrm{obs}(f_\theta(s_{t-1}, x_t)))` and
the backprop of :math:`\partial\ell_t/\partial o` through :math:`F_{out}` at
:math:`(x_t, s_{t-1}, \theta)` gives :math:`\delta s = \partial\ell_t/\partial s_{t-1}` and
:math:`\delta\theta` = the transition's *and* the readout's parameter gradient at fixed
:math:`s_{t-1}`. One step of Algorithm 1 (from t-1 to t):

.. math::
    \tilde g_t &= (\delta s\cdot\tilde s_{t-1})\,\tilde\theta_{t-1} + \delta\theta \\
    \tilde s_t &= \rho_0\,\frac{\partial F_{state}}{\partial s}\tilde s_{t-1} + \rho_1\,\nu
        \qquad (5)\\
    \tilde\theta_t &= \frac{\tilde\theta_{t-1}}{\rho_0}
        + \frac{\nu^\top}{\rho_1}\frac{\partial F_{state}}{\partial\theta} \qquad (6)\\
    \rho_0 &= \sqrt{\frac{\|\tilde\theta_{t-1}\|}{\|\partial_s F_{state}\,\tilde s_{t-1}\| + \varepsilon}}
        + \varepsilon,\quad
    \rho_1 = \sqrt{\frac{\|\nu^\top\partial_\theta F_{state}\|}{\|\nu\| + \varepsilon}} + \varepsilon,
    \quad \varepsilon = 10^{-7},

with ν a vector of independent random signs, :math:`\tilde s_0 = 0`, :math:`\tilde\theta_0 = 0`.
Proposition 1: :math:`E[\tilde s_t\otimes\tilde\theta_t] = \partial s_t/\partial\theta` and
:math:`E\tilde g_t = \partial\ell_t/\partial\theta` for frozen θ.

*Batched problems*: the state of a problem with batch shape *B is treated as one
state vector of size |B|·n: one ν per sample (and pair) over the flattened
(*B, n) state, norms over all of it. (Per-sequence ν would also be unbiased; this
choice keeps UORO a black box around the batched transition.)

**UORO-T** (§3): Algorithm 1 applied to :math:`F^T`, T consecutive steps of F
(``block=T``); the loss of one step of :math:`F^T` is the sum of the T losses. Per-step
estimates (the contract asks for one per t): for t in the block that starts at
:math:`t_0` (a multiple of T), :math:`\tilde g_t = (\delta s_t\cdot\tilde s_{t_0})\tilde\theta_{t_0}
+ \delta\theta_t` with :math:`(\delta s_t, \delta\theta_t)` the backprop of :math:`\ell_t`
through the :math:`t - t_0` steps since :math:`t_0`. Their sum over the block is exactly
Algorithm 1's :math:`\tilde g` for :math:`F^T`, and each is unbiased for
:math:`\partial\ell_t/\partial\theta`. The reduction (new ν, forwarddiff and backprop
through the T steps, normalizers) happens at the block's last step; a trailing
partial block (T does not divide the sequence length) is estimated the same way.

**Rank-r UORO** (§3, ``rank=r``): r independent pairs :math:`(\tilde s, \tilde\theta)`,
each updated by Algorithm 1 with its own ν; :math:`\tilde g` is their average.

**Preactivation-space UORO** (:class:`PreactivationUORO`; Cooijmans & Martens,
uoro-variance-cooijmans-martens.md, "Projecting in preactivation space"), Elman cells.

Every component a plausible bug would touch is a field, so the mutant catalog
(:mod:`verify.impl.mutants.estimators`) expresses bugs without copying the algorithm:
``noise`` (the law of ν; :class:`Tabulated` feeds given draws), ``rho0``/``rho1``
(normalizer rules over :class:`NormalizerInputs`), ``rho0_on``/``rho1_on`` (which
factor each normalizer scales), ``include_delta_theta`` (the δθ term of g̃) and
``theta_tilde_scale``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import torch

from verify._validate import require_positive, require_positive_int
from verify.errors import InvalidArgument
from verify.estimators import kernels
from verify.estimators.guarantee import Guarantee
from verify.estimators.kernels import use_fast
from verify.estimators.online import (
    _Named,
    batch_numel,
    check_problem_theta,
    check_step,
    expand_samples,
    grad_batched,
    rollout,
    shared,
    state_jvp,
)
from verify.model.cells import ElmanCell
from verify.model.problem import Problem

__all__ = [
    "UORO",
    "Gaussian",
    "IIDNoise",
    "NoiseSource",
    "Normalizer",
    "NormalizerInputs",
    "PreactivationUORO",
    "PreactivationUOROState",
    "Rademacher",
    "Tabulated",
    "UOROState",
    "WrappedNoise",
    "pair_norm",
    "paper_rho0",
    "paper_rho1",
]

Factor = Literal["both", "state", "theta"]
_FACTORS = ("both", "state", "theta")


# ------------------------------------------------------------------------ noise
@runtime_checkable
class NoiseSource(Protocol):
    """The law of UORO's ν (or τ): draws of a given shape from a ``torch.Generator``.

    ``support``: the values of a discrete, equiprobable, independent-coordinate law
    (Rademacher: (-1, 1)), or ``None`` for a continuous law; the enumeration of
    :mod:`verify.estimators.enumerate` needs it. ``draw(rng, shape, dtype, device,
    index, previous)``: ``index`` is the 0-based number of the draw within the run
    and ``previous`` the last draw (zeros before the first), so that a source may be
    tabulated or (as a mutant) reuse its draws. ``tabulated(table)`` returns the
    same source fed from a table of draws instead of the generator.
    """

    @property
    def support(self) -> tuple[float, ...] | None: ...

    def draw(
        self,
        rng: torch.Generator,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        index: int,
        previous: torch.Tensor,
    ) -> torch.Tensor: ...

    def tabulated(self, table: torch.Tensor) -> NoiseSource: ...


class IIDNoise:
    """Base for a noise law drawn afresh at every step on the generator's device.

    A subclass sets ``support`` and gives ``sample(rng, shape)`` (any real dtype, on
    ``rng.device``); ``draw`` casts and moves the sample to the problem's dtype and
    device (so a CPU generator drives a CUDA problem with the same draws) and
    ``tabulated`` feeds the same law from a table. A user's own law of ν plugs in
    by subclassing it.
    """

    support: tuple[float, ...] | None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        raise NotImplementedError

    def draw(
        self,
        rng: torch.Generator,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        index: int,
        previous: torch.Tensor,
    ) -> torch.Tensor:
        return self.sample(rng, shape).to(dtype=dtype, device=device)

    def tabulated(self, table: torch.Tensor) -> NoiseSource:
        return Tabulated(table, self.support)


class WrappedNoise:
    """Base for a noise law built on another one (``inner``), whose support it keeps."""

    inner: NoiseSource

    @property
    def support(self) -> tuple[float, ...] | None:
        return self.inner.support


@dataclass(frozen=True)
class Rademacher(IIDNoise):
    """Independent random signs ±1 (Algorithm 1: "column vector of random signs")."""

    support: tuple[float, ...] | None = (-1.0, 1.0)

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return 2 * torch.randint(0, 2, shape, generator=rng, device=rng.device) - 1


@dataclass(frozen=True)
class Gaussian(IIDNoise):
    """Independent standard normal ν: not Algorithm 1's law, but E[ν νᵀ] = I keeps UORO unbiased (Tallec & Ollivier
    2017, App. A); a known variant with another variance (continuous: it cannot be enumerated)."""

    support: tuple[float, ...] | None = None

    def sample(self, rng: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randn(shape, generator=rng, device=rng.device, dtype=torch.float64)


@dataclass(frozen=True, eq=False)
class Tabulated:
    """Given draws: ``table[index]`` is the draw number ``index`` (shape (draws, *shape)).

    For conformance tests (fixed ν sequences), transferring draws between devices,
    and the exact enumeration over all sign patterns. Consumes no randomness.
    """

    table: torch.Tensor
    support: tuple[float, ...] | None = None

    def draw(
        self,
        rng: torch.Generator,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        index: int,
        previous: torch.Tensor,
    ) -> torch.Tensor:
        if not 0 <= index < self.table.shape[0]:
            raise InvalidArgument("index", index, f"the table holds {self.table.shape[0]} draws")
        out = self.table[index]
        if tuple(out.shape) != tuple(shape):
            raise InvalidArgument(
                "table", f"draws of shape {tuple(out.shape)}", f"the estimator needs draws of shape {tuple(shape)}"
            )
        return out.to(dtype=dtype, device=device)

    def tabulated(self, table: torch.Tensor) -> NoiseSource:
        return Tabulated(table, self.support)


def noise_event_floor(noise: object) -> float:
    """UORO's declared event floor (:class:`verify.stats.TestOptions`): 1/|support| for an equiprobable discrete law.

    Declared by the algorithm, not measured: g̃ is a generic function of every noise coordinate (Tallec & Ollivier
    2017, Algorithm 1: s̃ and θ̃ are linear in each step's ν), so along any direction in which g̃ is not almost
    surely constant, flipping one coordinate of ν changes it: an event of probability ≥ 1/|support| (Rademacher:
    1/2); a continuous law (Gaussian ν): 1. A coordinate or direction that stays flat over many draws is then
    deterministic -- the readout gradient, the rows of parameters a state does not depend on, the directions
    outside the span of the Jacobians. Nothing here is assumed for an estimator that declares nothing.
    """
    support = getattr(noise, "support", None)
    return 1.0 if not support else 1.0 / len(support)


def event_floor_of(est: object) -> float:
    """The event floor the UORO claims declare for ``est`` (:class:`~verify.stats.TestOptions`): its own
    ``event_floor`` if it states one, else Algorithm 1's for its noise law (Tallec & Ollivier 2017:
    :func:`~verify.estimators.uoro.noise_event_floor`; a batch-1 adapter's ``noise_law="gaussian"``: 1)."""
    own = getattr(est, "event_floor", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    if getattr(est, "noise_law", None) == "gaussian":
        return 1.0
    return noise_event_floor(getattr(est, "noise", None) or Rademacher())


# ------------------------------------------------------------------- normalizers
class NormalizerInputs(NamedTuple):
    """What a normalizer rule may look at, every tensor with leading dims (M, r) (samples, pairs)."""

    theta_tilde: torch.Tensor  #: θ̃_{t-1} (before the reduction), (M, r, p)
    s_forward: torch.Tensor  #: ∂F_state/∂s · s̃_{t-1} (forwarddiff), (M, r, *B, n)
    nu: torch.Tensor  #: the fresh noise ν, (M, r, *B, n)
    delta_theta_g: torch.Tensor  #: νᵀ ∂F_state/∂θ (backprop of ν), (M, r, p)
    prev_rho0: torch.Tensor  #: Algorithm 1's ρ₀ at the previous reduction (ones before the first), (M, r)
    prev_rho1: torch.Tensor  #: Algorithm 1's ρ₁ at the previous reduction (ones before the first), (M, r)
    eps: float  #: ε of Algorithm 1
    reduction: int  #: 0-based number of this reduction


#: A normalizer rule: NormalizerInputs -> positive scalars of shape (M, r).
Normalizer = Callable[[NormalizerInputs], torch.Tensor]


def pair_norm(x: torch.Tensor) -> torch.Tensor:
    """Euclidean norm of each (sample, pair) entry of an (M, r, ...) tensor: shape (M, r)."""
    out: torch.Tensor = torch.linalg.vector_norm(x.flatten(2), dim=-1)
    return out


def paper_rho0(z: NormalizerInputs) -> torch.Tensor:
    r"""Algorithm 1's ρ₀ (ν-independent).

    .. math:: \rho_0 = \sqrt{\|\tilde\theta_{t-1}\| / (\|\partial_sF\,\tilde s_{t-1}\| + \varepsilon)} + \varepsilon
    """
    return torch.sqrt(pair_norm(z.theta_tilde) / (pair_norm(z.s_forward) + z.eps)) + z.eps  # Algorithm 1


def paper_rho1(z: NormalizerInputs) -> torch.Tensor:
    r"""Algorithm 1: :math:`\rho_1 = \sqrt{\|\delta\theta_g\| / (\|\nu\| + \varepsilon)} + \varepsilon` (even in ν)."""
    return torch.sqrt(pair_norm(z.delta_theta_g) / (pair_norm(z.nu) + z.eps)) + z.eps  # Algorithm 1


def _check_rho(which: str, rho: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    if not isinstance(rho, torch.Tensor) or tuple(rho.shape) != shape:
        got = tuple(rho.shape) if isinstance(rho, torch.Tensor) else type(rho).__name__
        raise InvalidArgument(which, f"normalizer output {got}", f"a normalizer must return shape (M, r) = {shape}")
    return rho


# --------------------------------------------------------------------------- UORO
class UOROState(NamedTuple):
    """UORO's state (r = rank); every tensor has the leading sample dimension M."""

    s: torch.Tensor  #: s_t, the exact forward state, (M, *B, n)
    s_block: torch.Tensor  #: the state at the last reduction (= s_t for block = 1), (M, *B, n)
    s_tilde: torch.Tensor  #: s̃, (M, r, *B, n)
    theta_tilde: torch.Tensor  #: θ̃, (M, r, p)
    nu: torch.Tensor  #: the last ν drawn (zeros before the first), (M, r, *B, n)
    rho0: torch.Tensor  #: Algorithm 1's ρ₀ at the last reduction (ones before the first), (M, r)
    rho1: torch.Tensor  #: Algorithm 1's ρ₁ at the last reduction (ones before the first), (M, r)


def _check_size(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(name, value, "must be an integer >= 1")
    return value


@dataclass(frozen=True)
class UORO(_Named):
    r"""UORO (Algorithm 1), with ``rank`` r ≥ 1 pairs and UORO-T's ``block`` T ≥ 1 (see module docstring).

    Defaults are the paper's. The remaining fields exist to express variants and
    bugs without copying the algorithm: ``noise``, ``rho0``, ``rho1`` (rules over
    :class:`NormalizerInputs`), ``rho0_on``/``rho1_on`` ∈ {"both", "state", "theta"}
    (the factor(s) a normalizer scales: "state" applies it to s̃ only, "theta" to θ̃
    only), ``include_delta_theta`` (the δθ term of g̃), ``theta_tilde_scale`` (a
    factor on the new θ̃). ``label`` overrides ``name``.

    ``path``: how the Jacobian products of a step are computed. ``"auto"`` (default) uses the
    structured fast path of :mod:`verify.estimators.kernels` for the standard cells (Elman
    tanh/relu, linear, LSTM, GRU; float64/float32) and autograd otherwise; ``"generic"`` forces
    autograd (the reference the fast path is tested against); ``"fast"`` refuses a cell without
    a fast path. Both paths consume the generator identically: the same ν for the same generator.
    """

    rank: int = 1
    block: int = 1
    eps: float = 1e-7
    noise: NoiseSource = Rademacher()
    rho0: Normalizer = paper_rho0
    rho1: Normalizer = paper_rho1
    rho0_on: Factor = "both"
    rho1_on: Factor = "both"
    include_delta_theta: bool = True
    theta_tilde_scale: float = 1.0
    label: str = ""

    @property
    def event_floor(self) -> float:
        """Declared: flat draws are deterministic once a miss of a 1/|support| event is implausible
        (:func:`noise_event_floor`)."""
        return noise_event_floor(self.noise)

    @property
    def guarantee(self) -> Guarantee:
        """Unbiased at frozen θ (Tallec & Ollivier 2017, Prop. 1), for every rank and block length (§3)."""
        return Guarantee("unbiased", source="Tallec & Ollivier 2017, Prop. 1")

    path: str = "auto"

    def __post_init__(self) -> None:
        _check_size("rank", self.rank)
        _check_size("block", self.block)
        kernels.check_path(self.path)
        require_positive("eps", self.eps)
        if not isinstance(self.noise, NoiseSource):
            raise InvalidArgument("noise", type(self.noise).__name__, "must be a NoiseSource (e.g. Rademacher())")
        for key in ("rho0_on", "rho1_on"):
            if getattr(self, key) not in _FACTORS:
                raise InvalidArgument(key, getattr(self, key), f"must be one of {_FACTORS}")
        if not isinstance(self.theta_tilde_scale, (int, float)):
            raise InvalidArgument("theta_tilde_scale", self.theta_tilde_scale, "must be a number")
        if self.label:
            name = self.label
        else:
            name = "uoro" if self.block == 1 else f"uoro-T{self.block}"
            if self.rank > 1:
                name += f"(rank={self.rank})"
        object.__setattr__(self, "name", name)

    # ----------------------------------------------------------- enumeration API
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        """Shape of one draw of ν per sample: (r, *B, n)."""
        return (self.rank, *problem.batch_shape, problem.n)

    def noise_draws(self, steps: int) -> int:
        """Number of draws of ν in the first ``steps`` steps (one per completed block)."""
        return steps // self.block

    def with_noise(self, noise: NoiseSource) -> UORO:
        return dataclasses.replace(self, noise=noise)

    def influence_estimate(self, problem: Problem, state: UOROState) -> torch.Tensor:
        r""":math:`\frac1r\sum_{pairs}\tilde s\otimes\tilde\theta`, shape (M, *B, n, p).

        It estimates :math:`\partial s_{t_0}/\partial\theta` at the last reduction
        :math:`t_0` (every step for block = 1; block boundaries for UORO-T).
        """
        return torch.einsum("mr...i,mrp->m...ip", state.s_tilde, state.theta_tilde) / self.rank

    # ------------------------------------------------------- Jacobian products
    def _generic_products(
        self,
        problem: Problem,
        theta: torch.Tensor,
        s_blk: torch.Tensor,
        t0: int,
        t: int,
        nu: torch.Tensor | None,
        s_tilde: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """(s_t, δs, δθ, νᵀ∂F/∂θ (M·r, p) or None, ∂F/∂s·s̃ (M, r, *B, n) or None) by autograd (any cell)."""
        B, n = problem.batch_shape, problem.n
        K = s_tilde.shape[0] * s_tilde.shape[1]
        with torch.enable_grad():
            th = theta.clone().requires_grad_(True)
            s_in = s_blk.detach().clone().requires_grad_(True)
            s_t = rollout(problem, th, s_in, t0, t)  # F_state (of F^T since the block start)
            loss = problem.step_loss(th, s_t, problem.targets[t - 1])  # through F_out
            # Algorithm 1: (δs, δθ) <- F_out.backprop((x, s, θ), ∂ℓ/∂o)
            d_th, d_s = torch.autograd.grad(loss, (th, s_in), retain_graph=nu is not None, allow_unused=True)
            delta_theta = torch.zeros_like(theta) if d_th is None else d_th
            delta_s = torch.zeros_like(s_in) if d_s is None else d_s
            s_fwd: torch.Tensor | None = None
            dthg: torch.Tensor | None = None
            if nu is not None:
                # (_, δθ_g) <- F_state.backprop((x, s, θ), νᵀ), all M·r noise vectors in one pass
                (dthg,) = grad_batched(s_t, (th,), nu.reshape(K, *B, n), retain_graph=True)
                # s̃ <- F_state.forwarddiff((x, s, θ), (0, s̃, 0))   (eq. (1))
                s_fwd = state_jvp(s_t, s_in, s_tilde.reshape(K, *B, n)).reshape(s_tilde.shape)
        return (
            s_t.detach(),
            delta_s.detach(),
            delta_theta.detach(),
            None if dthg is None else dthg.detach(),
            None if s_fwd is None else s_fwd.detach(),
        )

    def _fast_products(
        self,
        problem: Problem,
        theta: torch.Tensor,
        s_blk: torch.Tensor,
        t0: int,
        t: int,
        nu: torch.Tensor | None,
        s_tilde: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """The same products from the cell's structured derivatives (:mod:`verify.estimators.kernels`).

        νᵀ∂F/∂θ is assembled from outer products of the preactivation cotangents with the
        features (h, x, 1); no per-sample Jacobian and no autograd graph.
        """
        n, nb, p = problem.n, batch_numel(problem), problem.p
        lins, s_t = kernels.forward_window(problem, theta, s_blk, t0, t)  # F_state (of F^T since the block start)
        # Algorithm 1: (δs, δθ) <- F_out.backprop((x, s, θ), ∂ℓ/∂o)
        dl_ds, delta_theta = kernels.loss_gradients(problem, theta, s_t, problem.targets[t - 1])
        u = kernels.backprop_window(problem, lins, dl_ds.reshape(1, nb, n), delta_theta.view(1, p))
        assert u is not None
        delta_s = u.reshape(s_blk.shape)
        if nu is None:
            return s_t, delta_s, delta_theta, None, None
        K = s_tilde.shape[0] * s_tilde.shape[1]
        # (_, δθ_g) <- F_state.backprop((x, s, θ), νᵀ): Σ outer products, all M·r noise vectors at once
        dthg = torch.zeros(K, p, dtype=theta.dtype, device=theta.device)
        kernels.backprop_window(problem, lins, nu.reshape(K, nb, n), dthg, state=False)
        # s̃ <- F_state.forwarddiff((x, s, θ), (0, s̃, 0))   (eq. (1))
        V = s_tilde.reshape(K, nb, n)
        for lin in lins:
            V = lin.jvp_state(V)
        return s_t, delta_s, delta_theta, dthg, V.reshape(s_tilde.shape)

    # ---------------------------------------------------------------- contract
    def init(self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> UOROState:
        """Algorithm 1's start: :math:`\\tilde s_0 = 0`, :math:`\\tilde\\theta_0 = 0` (App. A, t = 0)."""
        M = require_positive_int("samples", samples)
        check_problem_theta(problem, theta)
        r, dt, dev = self.rank, problem.dtype, problem.device
        s0 = expand_samples(problem.s0.clone(), M)
        zs = torch.zeros((M, *self.noise_shape(problem)), dtype=dt, device=dev)
        ones = torch.ones(M, r, dtype=dt, device=dev)
        return UOROState(
            s=s0,
            s_block=s0,
            s_tilde=zs,
            theta_tilde=torch.zeros(M, r, problem.p, dtype=dt, device=dev),
            nu=zs.clone(),
            rho0=ones,
            rho1=ones.clone(),
        )

    def step(
        self, problem: Problem, theta: torch.Tensor, state: UOROState, t: int, rng: torch.Generator
    ) -> tuple[UOROState, torch.Tensor]:
        """One step of Algorithm 1 (of :math:`F^T` at the block's end for UORO-T); returns (state, g̃_t (M, p))."""
        r, Tb = self.rank, self.block
        B, n, p = problem.batch_shape, problem.n, problem.p
        spec = {
            "s": (*B, n),
            "s_block": (*B, n),
            "s_tilde": (r, *B, n),
            "theta_tilde": (r, p),
            "nu": (r, *B, n),
            "rho0": (r,),
            "rho1": (r,),
        }
        theta, M = check_step(self.name, problem, theta, state, t, spec)
        s_blk = shared("state.s_block", state.s_block)
        t0 = ((t - 1) // Tb) * Tb  # start of the block holding step t
        reduce = t - t0 == Tb
        index = t // Tb - 1
        nu: torch.Tensor | None = None
        if reduce:
            nu = self.noise.draw(rng, (M, *self.noise_shape(problem)), problem.dtype, problem.device, index, state.nu)
            if tuple(nu.shape) != (M, r, *B, n):
                raise InvalidArgument("noise.draw(...)", f"shape {tuple(nu.shape)}", f"expected {(M, r, *B, n)}")
        products = self._fast_products if use_fast(self.path, problem, self.name) else self._generic_products
        s_t, delta_s, delta_theta, dthg, s_fwd = products(problem, theta, s_blk, t0, t, nu, state.s_tilde)
        # g̃ = (δs · s̃) θ̃ + δθ, averaged over the r pairs
        coef = (delta_s.detach() * state.s_tilde).flatten(2).sum(-1)  # (M, r)
        g = (coef.unsqueeze(-1) * state.theta_tilde).mean(1)  # Algorithm 1, g̃ (eq. (7))
        if self.include_delta_theta:
            g = g + delta_theta.detach()
        s_now = expand_samples(s_t.detach(), M)
        if nu is None or s_fwd is None or dthg is None:
            return state._replace(s=s_now), g
        return self._reduce(state, s_now, nu, s_fwd, dthg.reshape(M, r, p), index, B), g

    def _reduce(
        self,
        state: UOROState,
        s_now: torch.Tensor,
        nu: torch.Tensor,
        s_fwd: torch.Tensor,
        dthg: torch.Tensor,
        index: int,
        B: tuple[int, ...],
    ) -> UOROState:
        """The reduction at a block's end: normalizers ρ0, ρ1 and the rank-r update, eqs. (5)-(6) of Algorithm 1."""
        M, r = dthg.shape[0], self.rank
        z = NormalizerInputs(
            theta_tilde=state.theta_tilde,
            s_forward=s_fwd.detach(),
            nu=nu,
            delta_theta_g=dthg,
            prev_rho0=state.rho0,
            prev_rho1=state.rho1,
            eps=self.eps,
            reduction=index,
        )
        # the state keeps the paper's normalizers (so that a rule may look back one step);
        # the rules of this estimator decide what is applied
        paper0, paper1 = paper_rho0(z), paper_rho1(z)
        rho0 = paper0 if self.rho0 is paper_rho0 else _check_rho("rho0", self.rho0(z), (M, r))
        rho1 = paper1 if self.rho1 is paper_rho1 else _check_rho("rho1", self.rho1(z), (M, r))
        one = torch.ones_like(rho0)
        r0_s = rho0 if self.rho0_on in ("both", "state") else one
        r0_t = rho0 if self.rho0_on in ("both", "theta") else one
        r1_s = rho1 if self.rho1_on in ("both", "state") else one
        r1_t = rho1 if self.rho1_on in ("both", "theta") else one
        bshape = (M, r) + (1,) * (len(B) + 1)
        s_tilde = r0_s.reshape(bshape) * z.s_forward + r1_s.reshape(bshape) * nu  # eq. (5)
        theta_tilde = z.theta_tilde / r0_t.unsqueeze(-1) + dthg / r1_t.unsqueeze(-1)  # eq. (6)
        if self.theta_tilde_scale != 1.0:
            theta_tilde = self.theta_tilde_scale * theta_tilde
        new = UOROState(
            s=s_now, s_block=s_now, s_tilde=s_tilde, theta_tilde=theta_tilde, nu=nu, rho0=paper0, rho1=paper1
        )
        return new


# ------------------------------------------------------------ preactivation UORO
class PreactivationUOROState(NamedTuple):
    r"""State of preactivation-space UORO: :math:`\tilde H_t` (per sequence) and :math:`\tilde a_t`."""

    s: torch.Tensor  #: s_t, (M, *B, n)
    H: torch.Tensor  #: H̃_t, (M, r, *B, n, n): state × preactivation
    a: torch.Tensor  #: ã_t, (M, r, *B, n + d + 1): (state, input, 1)
    tau: torch.Tensor  #: the last τ drawn (zeros before the first), (M, r)


@dataclass(frozen=True)
class PreactivationUORO(_Named):
    r"""Preactivation-space UORO for Elman cells (Cooijmans & Martens, "Projecting in preactivation space").

    For :math:`s_t = \phi(p_t)`, :math:`p_t = W_{full}\,a_t`,
    :math:`a_t = (s_{t-1}, x_t, 1)`, :math:`W_{full} = [W\;U\;b]`, the Jacobian of
    :math:`s_t` w.r.t. :math:`W_{full}` is approximated by :math:`\tilde H_t (I\otimes\tilde a_t)`:

    .. math::
        \tilde H_t = \gamma_t\,\mathcal J^{s_t}_{s_{t-1}}\tilde H_{t-1} + \beta_t\,\tau_t\,\mathcal J^{s_t}_{p_t},
        \qquad
        \tilde a_t = \gamma_t^{-1}\tilde a_{t-1} + \beta_t^{-1}\tau_t\,a_t,

    with one random sign :math:`\tau_t` per step (and pair), :math:`\tilde H_0 = 0`,
    :math:`\tilde a_0 = 0`, and the gradient estimate
    :math:`\tilde g_t = \operatorname{vec}((\delta s\,\tilde H_{t-1})^\top\tilde a_{t-1}^\top) + \delta\theta`
    with (δs, δθ) as in Algorithm 1. The post leaves γ, β unspecified; we use
    UORO's rule (Algorithm 1) with Frobenius norms: :math:`\gamma_t =
    \sqrt{\|\tilde a_{t-1}\| / (\|\mathcal J\tilde H_{t-1}\|_F + \varepsilon)} + \varepsilon`,
    :math:`\beta_t = \sqrt{\|\tau_t a_t\| / (\|\tau_t \mathcal J^{s_t}_{p_t}\|_F + \varepsilon)}
    + \varepsilon` (β is even in τ, so unbiasedness is kept). For a batched problem
    each sequence carries its own :math:`\tilde H, \tilde a` (its own :math:`a_t`) and τ
    is shared by the batch. The readout's parameters enter only through δθ. ``path`` as
    for :class:`UORO` (the fast path replaces the autograd passes for δs, δθ and φ′).
    """

    rank: int = 1
    eps: float = 1e-7
    noise: NoiseSource = Rademacher()
    label: str = ""

    @property
    def event_floor(self) -> float:
        """Declared: flat draws are deterministic once a miss of a 1/|support| event is implausible
        (:func:`noise_event_floor`)."""
        return noise_event_floor(self.noise)

    @property
    def guarantee(self) -> Guarantee:
        """Unbiased at frozen θ (Cooijmans & Martens 2019, 'Projecting in preactivation space')."""
        return Guarantee("unbiased", source="Cooijmans & Martens 2019, preactivation space")

    path: str = "auto"

    def __post_init__(self) -> None:
        _check_size("rank", self.rank)
        kernels.check_path(self.path)
        require_positive("eps", self.eps)
        if not isinstance(self.noise, NoiseSource):
            raise InvalidArgument("noise", type(self.noise).__name__, "must be a NoiseSource (e.g. Rademacher())")
        name = self.label or ("uoro-preact" + (f"(rank={self.rank})" if self.rank > 1 else ""))
        object.__setattr__(self, "name", name)

    @staticmethod
    def _cell(problem: Problem) -> ElmanCell:
        cell = problem.cell
        if not isinstance(cell, ElmanCell):
            raise InvalidArgument(
                "problem.cell", cell.describe(), "preactivation-space UORO needs an Elman cell s' = phi(W s + U x + b)"
            )
        return cell

    # ----------------------------------------------------------- enumeration API
    def noise_shape(self, problem: Problem) -> tuple[int, ...]:
        """Shape of one draw of τ per sample: (r,)."""
        return (self.rank,)

    def noise_draws(self, steps: int) -> int:
        return steps

    def with_noise(self, noise: NoiseSource) -> PreactivationUORO:
        return dataclasses.replace(self, noise=noise)

    def influence_estimate(self, problem: Problem, state: PreactivationUOROState) -> torch.Tensor:
        r""":math:`\tilde H_t(I\otimes\tilde a_t)` laid out as ∂s_t/∂θ (readout columns 0), (M, *B, n, p)."""
        n, d = problem.n, problem.cell.input_size
        M = state.H.shape[0]
        K = torch.einsum("mr...ij,mr...k->m...ijk", state.H, state.a) / self.rank  # (M, *B, n, n, A)
        out = torch.zeros((M, *problem.batch_shape, n, problem.p), dtype=state.H.dtype, device=state.H.device)
        lay = problem.layout
        out[..., lay["cell.W"].slice] = K[..., :n].flatten(-2)
        out[..., lay["cell.U"].slice] = K[..., n : n + d].flatten(-2)
        out[..., lay["cell.b"].slice] = K[..., n + d]
        return out

    def _scatter(self, problem: Problem, G: torch.Tensor) -> torch.Tensor:
        """(M, n, A) gradient of W_full -> (M, p) in θ's layout (readout entries 0)."""
        n, d = problem.n, problem.cell.input_size
        out = torch.zeros(G.shape[0], problem.p, dtype=G.dtype, device=G.device)
        lay = problem.layout
        out[:, lay["cell.W"].slice] = G[..., :n].flatten(1)
        out[:, lay["cell.U"].slice] = G[..., n : n + d].flatten(1)
        out[:, lay["cell.b"].slice] = G[..., n + d]
        return out

    # ---------------------------------------------------------------- contract
    def init(
        self, problem: Problem, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1
    ) -> PreactivationUOROState:
        M = require_positive_int("samples", samples)
        self._cell(problem)
        check_problem_theta(problem, theta)
        r, B, n, A = self.rank, problem.batch_shape, problem.n, problem.n + problem.cell.input_size + 1
        dt, dev = problem.dtype, problem.device
        return PreactivationUOROState(
            s=expand_samples(problem.s0.clone(), M),
            H=torch.zeros(M, r, *B, n, n, dtype=dt, device=dev),
            a=torch.zeros(M, r, *B, A, dtype=dt, device=dev),
            tau=torch.zeros(M, r, dtype=dt, device=dev),
        )

    def step(
        self, problem: Problem, theta: torch.Tensor, state: PreactivationUOROState, t: int, rng: torch.Generator
    ) -> tuple[PreactivationUOROState, torch.Tensor]:
        cell = self._cell(problem)
        r, B, n, d = self.rank, problem.batch_shape, problem.n, cell.input_size
        spec = {"s": (*B, n), "H": (r, *B, n, n), "a": (r, *B, n + d + 1), "tau": (r,)}
        theta, M = check_step(self.name, problem, theta, state, t, spec)
        s_prev = shared("state.s", state.s)
        x = problem.inputs[t - 1]
        params = problem.cell_params(theta)
        if use_fast(self.path, problem, self.name):
            lin = kernels.linearize(problem, theta, s_prev, x)
            s_t, delta_theta, delta_s = kernels.window_loss_gradient(problem, theta, s_prev, t - 1, t)
            dphi = getattr(lin, "dphi", None)
            dphi = (torch.ones_like(lin.s_next) if dphi is None else dphi).reshape(s_prev.shape)  # J^{s}_{p}: diag
        else:
            with torch.enable_grad():
                th = theta.clone().requires_grad_(True)
                s_in = s_prev.detach().clone().requires_grad_(True)
                s_out = problem.transition(th, s_in, x)
                s_leaf = s_out.detach().requires_grad_(True)
                loss = problem.step_loss(th, s_leaf, problem.targets[t - 1])
                dl_dth, dl_ds = torch.autograd.grad(loss, (th, s_leaf), allow_unused=True)
                dl_dth = torch.zeros_like(theta) if dl_dth is None else dl_dth
                dl_ds = torch.zeros_like(s_leaf) if dl_ds is None else dl_ds
                d_th, d_s = torch.autograd.grad(s_out, (th, s_in), grad_outputs=dl_ds)
                pre = cell.preactivation(params, s_prev, x).detach().requires_grad_(True)
                (dphi,) = torch.autograd.grad(cell.phi(pre), pre, grad_outputs=torch.ones_like(pre))  # J^{s}_{p}: diag
            delta_theta, delta_s, s_t = (d_th + dl_dth).detach(), d_s.detach(), s_out.detach()
        # g̃_t = vec((δs H̃_{t-1})ᵀ ã_{t-1}ᵀ) + δθ, averaged over pairs, summed over the batch
        u = torch.einsum("...i,mr...ij->mr...j", delta_s, state.H)
        G = torch.einsum("mr...j,mr...k->mjk", u, state.a) / r
        g = self._scatter(problem, G) + delta_theta
        # reduction
        tau = self.noise.draw(rng, (M, r), problem.dtype, problem.device, t - 1, state.tau)
        if tuple(tau.shape) != (M, r):
            raise InvalidArgument("noise.draw(...)", f"shape {tuple(tau.shape)}", f"expected {(M, r)}")
        ones = torch.ones((*B, 1), dtype=problem.dtype, device=problem.device)
        a_t = torch.cat([s_prev, x.expand(*B, d), ones], dim=-1)  # (*B, A)
        W = params["W"].detach()
        JH = dphi.detach().unsqueeze(-1) * torch.matmul(W, state.H)  # J^{s_t}_{s_{t-1}} H̃_{t-1}, O(n^3)
        eps = self.eps
        bt = (M, r) + (1,) * len(B)
        tau_b = tau.reshape(bt)
        D = torch.diag_embed(dphi.detach())  # J^{s_t}_{p_t}
        gamma = torch.sqrt(pair_norm(state.a) / (pair_norm(JH) + eps)) + eps
        beta = (
            torch.sqrt(pair_norm(tau_b.unsqueeze(-1) * a_t) / (pair_norm(tau_b.unsqueeze(-1).unsqueeze(-1) * D) + eps))
            + eps
        )
        gH = gamma.reshape(*bt, 1, 1)
        bH = beta.reshape(*bt, 1, 1)
        H_new = gH * JH + bH * tau_b.unsqueeze(-1).unsqueeze(-1) * D  # H̃_t
        a_new = state.a / gamma.reshape(*bt, 1) + tau_b.unsqueeze(-1) * a_t / beta.reshape(*bt, 1)  # ã_t
        new = PreactivationUOROState(expand_samples(s_t.detach(), M), H_new, a_new, tau)
        return new, g
