r"""Reproductions of FPP §5: CycleWorld (Fig. 2, Fig. 3(a)) and Stochastic World (Fig. 3(b)), split into blocks.

Paper: ``fpp-explicit-state-variables.md`` §5 and App. D. A reproduction is a grid
of **blocks**; a block (:class:`Block`) is R paired runs of one learner at one
(T, learning rate): the unit of work of a sweep cell (:mod:`verify.run.sweep`) and of
the checks, which run the same blocks in-process at ci/full sizes. Every block of
a reproduction sees the same streams and the same initial weights (generated from
the block's ``seed`` alone: paired across learners, T and learning rates); FPP's
sample positions come from a second generator salted by (method, T, lr).

Settings (App. D and the authors' public code, VincentLiu3/fpp, where the paper
is silent -- see :data:`SETTINGS_NOTES`): RMSprop (decay 0.99, ε = 1e-8: the
authors' PyTorch code), the learning rate chosen per (method, T) from the grid
:data:`APP_D_LRS` by the mean online loss over the runs (App. D: "chosen ...
based on the average accuracy/loss"), buffer 100, M = B = 1, λ = 1, Elman-tanh
with 4 units (CycleWorld) or 32 (Stochastic World). Performance is the online loss
averaged over all steps (§5: "we report average performance over all training
steps"); the final window (last fifth of the steps) is reported too (Fig. 3's
caption: FPP "reaches a final solution with optimal performance").

The learner under test: every block of FPP (method ``fpp``, no mutant) runs ``learner(model, cfg,
inputs, targets, theta0, lrs, generator) -> online losses (R, steps)`` (:data:`Learner`; the check
passes ``config.impls.fpp.learner``, default :func:`fpp_learner`, the batched engine's Algorithm 1).
The rivals (T-BPTT, No-Overlap T-BPTT, FPP without state update) are the toolkit's, and a control
block (``mutant``) is the toolkit's engine with a broken gradient, or fed a broken input stream
(:mod:`verify.fpp.broken_learners`): a broken implementation rerun through the same harness. The paper-scale sweep
(:mod:`verify.run.sweep.definitions`) runs its cells with the default learner.

Measures (:data:`MEASURES`): CycleWorld's ``squared`` error divided by the predict-zero baseline
:math:`1/(2p)` (Fig. 2's "ratio to the baseline of predicting 0", on a scalar target), or the paper's own
``accuracy`` measure -- the authors' code (VincentLiu3/fpp, ``main_torch.py``) trains softmax cross-entropy on the
one-hot next observation and reports accuracy, so Fig. 2's ratio is the error rate over predict-zero's error rate
:math:`1/p`: :math:`p\,(1 - \mathrm{acc})`; Stochastic World's cross-entropy in nats against the Bayes levels of
:func:`~verify.fpp.envs.stochastic_world_reference_losses`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
import torch

from verify._validate import SEED_MULTIPLIER, validate_seed
from verify.errors import InvalidArgument
from verify.fpp.batched import BATCHED_METHODS, run_online_batched
from verify.fpp.broken_learners import BROKEN_LEARNERS, STREAM_MUTANTS, learner_mutant, stream_mutant
from verify.fpp.envs import cycle_world, cycle_world_baseline, stochastic_world
from verify.fpp.online import OnlineConfig, model_problem
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.problem import Problem
from verify.stats.rates import mean_interval

__all__ = [
    "APP_D_LRS",
    "ENVIRONMENTS",
    "INITS",
    "MEASURES",
    "SCALES",
    "SETTINGS_NOTES",
    "Block",
    "Learner",
    "Reproduction",
    "block_model",
    "block_theta0",
    "cycleworld_designs",
    "design_dict",
    "fig7_designs",
    "fpp_learner",
    "prediction_errors",
    "run_block",
    "run_blocks",
    "stochasticworld_design",
    "summarize",
    "updates_designs",
]

ENVIRONMENTS = ("cycleworld", "stochasticworld")
#: App. D: "the learning rate is chosen over the set {0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03}"
APP_D_LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
#: initialisations: this toolkit's (``default``), PyTorch's ``nn.RNN``/``nn.Linear`` (the authors' PyTorch code),
#: TensorFlow 1's ``BasicRNNCell`` + Xavier readout (the authors' TensorFlow code of the paper's time)
INITS = ("default", "torch", "glorot")
#: the measures per environment (the first is the default): CycleWorld ``squared`` (squared error on the scalar next
#: observation / 1/(2p)) and ``accuracy`` (the paper's: cross-entropy on the one-hot next observation, error rate /
#: predict-zero's 1/p); Stochastic World ``ce`` (nats)
MEASURES: dict[str, tuple[str, ...]] = {"cycleworld": ("squared", "accuracy"), "stochasticworld": ("ce",)}
#: where the settings the paper leaves open come from
SETTINGS_NOTES = (
    "RMSprop decay 0.99, eps 1e-8 (the authors' PyTorch code, model/torch_fpp.py: torch.optim.RMSprop(alpha=0.99))",
    "learning rate per (method, T): the grid point with the lowest mean online loss over the runs (App. D)",
    "buffer 100 and T as stated in §5 ('a constant buffer size of 100'); M = B = 1 outside Fig. 4 (§5)",
    "lambda = 1 (App. C: 'Throughout all previous experiments, we simply set lambda = 1'); the penalty is eq. (6)'s "
    "lambda/2 ||s_i - s_hat_i||^2 (the authors' code uses lambda * mean over units: lambda_eff = 2/k)",
    "FPP's states: updated with the parameters' step (the authors' code: state_learning_rate = learning_rate)",
    "observations are one scalar o in {0, 1} (the authors one-hot encode it: the same model class, the bias absorbs "
    "the second column)",
    "Stochastic World's target at step t depends on o_(t-15), o_(t-30), o_t being the input at step t (the authors' "
    "env/stochastic_data.py: Y[i] from X[i-15], X[i-30])",
)
_SALT_STREAM = 67
_SALT_SAMPLER = 71


@dataclass(frozen=True)
class Block:
    """R paired runs of one learner at one T, for each learning rate of ``lrs``: a sweep cell of a reproduction.

    The runs × learning rates run vectorised in one pass (the same R streams and
    initial weights for every learning rate). ``env`` (:data:`ENVIRONMENTS`) with ``p`` (CycleWorld) or ``lags``
    (Stochastic World); ``method`` (:data:`~verify.fpp.batched.BATCHED_METHODS`);
    the :class:`~verify.fpp.online.OnlineConfig` fields; ``init`` (:data:`INITS`);
    ``mutant`` a broken learner of :mod:`verify.fpp.broken_learners` (negative controls);
    ``bins`` the learning curve's resolution; ``final_fraction`` the final window; ``measure`` one of the
    environment's :data:`MEASURES` (None: its first).
    """

    env: str
    method: str
    T: int
    lrs: tuple[float, ...]
    steps: int
    runs: int
    seed: int = 0
    p: int = 8
    lags: tuple[int, int] = (15, 30)
    hidden: int = 4
    buffer_size: int = 100
    lam: float = 1.0
    updates: int = 1
    batch: int = 1
    state_lr: float | None = None
    state_optimizer: str = "rmsprop"
    init: str = "default"
    mutant: str | None = None
    bins: int = 50
    final_fraction: float = 0.2
    measure: str | None = None

    def __post_init__(self) -> None:
        if self.env not in ENVIRONMENTS:
            raise InvalidArgument("env", self.env, f"must be one of {ENVIRONMENTS}")
        if self.method not in BATCHED_METHODS:
            raise InvalidArgument("method", self.method, f"must be one of {BATCHED_METHODS}")
        if self.init not in INITS:
            raise InvalidArgument("init", self.init, f"must be one of {INITS}")
        validate_seed("seed", self.seed)
        if not (0.0 < self.final_fraction <= 1.0):
            raise InvalidArgument("final_fraction", self.final_fraction, "must lie in (0, 1]")
        if not self.lrs or any(not (isinstance(x, (int, float)) and 0 < x < math.inf) for x in self.lrs):
            raise InvalidArgument("lrs", self.lrs, "a non-empty tuple of positive learning rates")
        if self.measure is not None and self.measure not in MEASURES[self.env]:
            raise InvalidArgument("measure", self.measure, f"must be one of {MEASURES[self.env]} for env {self.env!r}")
        if self.mutant is not None and self.mutant not in BROKEN_LEARNERS:
            raise InvalidArgument("mutant", self.mutant, f"must be one of {sorted(BROKEN_LEARNERS)}")
        self.config()  # validates T, lr, buffer ...

    def config(self) -> OnlineConfig:
        return OnlineConfig(
            T=self.T, buffer_size=self.buffer_size, updates=self.updates, batch=self.batch, lam=self.lam, lr=self.lr,
            state_lr=self.state_lr, state_optimizer=self.state_optimizer,
        )  # fmt: skip

    @property
    def lr(self) -> float:
        return float(self.lrs[0])

    def params(self) -> dict[str, Any]:
        d = asdict(self)
        d["lags"] = list(self.lags)
        d["lrs"] = [float(x) for x in self.lrs]
        return d

    @staticmethod
    def from_params(params: Mapping[str, Any]) -> Block:
        d = dict(params)
        for k in ("lags", "lrs"):
            if k in d:
                d[k] = tuple(d[k])
        return Block(**d)

    @property
    def learner(self) -> tuple[str, int]:
        return self.method, self.T

    @property
    def metric(self) -> str:
        """The block's measure: ``measure`` or the environment's default (:data:`MEASURES`)."""
        return self.measure or MEASURES[self.env][0]


def block_model(b: Block) -> Problem:
    """Elman-tanh with ``hidden`` units and a linear readout: squared error (CycleWorld) or softmax CE on two logits
    (Stochastic World; CycleWorld's ``accuracy`` measure, as the authors' code)."""
    if b.metric == "squared":
        return model_problem(ElmanCell(b.hidden, 1, "tanh"), LinearReadout(b.hidden, 1), SquaredError())
    return model_problem(ElmanCell(b.hidden, 1, "tanh"), LinearReadout(b.hidden, 2), SoftmaxCrossEntropy())


def block_theta0(b: Block, model: Problem, gen: torch.Generator) -> torch.Tensor:
    """Initial weights (runs, p) of :data:`INITS`: ``default`` is :meth:`Problem.init_theta`.

    ``torch``: U(-1/√n, 1/√n) for every weight and both biases of ``nn.RNN`` and
    for ``nn.Linear``'s weight and bias (fan-in n). ``glorot``: TF1's
    ``BasicRNNCell`` kernel Glorot-uniform over [x; h] (fan (2 + n) + n, two input
    columns for the one-hot observation), zero bias; readout Xavier-uniform, zero
    bias. The one-hot input's two columns u₀, u₁ become U = u₁ − u₀ and b += u₀.
    """
    n = b.hidden
    m = model.readout.output_size
    out = []
    for _ in range(b.runs):
        if b.init == "default":
            out.append(model.init_theta(gen))
            continue

        def u(lim: float, *shape: int) -> torch.Tensor:
            return (2 * torch.rand(*shape, generator=gen, dtype=torch.float64) - 1) * lim

        if b.init == "torch":
            k = 1 / math.sqrt(n)
            W, U2, b1, b2 = u(k, n, n), u(k, n, 2), u(k, n), u(k, n)
            V, c = u(k, m, n), u(k, m)
            bias = b1 + b2
        else:
            lim = math.sqrt(6 / (2 + n + n))
            K = u(lim, 2 + n, n)  # TF kernel: rows = [x (one-hot, 2); h (n)], columns = units
            U2, W = K[:2].T.contiguous(), K[2:].T.contiguous()
            bias = torch.zeros(n, dtype=torch.float64)
            V, c = u(math.sqrt(6 / (n + m)), m, n), torch.zeros(m, dtype=torch.float64)
        U = (U2[:, 1] - U2[:, 0])[:, None]
        bias = bias + U2[:, 0]
        out.append(model.layout.flatten({"cell.W": W, "cell.U": U, "cell.b": bias, "readout.V": V, "readout.c": c}))
    return torch.stack(out)


def _stream(b: Block, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, float]:
    if b.env == "cycleworld":
        s = cycle_world(b.p, b.steps, b.runs, gen)
        if b.metric == "accuracy":  # the one-hot next observation (the authors' code); base: predict-zero's error 1/p
            return s.inputs, torch.cat([1.0 - s.targets, s.targets], -1), 1.0 / b.p
        return s.inputs, s.targets, cycle_world_baseline(b.p)
    s = stochastic_world(b.steps, b.runs, gen, lags=b.lags)
    return s.inputs, torch.nn.functional.one_hot(s.targets, 2).to(torch.float64), 1.0


def _curve(losses: torch.Tensor, bins: int) -> dict[str, list[float]]:
    steps = losses.shape[-1]
    edges = torch.linspace(0, steps, min(bins, steps) + 1).round().long().tolist()
    mean = losses.mean(0)
    pairs = [(a, c) for a, c in pairwise(edges) if c > a]
    return {"step": [(a + c + 1) / 2 for a, c in pairs], "mean": [float(mean[a:c].mean()) for a, c in pairs]}


#: FPP's online learner under test: ``learner(model, cfg, inputs, targets, theta0, lrs, generator)`` -> the online
#: losses (R, steps) of R runs (the arguments of :func:`~verify.fpp.online.run_online` after ``method``)
Learner = Callable[
    [Problem, OnlineConfig, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor
]


def fpp_learner(
    model: Problem,
    cfg: OnlineConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    theta0: torch.Tensor,
    lrs: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """The toolkit's FPP learner (App. A, Algorithm 1; §5): :func:`~verify.fpp.batched.run_online_batched`'s ``fpp``.

    ``inputs`` (R, steps, d), ``targets`` (R, steps, m), ``theta0`` (R, p), ``lrs`` (R,) per-run RMSprop
    steps, ``generator`` for the sampled buffer positions; returns the online losses (R, steps).
    """
    return run_online_batched("fpp", model, cfg, inputs, targets, theta0, lrs, generator)


def _block_learner(b: Block, learner: Learner | None) -> Learner:
    """What runs block ``b``: a control's broken engine, the learner under test for FPP, else the toolkit's rival."""
    if b.mutant in STREAM_MUTANTS:  # a negative control: the toolkit's engine fed a broken stream
        return partial(_fed_broken_stream, b.method, stream_mutant(b.mutant))
    if b.mutant is not None:  # a negative control: the toolkit's engine with a broken gradient
        return partial(run_online_batched, b.method, theta_grad=learner_mutant(b.mutant))
    if b.method == "fpp" and learner is not None:
        return learner
    return partial(run_online_batched, b.method)


def _fed_broken_stream(
    method: str,
    transform: Callable[[torch.Tensor, torch.Generator], torch.Tensor],
    model: Problem,
    cfg: OnlineConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    theta0: torch.Tensor,
    lrs: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """The toolkit's engine ``method`` on ``transform(inputs)`` (the targets and the loss untouched)."""
    return run_online_batched(method, model, cfg, transform(inputs, generator), targets, theta0, lrs, generator)


def run_block(b: Block, learner: Learner | None = None) -> dict[str, Any]:
    """Run a block; per learning rate and run: ``online`` (mean over all steps) and ``final`` (last window).

    ``learner`` (None: :func:`fpp_learner`) runs the FPP blocks (module docstring). Returns ``lrs``, ``online``
    and ``final`` (lists over lrs of lists over runs, in
    the measure), ``curve`` (per lr: the mean over runs in ``bins`` windows),
    ``finite`` and ``measure`` (``"ratio"``: CycleWorld, loss / (1/(2p)); ``"ce"``:
    Stochastic World, nats).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # hundreds of tiny ops per step: extra threads only add contention (10x slower on 2 cores)
    try:
        return _run_block(b, _block_learner(b, learner))
    finally:
        torch.set_num_threads(threads)


def run_blocks(blocks: Iterable[Block], learner: Learner | None = None) -> dict[Block, dict[str, Any]]:
    """Run every block of a design in this process (the checks; a sweep runs the same blocks as cells)."""
    return {b: run_block(b, learner) for b in blocks}


def _run_block(b: Block, learner: Learner) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(b.seed * SEED_MULTIPLIER + _SALT_STREAM)
    model = block_model(b)
    x, y, base = _stream(b, gen)
    theta0 = block_theta0(b, model, gen)
    salt = (_SALT_SAMPLER + 1009 * BATCHED_METHODS.index(b.method) + 7919 * b.T) % SEED_MULTIPLIER
    sampler = torch.Generator().manual_seed(b.seed * SEED_MULTIPLIER + salt)
    L_ = len(b.lrs)
    lr_col = torch.tensor([float(v) for v in b.lrs], dtype=torch.float64).repeat_interleave(b.runs)
    raw = learner(model, b.config(), x.repeat(L_, 1, 1), y.repeat(L_, 1, 1), theta0.repeat(L_, 1), lr_col, sampler)
    if not isinstance(raw, torch.Tensor) or tuple(raw.shape) != (L_ * b.runs, b.steps):
        got = tuple(raw.shape) if isinstance(raw, torch.Tensor) else type(raw).__name__
        raise InvalidArgument("learner(...)", got, f"online losses of shape (runs, steps) = ({L_ * b.runs}, {b.steps})")
    raw = raw.detach()
    finite = bool(torch.isfinite(raw).all())
    if b.metric == "accuracy":
        raw = prediction_errors(raw, y.repeat(L_, 1, 1)[..., 1])
    L = raw.reshape(L_, b.runs, -1) / base
    tail = max(1, round(b.steps * b.final_fraction))
    return {
        "measure": {"squared": "ratio", "accuracy": "error-ratio", "ce": "ce"}[b.metric],
        "lrs": [float(v) for v in b.lrs],
        "online": L.mean(-1).tolist(),
        "final": L[..., -tail:].mean(-1).tolist(),
        "curve": [_curve(L[j], b.bins) for j in range(L_)],
        "finite": finite,
    }


def prediction_errors(losses: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    r"""Per-step errors of the argmax prediction, from two-class softmax cross-entropies: 1.0 wrong, 0.0 right.

    With two logits the true class has probability above 1/2 iff its cross-entropy is below
    :math:`\ln 2`, so the online losses a learner returns determine its accuracy; at exactly
    :math:`\ln 2` (equal logits, e.g. a zero state and a zero readout bias) ``torch.argmax`` -- the
    authors' accuracy -- picks class 0, right iff ``label`` is 0. A loss that is not finite is an error.
    """
    tie = losses == math.log(2.0)
    wrong = ~(losses < math.log(2.0)) & ~tie  # NaN: neither below nor tied -> wrong
    return (wrong | (tie & (label > 0.5))).to(torch.float64)


@dataclass(frozen=True)
class Reproduction:
    """The design of one reproduction at one scale: the learners, the T and lr grids, the sizes, the controls.

    ``learners`` are (method, T) pairs; every one runs over ``lrs``. ``controls``
    are (label, method, T, mutant) learners run through the same harness (same
    blocks, same lr selection) that the check's criteria must reject.
    ``common`` holds the :class:`Block` fields shared by every block;
    ``split_lrs`` makes one block per learning rate (more, smaller cells for a
    cluster) instead of one block per learner with the lrs vectorised (fewer,
    cheaper cells on a few cores; the sampler's draws differ between the two).
    """

    name: str
    scale: str
    env: str
    learners: tuple[tuple[str, int], ...]
    lrs: tuple[float, ...]
    steps: int
    runs: int
    seed: int = 0
    controls: tuple[tuple[str, str, int, str | None], ...] = ()
    common: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    split_lrs: bool = False

    def _blocks(self, method: str, T: int, mutant: str | None = None) -> list[Block]:
        groups = [(lr,) for lr in self.lrs] if self.split_lrs else [tuple(self.lrs)]
        return [Block(self.env, method, T, g, self.steps, self.runs, self.seed, mutant=mutant, **self.common)
                for g in groups]  # fmt: skip

    def learner_blocks(self) -> dict[str, list[Block]]:
        return {f"{m}/T={T}": self._blocks(m, T) for m, T in self.learners}

    def control_blocks(self) -> dict[str, list[Block]]:
        return {label: self._blocks(m, T, mut) for label, m, T, mut in self.controls}

    def all_blocks(self) -> list[Block]:
        return [b for bs in (*self.learner_blocks().values(), *self.control_blocks().values()) for b in bs]

    def with_seed(self, seed: int) -> Reproduction:
        return replace(self, seed=seed)


def design_dict(rep: Reproduction) -> dict[str, Any]:
    """The design of ``rep`` as plain JSON values (tuples as lists)."""
    return {"env": rep.env, "learners": [list(x) for x in rep.learners], "lrs": list(rep.lrs), "steps": rep.steps,
            "runs": rep.runs, "seed": rep.seed, "common": {k: (list(v) if isinstance(v, tuple) else v)
                                                           for k, v in rep.common.items()},
            "controls": [list(c) for c in rep.controls]}  # fmt: skip


def _summary(blocks: Sequence[Block], values: Mapping[Block, Mapping[str, Any]]) -> dict[str, Any] | None:
    """One learner over its lr grid: the lr with the lowest mean online measure, its CIs, every lr's means.

    None when a block has no value (a failed cell).
    """
    if any(b not in values for b in blocks):
        return None
    lrs: list[float] = []
    online_l: list[list[float]] = []
    final_l: list[list[float]] = []
    curves: list[Any] = []
    finite = True
    for b in blocks:
        v = values[b]
        lrs += [float(x) for x in v["lrs"]]
        online_l += v["online"]
        final_l += v["final"]
        curves += v["curve"]
        finite = finite and bool(v.get("finite", True))
    online, final = np.array(online_l, dtype=float), np.array(final_l, dtype=float)  # (lrs, runs)
    means = np.where(np.isfinite(online).all(1), online.mean(1), np.inf)
    best = int(np.argmin(means))
    om, olo, ohi = mean_interval(online[best])
    fm, flo, fhi = mean_interval(final[best])
    return {
        "method": blocks[0].method,
        "T": blocks[0].T,
        "lr": lrs[best],
        "online_mean": om,
        "online_ci": [olo, ohi],
        "final_mean": fm,
        "final_ci": [flo, fhi],
        "online_runs": online[best].tolist(),
        "final_runs": final[best].tolist(),
        "online_by_lr": {repr(x): float(online[j].mean()) for j, x in enumerate(lrs)},
        "final_by_lr": {repr(x): float(final[j].mean()) for j, x in enumerate(lrs)},
        "curve": curves[best],
        "finite": finite,
    }


def summarize(rep: Reproduction, values: Mapping[Block, Mapping[str, Any]]) -> dict[str, Any]:
    """Per learner ``"method/T=.."`` and per control label: :func:`_summary` (None where blocks are missing)."""
    return {
        "learners": {k: _summary(bs, values) for k, bs in rep.learner_blocks().items()},
        "controls": {k: _summary(bs, values) for k, bs in rep.control_blocks().items()},
    }


# ------------------------------------------------------------------ designs
SCALES = ("ci", "full", "paper")


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise InvalidArgument("scale", scale, f"must be one of {SCALES}")


#: Stochastic World's negative controls at the paper's lags (T = 40, the largest T): learners that cannot learn
_SW_CONTROLS = (
    ("FPP, gradient zeroed (fpp.learner-frozen), T = 40", "fpp", 40, "fpp.learner-frozen"),
    ("T-BPTT, T = 40, observations shuffled in time (fpp.learner-shuffled-inputs)", "tbptt", 40,
     "fpp.learner-shuffled-inputs"),
)  # fmt: skip


def stochasticworld_design(scale: str, seed: int = 0, *, split_lrs: bool = False) -> Reproduction:
    """Stochastic World (§5, Fig. 3(b), App. D.2) at ``scale`` (:data:`SCALES`).

    ``paper``: 32 units, lags (15, 30), 10 000 steps, 30 runs, the App. D lr grid,
    FPP, T-BPTT and No-Overlap T-BPTT at T ∈ {10, 15, 20, 30, 40}; controls, learners
    that cannot learn by construction: FPP at T = 40 with its gradient zeroed (learns
    nothing) and T-BPTT at T = 40 fed each run's observations shuffled in time
    (:func:`~verify.fpp.broken_learners.shuffled_inputs`: the lags destroyed, best
    reachable cross-entropy the memoryless 0.6616). T-BPTT with k = 1, the former
    control, learns through the recurrent dynamics (0.655 at full size, below 0.6616):
    a control that can succeed is none. ``full``: FPP and T-BPTT at
    T ∈ {20, 40}, 10 runs, lrs {3e-4, 1e-3, 3e-3} (the neighbourhood of the best
    points of the paper-scale grid), same controls. ``ci``: the same harness scaled
    down -- 8 units, lags (2, 4), T = 5, 400 steps, 12 runs, lr 3e-3; controls: the
    zeroed and the sign-flipped gradient and T-BPTT at T = 5 fed the shuffled observations.
    Initialisation: ``glorot`` (the authors' TensorFlow code, see :func:`block_theta0`).
    """
    _check_scale(scale)
    if scale == "paper":
        Ts = (10, 15, 20, 30, 40)
        learners = tuple((m, T) for m in ("fpp", "tbptt", "tbptt-no-overlap") for T in Ts)
        return Reproduction(
            "fpp.stochasticworld", scale, "stochasticworld", learners, APP_D_LRS, 10_000, 30, seed,
            controls=_SW_CONTROLS,
            common={"hidden": 32, "lags": (15, 30), "init": "glorot"}, split_lrs=split_lrs,
        )  # fmt: skip
    if scale == "full":
        learners = tuple((m, T) for m in ("fpp", "tbptt") for T in (20, 40))
        return Reproduction(
            "fpp.stochasticworld", scale, "stochasticworld", learners, (3e-4, 1e-3, 3e-3), 10_000, 10, seed,
            controls=_SW_CONTROLS,
            common={"hidden": 32, "lags": (15, 30), "init": "glorot"}, split_lrs=split_lrs,
        )  # fmt: skip
    return Reproduction(
        "fpp.stochasticworld", scale, "stochasticworld", (("fpp", 5), ("tbptt", 5)), (3e-3,), 400, 12, seed,
        controls=(("FPP, gradient zeroed (fpp.learner-frozen)", "fpp", 5, "fpp.learner-frozen"),
                  ("FPP, gradient sign flipped (fpp.learner-sign-flip)", "fpp", 5, "fpp.learner-sign-flip"),
                  ("T-BPTT, observations shuffled in time (fpp.learner-shuffled-inputs)", "tbptt", 5,
                   "fpp.learner-shuffled-inputs")),
        common={"hidden": 8, "lags": (2, 4), "init": "glorot", "buffer_size": 20}, split_lrs=split_lrs,
    )  # fmt: skip


def cycleworld_designs(
    scale: str, seed: int = 0, *, split_lrs: bool = False, measure: str = "squared"
) -> list[Reproduction]:
    """CycleWorld (§5, Fig. 2, App. D.1) at ``scale``: one :class:`Reproduction` per cycle length p.

    ``measure`` (:data:`MEASURES`): ``squared`` (squared error on the scalar next observation / 1/(2p)) or
    ``accuracy`` (the paper's: softmax cross-entropy on the one-hot next observation, error rate / 1/p).

    Every p: FPP and T-BPTT at T ∈ {p/2, p}, 4 units; controls: FPP at T = p with its
    gradient sign-flipped and zeroed. ``paper``: p ∈ {4, 6, 8, 10} (the paper does not
    list its p; the authors' scripts use 6 and 10), 5000 steps, 30 runs, the App. D
    lr grid. ``full``: p = 8, 5000 steps, 10 runs, lrs {1e-3, 3e-3, 1e-2, 3e-2}.
    ``ci``: p = 4, 600 steps, 8 runs, lrs {1e-2, 3e-2}, buffer 20.
    """
    _check_scale(scale)
    if measure not in MEASURES["cycleworld"]:
        raise InvalidArgument("measure", measure, f"must be one of {MEASURES['cycleworld']}")
    ps: tuple[int, ...]
    lrs: tuple[float, ...]
    if scale == "paper":
        ps, steps, runs, lrs, buf = (4, 6, 8, 10), 5000, 30, APP_D_LRS, 100
    elif scale == "full":
        ps, steps, runs, lrs, buf = (8,), 5000, 10, (1e-3, 3e-3, 1e-2, 3e-2), 100
    else:
        ps, steps, runs, lrs, buf = (4,), 600, 8, (1e-2, 3e-2), 20
    out = []
    for p in ps:
        Ts = sorted({max(1, p // 2), p})
        out.append(
            Reproduction(
                f"fpp.cycleworld-p{p}" + ("-accuracy" if measure == "accuracy" else ""), scale,
                "cycleworld", tuple((m, T) for m in ("fpp", "tbptt") for T in Ts),
                lrs, steps, runs, seed,
                controls=(("FPP, gradient sign flipped (fpp.learner-sign-flip), T = p", "fpp", p,
                           "fpp.learner-sign-flip"),
                          ("FPP, gradient zeroed (fpp.learner-frozen), T = p", "fpp", p, "fpp.learner-frozen")),
                common={"hidden": 4, "p": p, "init": "glorot", "buffer_size": buf, "measure": measure},
                split_lrs=split_lrs,
            )
        )  # fmt: skip
    return out


def updates_designs(scale: str, seed: int = 0, *, split_lrs: bool = False) -> list[Reproduction]:
    """FPP §5 Fig. 4: M updates per step and mini-batches of B, FPP with and without state update.

    One :class:`Reproduction` per (environment, M, B) with the learners FPP and FPP
    without state update at each T; buffer 1000 (§5: "We use a buffer size of 1000
    and 10000 training steps"). ``paper``: Stochastic World (32 units) at
    T ∈ {1, 2, 4, 8, 16, 32} (§5: "the most noticeable gaps are for T = 16 and T = 32 in
    StochasticWorld") and CycleWorld (p = 10, 4 units, the authors' ``cyc_run_all.sh``)
    at T ∈ {1, 2, 4, 8, 16}, M ∈ {1, 2, 4, 8, 16} at B = 1 and B ∈ {2, 4, 8, 16} at M = 1
    (§5), 10 000 steps, 30 runs, the App. D lr grid; control: FPP with its gradient
    zeroed at M = 16. Cost of ``paper``: about 30-100 CPU core-hours (pilots on this shared 2-core machine: Stochastic
    World at 180 batched runs x lrs takes 0.14-0.35 s per step at M = 16, B = 1 and T = 1..32, and 0.75 s per step at
    M = 1, B = 16; summed over the grid about 28 s per step for both learners, x 10 000 steps ~ 77 h here, an
    unshared core perhaps 3x faster; CycleWorld adds about a fifth); run it on a Dask cluster with
    ``rnn-verify sweep fpp-fig4 --scale paper --split-lrs --executor dask=ADDRESS`` (1200 cells).
    ``full`` (a REDUCED run, not the paper's grid): CycleWorld p = 10, T = 1, M ∈ {1, 8},
    B ∈ {1, 8}, 5000 steps, 10 runs, lrs {3e-3, 1e-2, 3e-2}. ``ci``: CycleWorld p = 4,
    T = 1, M ∈ {1, 3}, 300 steps, 8 runs, lr 3e-2, buffer 100 (at M = B = 1 FPP only: the
    comparisons there need it alone). App. D's Fig. 7 is :func:`fig7_designs`.
    """
    _check_scale(scale)
    envs: list[tuple[str, dict[str, Any], tuple[int, ...]]]
    configs: list[tuple[int, int]]
    lrs: tuple[float, ...]
    if scale == "paper":
        envs = [("stochasticworld", {"hidden": 32, "lags": (15, 30)}, (1, 2, 4, 8, 16, 32)),
                ("cycleworld", {"hidden": 4, "p": 10}, (1, 2, 4, 8, 16))]  # fmt: skip
        steps, runs, lrs, buf = 10_000, 30, APP_D_LRS, 1000
        configs = [(M, 1) for M in (1, 2, 4, 8, 16)] + [(1, B) for B in (2, 4, 8, 16)]
    elif scale == "full":
        envs = [("cycleworld", {"hidden": 4, "p": 10}, (1,))]
        steps, runs, lrs, buf = 5000, 10, (3e-3, 1e-2, 3e-2), 1000
        configs = [(1, 1), (8, 1), (1, 8)]
    else:
        envs = [("cycleworld", {"hidden": 4, "p": 4}, (1,))]
        steps, runs, lrs, buf = 300, 8, (3e-2,), 100
        configs = [(1, 1), (3, 1)]
    return _updates_reps("", scale, seed, envs, configs, (steps, runs, lrs, buf), split_lrs=split_lrs)


def fig7_designs(scale: str, seed: int = 0, *, split_lrs: bool = False) -> list[Reproduction]:
    """FPP App. D Fig. 7: CycleWorld, T = 1, mini-batch B = 16, 50 000 steps, M updates per step, FPP with and
    without state update (§5: "for both larger mini-batch and number of updates FPP can get the error down to
    zero, whereas FPP without state updating cannot").

    ``paper``: p = 10 (as Fig. 4's CycleWorld), 4 units, buffer 1000, M ∈ {1, 2, 4, 8, 16}, 30 runs, the App. D lr
    grid; control: FPP with its gradient zeroed at M = 16. ``full`` (a REDUCED run, not the paper's grid: it fits
    a few CPU minutes): M ∈ {1, 16}, 3000 steps, 4 runs, lr 1e-2. ``ci``: p = 4, M ∈ {1, 4}, B = 4, 300 steps,
    8 runs, lr 3e-2, buffer 100. Cost of ``paper`` (measured per-update times on this 2-core machine, shared):
    about 1.5 s per step for the 180 batched runs x lrs summed over M (31 updates of B = 16), x 2 learners x
    50 000 steps: about 40 CPU core-hours; ``rnn-verify sweep fpp-fig7 --scale paper --split-lrs`` spreads it
    over a Dask cluster (66 cells).
    """
    _check_scale(scale)
    lrs: tuple[float, ...]
    Ms: tuple[int, ...]
    env: dict[str, Any] = {"hidden": 4, "p": 10}
    if scale == "paper":
        Ms, B, (steps, runs, lrs, buf) = (1, 2, 4, 8, 16), 16, (50_000, 30, APP_D_LRS, 1000)
    elif scale == "full":
        Ms, B, (steps, runs, lrs, buf) = (1, 16), 16, (3000, 4, (1e-2,), 1000)
    else:
        env, Ms, B, (steps, runs, lrs, buf) = {"hidden": 4, "p": 4}, (1, 4), 4, (300, 8, (3e-2,), 100)
    return _updates_reps(
        "Fig. 7 ",
        scale,
        seed,
        [("cycleworld", env, (1,))],
        [(M, B) for M in Ms],
        (steps, runs, lrs, buf),
        split_lrs=split_lrs,
    )


def _updates_reps(
    prefix: str, scale: str, seed: int, envs: list[tuple[str, dict[str, Any], tuple[int, ...]]],
    configs: list[tuple[int, int]], sizes: tuple[int, int, tuple[float, ...], int], *, split_lrs: bool,
) -> list[Reproduction]:  # fmt: skip
    """One :class:`Reproduction` per (environment, M, B): FPP and FPP without state update at each T of the
    environment; the zeroed-gradient control at the largest M of the smallest B and the environment's largest T."""
    steps, runs, lrs, buf = sizes
    B_min = min(B for _, B in configs)
    M_max = max(M for M, B in configs if B == B_min)
    base = (min(M for M, _ in configs), B_min)
    out = []
    for env, kw, Ts in envs:
        for M, B in configs:
            controls: tuple[tuple[str, str, int, str | None], ...] = ()
            if M == M_max and B == B_min:
                controls = ((f"FPP, gradient zeroed (fpp.learner-frozen), M = {M}, T = {max(Ts)}", "fpp", max(Ts),
                             "fpp.learner-frozen"),)  # fmt: skip
            methods = ("fpp",) if scale == "ci" and (M, B) == base and not prefix else ("fpp", "fpp-no-state-update")
            out.append(
                Reproduction(
                    f"{prefix}{env} M={M} B={B}", scale, env,
                    tuple((m, T) for m in methods for T in Ts), lrs, steps, runs, seed,
                    controls=controls,
                    common={**kw, "init": "glorot", "buffer_size": buf, "updates": M, "batch": B},
                    split_lrs=split_lrs,
                )
            )  # fmt: skip
    return out
