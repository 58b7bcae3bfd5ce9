r"""Device and precision parity: every algorithm on another device / dtype / reduction order vs CPU float64.

The claim (DESIGN.md, "GPU paths"): each algorithm of the toolkit, run on CUDA in
float64 or float32 (TF32 on or off), agrees with the CPU float64 result within the
predicted error budget of :mod:`verify.oracles.budget` (section 2 of its docstring):

.. math::
    \|\hat r_{row} - r_{row}\| \le C\,(u_{cand} + u_{ref})\,\sqrt{m L_{eff} + T_{sum}}\,\|\bar r_{row}\| .

The algorithms under parity (:data:`ALGORITHMS`), each a :class:`ParityAlgorithm`
producing a (rows, q) array:

* ``bptt`` -- :func:`verify.oracles.bptt.bptt_gradient` (the total gradient, 1 row);
* ``tbptt(k)`` -- :class:`~verify.estimators.TBPTT` per-step estimates (T rows);
* ``truncated-model(k)`` -- :class:`~verify.estimators.TruncatedModel` (Miller & Hardt eq. (3));
* ``rtrl`` -- :class:`~verify.estimators.RTRL` (UORO eq. (4)) per-step gradients;
* ``uoro`` (rank r) -- :class:`~verify.estimators.UORO` (Algorithm 1) with
  **identical noise**: the ν draws are made once from a CPU generator and fed to
  every run through :class:`~verify.estimators.Tabulated` (T·M rows);
* ``uoro-preact`` -- :class:`~verify.estimators.PreactivationUORO` (Cooijmans &
  Martens), tabulated τ (Elman cells);
* ``fpp-eq7`` -- FPP's explicit per-sample gradients of eq. (7)
  (:func:`verify.fpp.objective.eq7_gradients`; fpp-explicit-state-variables.md §4.1):
  one row :math:`(\nabla_\theta L_i, \nabla_{s_{i-T}}L_i, \nabla_{s_i}L_i)` per i ∈ {T..n},
  on explicit states off the trajectory (so the residuals :math:`s_i - \hat s_i` are not 0).

:func:`compare` runs the candidate on the *same rounded inputs* as the float64
reference (θ, x, targets, s₀, noise tables and FPP states rounded to the candidate's
dtype and cast back), so the comparison isolates arithmetic error. Reduction
orders: :func:`hidden_permutation` relabels the hidden units (an exact symmetry
of the Elman, linear, LSTM and GRU cells), which changes the summation order of
every inner product; the candidate runs on the permuted instance and its result
is mapped back. That is how the budget's constant was calibrated on the CPU
(``python -m verify.bench.gpu --calibrate``) and how the CPU stand-in exercises
"another device's reduction order" in float64.

A ``runner`` argument replaces how the candidate is computed (the mutant catalog
:mod:`verify.impl.mutants.device` uses it: silent float16/bfloat16 arithmetic, fresh
instead of identical noise).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch

from verify._validate import require_positive, require_positive_int
from verify.errors import ContractViolation, InvalidArgument, VerifyError
from verify.estimators import (
    RTRL,
    TBPTT,
    UORO,
    PreactivationUORO,
    Tabulated,
    TruncatedModel,
    run_estimator,
)
from verify.estimators.uoro import pair_norm
from verify.fpp.objective import eq7_gradients
from verify.hardware import describe_device, matmul_tf32, require_dtype_supported, require_same_device
from verify.model.cells import ElmanCell, GRUCell, LinearCell, LSTMCell
from verify.model.problem import Problem
from verify.oracles.bptt import bptt_gradient
from verify.oracles.budget import (
    C_PARITY,
    ParityBudget,
    accumulation_length,
    backward_magnitudes,
    bptt_magnitude,
    effective_memory,
    loss_magnitudes,
    preactivation_uoro_magnitudes,
    rounding_unit,
    rtrl_magnitudes,
    tbptt_magnitudes,
    trajectory,
    truncated_model_magnitudes,
    unit_roundoff,
    uoro_magnitudes,
    window,
)

__all__ = [
    "ALGORITHMS",
    "CI_ALGORITHMS",
    "Arithmetic",
    "BPTTParity",
    "FPPParity",
    "Magnitudes",
    "ParityAlgorithm",
    "ParityComparison",
    "ParityInputs",
    "ParityReference",
    "Permutation",
    "PreactivationUOROParity",
    "RTRLParity",
    "Runner",
    "TBPTTParity",
    "TruncatedModelParity",
    "UOROParity",
    "algorithm_by_name",
    "applicable_algorithms",
    "compare",
    "default_runner",
    "hidden_permutation",
    "parity_reference",
]


# ----------------------------------------------------------------------- inputs
@dataclass(frozen=True, eq=False)
class ParityInputs:
    """Everything an algorithm reads: the problem, θ, a noise table and (FPP) explicit states.

    ``noise`` is a table of draws fed through :class:`~verify.estimators.Tabulated`;
    ``noise_is_state`` says its last dimension is the state (UORO's ν), so a
    hidden-unit permutation permutes it. ``states`` (n_buffer+1, n) are FPP's
    explicit state variables.
    """

    problem: Problem
    theta: torch.Tensor
    noise: torch.Tensor | None = None
    noise_is_state: bool = False
    states: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.problem, Problem):
            raise InvalidArgument("problem", type(self.problem).__name__, "must be a verify.Problem")
        tensors = {"problem.inputs": self.problem.inputs, "theta": self.theta}
        if self.noise is not None:
            tensors["noise"] = self.noise
        if self.states is not None:
            tensors["states"] = self.states
        require_same_device(**tensors)
        self.problem.check_theta(self.theta)
        if self.theta.dtype != self.problem.dtype:
            raise InvalidArgument(
                "theta", f"dtype {self.theta.dtype}", f"must match the problem's {self.problem.dtype}"
            )

    @property
    def dtype(self) -> torch.dtype:
        return self.problem.dtype

    @property
    def device(self) -> torch.device:
        return self.problem.device

    def to(self, dtype: torch.dtype, device: torch.device | str | None = None) -> ParityInputs:
        """Cast every floating tensor to ``dtype`` and move everything to ``device``."""

        def conv(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(dtype=dtype, device=device)

        theta = conv(self.theta)
        assert theta is not None
        return dataclasses.replace(
            self, problem=self.problem.to(dtype, device), theta=theta, noise=conv(self.noise), states=conv(self.states)
        )

    def rounded(self, dtype: torch.dtype) -> ParityInputs:
        """The float64 values of these inputs rounded to ``dtype``: what a ``dtype`` run really sees."""
        if dtype == torch.float64:
            return self.to(torch.float64)
        return self.to(dtype).to(torch.float64)


class Magnitudes(NamedTuple):
    """The float64 magnitude :math:`\\bar r` of a result (same shape), L_eff, T_sum and m."""

    rows: torch.Tensor
    memory: float
    summed: int
    accumulation: int


@runtime_checkable
class ParityAlgorithm(Protocol):
    """An algorithm under parity (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def state_blocks(self) -> int:
        """Number of trailing state-shaped blocks of a result row (after the p entries of θ)."""
        ...

    def applicable(self, problem: Problem) -> str | None:
        """``None`` if the algorithm runs on ``problem``, else the reason it does not."""
        ...

    def prepare(self, problem: Problem, theta: torch.Tensor, generator: torch.Generator) -> ParityInputs:
        """The float64 CPU inputs (draws identical noise tables / explicit states from ``generator``)."""
        ...

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        """The result (rows, q) in the inputs' dtype and device."""
        ...

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        """The float64 magnitudes of the result on float64 ``inputs``."""
        ...


def _check_applicable(alg: ParityAlgorithm, problem: Problem) -> None:
    why = alg.applicable(problem)
    if why is not None:
        raise InvalidArgument("problem", problem.describe(), f"{alg.name} does not apply: {why}")


def _estimates(est: Any, inputs: ParityInputs, samples: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)  # unused by the deterministic / tabulated estimators
    out = run_estimator(est, inputs.problem, inputs.theta, gen, samples=samples)
    return out.reshape(-1, inputs.problem.p)


# ------------------------------------------------------------------- algorithms
class _Float64Inputs:
    """Shared by the deterministic algorithms: applicable to every problem; the
    inputs are the problem and θ in float64 on the CPU (no noise to draw)."""

    def applicable(self, problem: Problem) -> str | None:
        return None

    def prepare(self, problem: Problem, theta: torch.Tensor, generator: torch.Generator) -> ParityInputs:
        return ParityInputs(problem.to(torch.float64, "cpu"), theta.detach().to(torch.float64).cpu())


class _TruncationParity(_Float64Inputs):
    """A deterministic algorithm with a truncation ``k`` (a positive int)."""

    k: int

    def __post_init__(self) -> None:
        require_positive_int("k", self.k)


@dataclass(frozen=True)
class BPTTParity(_Float64Inputs):
    """Full BPTT (:func:`verify.oracles.bptt.bptt_gradient`): the total gradient, one row."""

    name: str = "bptt"
    state_blocks: int = 0

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        return bptt_gradient(inputs.problem, inputs.theta).unsqueeze(0)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        tr = trajectory(inputs.problem, inputs.theta)
        return Magnitudes(
            bptt_magnitude(tr).unsqueeze(0), tr.memory(), inputs.problem.T, accumulation_length(tr.problem)
        )


@dataclass(frozen=True)
class TBPTTParity(_TruncationParity):
    """Truncated BPTT with truncation k (:class:`~verify.estimators.TBPTT`): T per-step rows."""

    k: int = 2
    state_blocks: int = 0

    @property
    def name(self) -> str:
        return f"tbptt(k={self.k})"

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        return _estimates(TBPTT(self.k), inputs)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        tr = trajectory(inputs.problem, inputs.theta)
        return Magnitudes(tbptt_magnitudes(tr, self.k), tr.memory(self.k), 1, accumulation_length(tr.problem))


@dataclass(frozen=True)
class TruncatedModelParity(_TruncationParity):
    """Miller & Hardt's truncated model eq. (3) (:class:`~verify.estimators.TruncatedModel`): T rows."""

    k: int = 2
    state_blocks: int = 0

    @property
    def name(self) -> str:
        return f"truncated-model(k={self.k})"

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        return _estimates(TruncatedModel(self.k), inputs)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        rows, mem = truncated_model_magnitudes(inputs.problem, inputs.theta, self.k)
        return Magnitudes(rows, mem, 1, accumulation_length(inputs.problem))


@dataclass(frozen=True)
class RTRLParity(_Float64Inputs):
    """RTRL (UORO eq. (4); :class:`~verify.estimators.RTRL`): T per-step gradient rows."""

    name: str = "rtrl"
    state_blocks: int = 0

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        return _estimates(RTRL(), inputs)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        tr = trajectory(inputs.problem, inputs.theta)
        return Magnitudes(rtrl_magnitudes(tr), tr.memory(), 1, accumulation_length(tr.problem))


@dataclass(frozen=True)
class _NoisyParity:
    """Shared by the UORO variants: rank r, M samples, noise tabulated once in ``prepare``."""

    rank: int = 1
    samples: int = 2
    state_blocks: int = 0

    def __post_init__(self) -> None:
        require_positive_int("rank", self.rank)
        require_positive_int("samples", self.samples)

    def estimator(self, noise: torch.Tensor) -> Any:
        raise NotImplementedError

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        assert inputs.noise is not None
        return _estimates(self.estimator(inputs.noise), inputs, self.samples)


@dataclass(frozen=True)
class UOROParity(_NoisyParity):
    """UORO (Algorithm 1, rank r) with identical tabulated ν: T·M rows (step-major)."""

    @property
    def name(self) -> str:
        return "uoro" if self.rank == 1 else f"uoro(rank={self.rank})"

    def estimator(self, noise: torch.Tensor) -> UORO:
        return UORO(rank=self.rank, noise=Tabulated(noise))

    def applicable(self, problem: Problem) -> str | None:
        return None

    def prepare(self, problem: Problem, theta: torch.Tensor, generator: torch.Generator) -> ParityInputs:
        P = problem.to(torch.float64, "cpu")
        shape = (P.T, self.samples, self.rank, *P.batch_shape, P.n)
        nu = (2 * torch.randint(0, 2, shape, generator=generator) - 1).to(torch.float64)  # Rademacher, drawn once
        return ParityInputs(P, theta.detach().to(torch.float64).cpu(), noise=nu, noise_is_state=True)

    def normalizers(self, inputs: ParityInputs) -> tuple[torch.Tensor, torch.Tensor]:
        """Algorithm 1's ρ₀, ρ₁ of the float64 run at every step, (T, M, r) each."""
        assert inputs.noise is not None
        P, th = inputs.problem, inputs.theta
        est = self.estimator(inputs.noise)
        gen = torch.Generator().manual_seed(0)
        state = est.init(P, th, gen, samples=self.samples)
        r0, r1 = [], []
        for t in range(1, P.T + 1):
            state, _ = est.step(P, th, state, t, gen)
            r0.append(state.rho0)
            r1.append(state.rho1)
        return torch.stack(r0), torch.stack(r1)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        assert inputs.noise is not None
        tr = trajectory(inputs.problem, inputs.theta)
        rho0, rho1 = self.normalizers(inputs)
        rows = uoro_magnitudes(tr, inputs.noise, rho0, rho1).reshape(-1, inputs.problem.p)
        return Magnitudes(rows, tr.memory(), 1, accumulation_length(tr.problem))


@dataclass(frozen=True)
class PreactivationUOROParity(_NoisyParity):
    """Preactivation-space UORO (Elman cells) with identical tabulated τ: T·M rows."""

    @property
    def name(self) -> str:
        return "uoro-preact" if self.rank == 1 else f"uoro-preact(rank={self.rank})"

    def estimator(self, noise: torch.Tensor) -> PreactivationUORO:
        return PreactivationUORO(rank=self.rank, noise=Tabulated(noise))

    def applicable(self, problem: Problem) -> str | None:
        if not isinstance(problem.cell, ElmanCell):
            return "preactivation-space UORO needs an Elman cell"
        return None

    def prepare(self, problem: Problem, theta: torch.Tensor, generator: torch.Generator) -> ParityInputs:
        _check_applicable(self, problem)
        P = problem.to(torch.float64, "cpu")
        tau = (2 * torch.randint(0, 2, (P.T, self.samples, self.rank), generator=generator) - 1).to(torch.float64)
        return ParityInputs(P, theta.detach().to(torch.float64).cpu(), noise=tau)

    def normalizers(self, inputs: ParityInputs) -> tuple[torch.Tensor, torch.Tensor]:
        """γ_t, β_t of the float64 run, (T, M, r) each (the estimator's rule, recomputed from its state)."""
        assert inputs.noise is not None
        P, th = inputs.problem, inputs.theta
        cell = P.cell
        assert isinstance(cell, ElmanCell)
        est = self.estimator(inputs.noise)
        gen = torch.Generator().manual_seed(0)
        state = est.init(P, th, gen, samples=self.samples)
        params = P.cell_params(th)
        W, eps = params["W"], est.eps
        B, d = P.batch_shape, cell.input_size
        gammas, betas = [], []
        for t in range(1, P.T + 1):
            s_prev, x = state.s[0], P.inputs[t - 1]
            pre = cell.preactivation(params, s_prev, x).detach().requires_grad_(True)
            with torch.enable_grad():
                (dphi,) = torch.autograd.grad(cell.phi(pre), pre, grad_outputs=torch.ones_like(pre))
            JH = dphi.unsqueeze(-1) * torch.matmul(W, state.H)
            gammas.append(torch.sqrt(pair_norm(state.a) / (pair_norm(JH) + eps)) + eps)
            ones = torch.ones((*B, 1), dtype=P.dtype)
            a_t = torch.cat([s_prev, x.expand(*B, d), ones], dim=-1)
            beta = torch.sqrt(torch.linalg.vector_norm(a_t) / (torch.linalg.vector_norm(dphi) + eps)) + eps
            betas.append(beta.expand(self.samples, self.rank))
            state, _ = est.step(P, th, state, t, gen)
        return torch.stack(gammas), torch.stack(betas)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        tr = trajectory(inputs.problem, inputs.theta)
        gamma, beta = self.normalizers(inputs)
        rows = preactivation_uoro_magnitudes(tr, gamma, beta, self.rank).reshape(-1, inputs.problem.p)
        return Magnitudes(rows, tr.memory(), 1, accumulation_length(tr.problem))


@dataclass(frozen=True)
class FPPParity:
    r"""FPP's explicit per-sample gradients, eq. (7), for every i ∈ {T..n} of a buffer (unbatched problems).

    Rows :math:`(\nabla_\theta L_i, \nabla_{s_{i-T}} L_i, \nabla_{s_i} L_i)`, shape
    (n − T + 1, p + 2·state size). The explicit states are the rollout plus
    ``state_noise``·N(0, 1) (drawn once on the CPU), so that :math:`s_i \neq \hat s_i`.
    """

    T: int = 2
    lam: float = 1.0
    state_noise: float = 0.1
    state_blocks: int = 2

    def __post_init__(self) -> None:
        require_positive_int("T", self.T)
        require_positive("lam", self.lam)

    @property
    def name(self) -> str:
        return f"fpp-eq7(T={self.T})"

    def applicable(self, problem: Problem) -> str | None:
        if problem.batch_shape:
            return "an FPP buffer is one unbatched sequence"
        if problem.T < self.T:
            return f"the buffer holds {problem.T} < T={self.T} transitions"
        return None

    def prepare(self, problem: Problem, theta: torch.Tensor, generator: torch.Generator) -> ParityInputs:
        _check_applicable(self, problem)
        P = problem.to(torch.float64, "cpu")
        th = theta.detach().to(torch.float64).cpu()
        with torch.no_grad():
            S = P.rollout(th)
        S = S + self.state_noise * torch.randn(S.shape, generator=generator, dtype=torch.float64)
        return ParityInputs(P, th, states=S)

    def run(self, inputs: ParityInputs) -> torch.Tensor:
        assert inputs.states is not None
        P, th, S, T = inputs.problem, inputs.theta, inputs.states, self.T
        one = torch.ones(1, dtype=P.dtype, device=P.device)
        rows = []
        for i in range(T, P.T + 1):
            g_th, g_start, g_end = eq7_gradients(
                P,
                T,
                self.lam,
                th,
                S[i - T : i - T + 1],
                S[i : i + 1],
                P.inputs[i - T : i].unsqueeze(0),
                P.targets[i - 1 : i],
                one,
            )
            rows.append(torch.cat([g_th, g_start[0], g_end[0]]))  # eq. (7), one sample
        return torch.stack(rows)

    def magnitudes(self, inputs: ParityInputs) -> Magnitudes:
        assert inputs.states is not None
        P, th, S, T = inputs.problem, inputs.theta, inputs.states, self.T
        rows = []
        memory = 1.0
        for i in range(T, P.T + 1):
            win = window(P, th, S[i - T : i - T + 1], P.inputs[i - T : i].unsqueeze(1))
            s_hat = win.states[-1]
            l_s, l_th = loss_magnitudes(P, th, s_hat, P.targets[i - 1 : i])
            resid = self.lam * (S[i : i + 1].abs() + s_hat.abs())  # λ(s_i − ŝ_i) on magnitudes
            g, a_start = backward_magnitudes(win, l_s + resid)  # eq. (7) on magnitudes
            rows.append(torch.cat([(g + l_th)[0], a_start[0], resid[0]]))
            memory = max(memory, effective_memory(win.abs_norms))
        return Magnitudes(torch.stack(rows), memory, 1, accumulation_length(P))


#: every algorithm under parity (the ``full`` profile and the calibration)
ALGORITHMS: tuple[ParityAlgorithm, ...] = (
    BPTTParity(),
    TBPTTParity(2),
    TruncatedModelParity(2),
    RTRLParity(),
    UOROParity(rank=1),
    UOROParity(rank=2),
    PreactivationUOROParity(),
    FPPParity(T=2),
)

#: the ``ci`` subset: one of each kind named by the issue (the truncated model and rank 2 run under ``full``)
CI_ALGORITHMS: tuple[ParityAlgorithm, ...] = (
    BPTTParity(),
    TBPTTParity(2),
    RTRLParity(),
    UOROParity(rank=1),
    PreactivationUOROParity(),
    FPPParity(T=2),
)


def algorithm_by_name(name: str) -> ParityAlgorithm:
    """One of :data:`ALGORITHMS` by its name."""
    for alg in ALGORITHMS:
        if alg.name == name:
            return alg
    raise InvalidArgument("algorithm", name, f"known: {', '.join(a.name for a in ALGORITHMS)}")


# ------------------------------------------------------------ reduction orders
@dataclass(frozen=True)
class Permutation:
    """A relabelling of the hidden units: θ' = θ[theta_index], s' = s[state_index] (see :func:`hidden_permutation`)."""

    theta_index: torch.Tensor
    state_index: torch.Tensor

    def apply(self, inputs: ParityInputs) -> ParityInputs:
        """The permuted instance (same problem up to the relabelling; inputs and targets unchanged)."""
        P = inputs.problem
        si, ti = self.state_index.to(P.device), self.theta_index.to(P.device)
        noise = inputs.noise
        if noise is not None and inputs.noise_is_state:
            noise = noise[..., si]
        states = None if inputs.states is None else inputs.states[..., si]
        return dataclasses.replace(
            inputs,
            problem=P.with_sequence(P.inputs, P.targets, P.s0[..., si]),
            theta=inputs.theta[ti],
            noise=noise,
            states=states,
        )

    def restore(self, rows: torch.Tensor, p: int, state_blocks: int) -> torch.Tensor:
        """Map result rows of the permuted instance back to the original labelling."""
        out = torch.empty_like(rows)
        ti, si = self.theta_index.to(rows.device), self.state_index.to(rows.device)
        out[:, ti] = rows[:, :p]
        n = si.numel()
        for b in range(state_blocks):
            lo = p + b * n
            out[:, lo + si] = rows[:, lo : lo + n]
        return out


def hidden_permutation(problem: Problem, generator: torch.Generator) -> Permutation:
    """A random relabelling of the hidden units: an exact symmetry of Elman, linear, LSTM and GRU problems.

    Every gate block of W, U, b is permuted in its rows, W in its columns, the
    readout's V in its columns; the LSTM's c and h are permuted alike. Only the
    summation order of the inner products changes (a different "reduction order").
    """
    cell = problem.cell
    if isinstance(cell, (ElmanCell, LinearCell)):
        H, gates, parts = cell.n, 1, 1
    elif isinstance(cell, LSTMCell):
        H, gates, parts = cell.hidden, 4, 2
    elif isinstance(cell, GRUCell):
        H, gates, parts = cell.n, 3, 1
    else:
        raise InvalidArgument("problem.cell", cell.describe(), "hidden-unit permutations need Elman/linear/LSTM/GRU")
    perm = torch.randperm(H, generator=generator)
    rows = torch.cat([g * H + perm for g in range(gates)])
    lay = problem.layout
    index = torch.arange(problem.p)
    for name in lay.names:
        sl, shape = lay[name].slice, lay[name].shape
        idx = index[sl].reshape(shape)
        if name == "cell.W":
            idx = idx[rows][:, perm]
        elif name in ("cell.U", "cell.b"):
            idx = idx[rows]
        elif name == "readout.V":
            idx = idx[:, perm]
        index[sl] = idx.reshape(-1).clone()
    state = torch.cat([k * H + perm for k in range(parts)])
    return Permutation(index, state)


# ------------------------------------------------------------------ comparison
_CPU = torch.device("cpu")


@dataclass(frozen=True)
class Arithmetic:
    """What a candidate computes in: dtype, device, TF32 for float32 matmuls (CUDA only)."""

    dtype: torch.dtype = torch.float32
    device: torch.device = _CPU
    tf32: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            raise InvalidArgument("dtype", str(self.dtype), "parity runs in float64, float32, float16 or bfloat16")
        if not isinstance(self.device, torch.device):
            raise InvalidArgument("device", self.device, "must be a torch.device (see verify.hardware.resolve_device)")
        if self.tf32 and (self.device.type != "cuda" or self.dtype != torch.float32):
            raise InvalidArgument("tf32", True, f"TF32 applies to float32 matmuls on CUDA, not {self.label}")

    @property
    def u(self) -> float:
        return rounding_unit(self.dtype, tf32=self.tf32)

    @property
    def label(self) -> str:
        tf = (
            (" tf32=on" if self.tf32 else " tf32=off")
            if self.device.type == "cuda" and self.dtype == torch.float32
            else ""
        )
        return f"{str(self.dtype).replace('torch.', '')} {self.device}{tf}"


#: how a candidate is computed: (algorithm, inputs on the candidate's dtype/device) -> rows
Runner = Callable[[ParityAlgorithm, ParityInputs], torch.Tensor]


def default_runner(algorithm: ParityAlgorithm, inputs: ParityInputs) -> torch.Tensor:
    """The algorithm itself."""
    return algorithm.run(inputs)


@dataclass(frozen=True, eq=False)
class ParityReference:
    """The float64 CPU side of a comparison for inputs rounded to ``dtype``: result and magnitudes."""

    algorithm: ParityAlgorithm
    inputs: ParityInputs
    dtype: torch.dtype
    result: torch.Tensor
    magnitudes: Magnitudes


def parity_reference(
    algorithm: ParityAlgorithm, inputs: ParityInputs, dtype: torch.dtype, *, magnitudes: Magnitudes | None = None
) -> ParityReference:
    """Round ``inputs`` (float64, CPU) to ``dtype`` and compute the float64 result and its magnitudes.

    ``magnitudes`` reuses those of another rounding of the same inputs (they differ
    by a relative O(u) that a budget does not feel).
    """
    if inputs.dtype != torch.float64 or inputs.device.type != "cpu":
        raise InvalidArgument("inputs", f"{inputs.dtype} on {inputs.device}", "the reference side is float64 on cpu")
    _check_applicable(algorithm, inputs.problem)
    rin = inputs.rounded(dtype)
    result = algorithm.run(rin).to(torch.float64)
    mags = algorithm.magnitudes(rin) if magnitudes is None else magnitudes
    if tuple(mags.rows.shape) != tuple(result.shape):
        raise InvalidArgument(
            f"{algorithm.name}.magnitudes",
            f"shape {tuple(mags.rows.shape)}",
            f"must match the result {tuple(result.shape)}",
        )
    return ParityReference(algorithm, rin, dtype, result, mags)


@dataclass(frozen=True)
class ParityComparison:
    """One comparison: the worst row's error against its budget, and the whole picture."""

    algorithm: str
    problem: str
    arithmetic: str
    order: str
    error: float
    budget: float
    ratio: float
    rows: int
    relative_error: float
    memory: float
    accumulation: int
    depth: float
    u_candidate: float
    tf32: bool
    device: str
    wall_time: float
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.ratio <= 1.0

    def row(self) -> dict[str, Any]:
        """A ``data["comparisons"]`` row (error + budget: the report's error-vs-budget figure)."""
        return {
            "comparison": f"{self.algorithm} [{self.arithmetic}, {self.order}]",
            "algorithm": self.algorithm,
            "problem": self.problem,
            "arithmetic": self.arithmetic,
            "order": self.order,
            "device": self.device,
            "tf32": self.tf32,
            "error": self.error,
            "budget": self.budget,
            "ratio": self.ratio,
            "relative_error": self.relative_error,
            "rows": self.rows,
            "L_eff": self.memory,
            "m": self.accumulation,
            "depth": self.depth,
            "u": self.u_candidate,
            "passed": self.passed,
            "note": self.note,
        }


def _require_like_with_like(reference: ParityReference, arithmetic: Arithmetic) -> None:
    """The candidate computes in the reference's dtype (or float16/bfloat16 against float32), on a device that can."""
    if arithmetic.dtype != reference.dtype and not (
        arithmetic.dtype in (torch.float16, torch.bfloat16) and reference.dtype == torch.float32
    ):
        raise InvalidArgument(
            "arithmetic", arithmetic.label, f"the reference was rounded to {reference.dtype}: compare like with like"
        )
    require_dtype_supported(arithmetic.dtype, arithmetic.device)


def _ratios(errors: torch.Tensor, budgets: torch.Tensor, finite: bool) -> torch.Tensor:
    """Error / budget per row (0/0 = 0, e/0 = inf); all inf when the candidate's rows are not finite."""
    ratios = torch.where(budgets > 0, errors / budgets.clamp(min=1e-300), torch.where(errors > 0, torch.inf, 0.0))
    if not finite:
        ratios = torch.full_like(ratios, torch.inf)
    return ratios


def _run_candidate(run: Runner, alg: ParityAlgorithm, cand_in: ParityInputs, arithmetic: Arithmetic) -> torch.Tensor:
    """The candidate's rows, computed in ``arithmetic`` (TF32 as it says and synchronized on CUDA)."""
    if arithmetic.device.type == "cuda":
        with matmul_tf32(arithmetic.tf32):
            out = run(alg, cand_in)
            torch.cuda.synchronize(arithmetic.device)
    else:
        out = run(alg, cand_in)
    return out


def _candidate_rows(out: torch.Tensor, reference: ParityReference, permutation: Permutation | None) -> torch.Tensor:
    """The candidate's rows checked for shape, in float64 on the CPU, in the reference's unit order."""
    alg = reference.algorithm
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(reference.result.shape):
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise InvalidArgument(f"{alg.name} candidate", f"shape {got}", f"expected {tuple(reference.result.shape)}")
    out = out.detach().to(device="cpu", dtype=torch.float64)
    if permutation is not None:
        out = permutation.restore(out, reference.inputs.problem.p, alg.state_blocks)
    return out


def _budget(arithmetic: Arithmetic, mags: Magnitudes, constant: float) -> ParityBudget:
    """The parity budget of :mod:`verify.oracles.budget` §2 for this arithmetic against the float64 reference."""
    return ParityBudget(
        u_candidate=arithmetic.u,
        u_reference=unit_roundoff(torch.float64),
        accumulation=mags.accumulation,
        memory=mags.memory,
        summed=mags.summed,
        constant=constant,
    )


def compare(
    reference: ParityReference,
    arithmetic: Arithmetic,
    *,
    permutation: Permutation | None = None,
    runner: Runner | None = None,
    constant: float = C_PARITY,
    label: str = "",
) -> ParityComparison:
    """Run the candidate in ``arithmetic`` (optionally on the permuted instance) and judge it against the budget.

    The candidate sees exactly ``reference.inputs`` (rounded to
    ``reference.dtype``), cast to its dtype and moved to its device.
    """
    _require_like_with_like(reference, arithmetic)
    alg = reference.algorithm
    run = runner or default_runner
    cand_in = reference.inputs if permutation is None else permutation.apply(reference.inputs)
    cand_in = cand_in.to(arithmetic.dtype, arithmetic.device)
    t0 = time.perf_counter()
    try:
        out = _run_candidate(run, alg, cand_in, arithmetic)
    except (VerifyError, RuntimeError) as exc:
        # non-finite estimates, or an operation the device/dtype cannot run: the candidate does not agree
        did = "broke its contract" if isinstance(exc, ContractViolation) else f"raised {type(exc).__name__}"
        return _broken(reference, arithmetic, permutation, label, f"the candidate {did}: {exc}")
    wall = time.perf_counter() - t0
    out = _candidate_rows(out, reference, permutation)
    mags = reference.magnitudes
    bud = _budget(arithmetic, mags, constant)
    diff = out - reference.result
    errors = torch.linalg.vector_norm(diff, dim=1)
    budgets = bud.row_budgets(mags.rows)
    finite = bool(torch.isfinite(out).all())
    ratios = _ratios(errors, budgets, finite)
    worst = int(torch.argmax(ratios))
    ref_norm = float(torch.linalg.vector_norm(reference.result))
    rel = float(torch.linalg.vector_norm(diff)) / ref_norm if ref_norm > 0 else float(torch.linalg.vector_norm(diff))
    return ParityComparison(
        algorithm=alg.name,
        problem=label or reference.inputs.problem.describe(),
        arithmetic=arithmetic.label,
        order="natural" if permutation is None else "permuted hidden units",
        error=float(errors[worst]) if finite else float("inf"),
        budget=float(budgets[worst]),
        ratio=float(ratios[worst]),
        rows=int(errors.shape[0]),
        relative_error=rel if finite else float("inf"),
        memory=mags.memory,
        accumulation=mags.accumulation,
        depth=bud.depth,
        u_candidate=arithmetic.u,
        tf32=arithmetic.tf32,
        device=describe_device(arithmetic.device),
        wall_time=wall,
    )


def _broken(
    reference: ParityReference, arithmetic: Arithmetic, permutation: Permutation | None, label: str, note: str
) -> ParityComparison:
    mags = reference.magnitudes
    return ParityComparison(
        algorithm=reference.algorithm.name,
        problem=label or reference.inputs.problem.describe(),
        arithmetic=arithmetic.label,
        order="natural" if permutation is None else "permuted hidden units",
        error=float("inf"),
        budget=float("nan"),
        ratio=float("inf"),
        rows=int(reference.result.shape[0]),
        relative_error=float("inf"),
        memory=mags.memory,
        accumulation=mags.accumulation,
        depth=mags.accumulation * mags.memory + mags.summed,
        u_candidate=arithmetic.u,
        tf32=arithmetic.tf32,
        device=describe_device(arithmetic.device),
        wall_time=0.0,
        note=note,
    )


def applicable_algorithms(
    problem: Problem, algorithms: Sequence[ParityAlgorithm] = ALGORITHMS
) -> list[ParityAlgorithm]:
    """The algorithms that run on ``problem``."""
    return [a for a in algorithms if a.applicable(problem) is None]
