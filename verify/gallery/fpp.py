r"""Gallery adapters for github.com/VincentLiu3/fpp @ c8df3b4825da: the FPP paper's official PyTorch code.

The repository (no license file: imported from a checkout, never copied) has three online learners on one model,
``model.torch_rnn.SimpleRNN`` -- ``torch.nn.RNN`` (tanh, biases ``b_ih`` and ``b_hh``) and a ``torch.nn.Linear``
readout: ``model.torch_fpp.FPPModel`` (FPP, with ``model.torch_buffer.ReplayBuffer``), ``model.torch_tbptt.TBPTTModel``
(T-BPTT) and ``model.torch_uoro.UOROModel`` (UORO). Its ``SimpleLSTM`` (a ``torch.nn.GRU``) is used by none of them.
The toolkit's Elman-tanh cell is ``SimpleRNN`` with ``b_hh`` held at zero (frozen, so that it is not a parameter):
``W = weight_hh``, ``U = weight_ih``, ``b = bias_ih``, ``V, c`` = the readout's weight and bias.

Each adapter drives the public classes as ``main_torch.py`` does, in float64, with these stated interventions:

* ``criterion``: the models hard-code ``CrossEntropyLoss``; on a squared-error problem the adapter sets the model's
  ``criterion`` attribute to the problem's loss (the loss belongs to the problem, not to the algorithm);
* ``_state``: the models start from zeros (``initialize_state``); the claims give s_0, written to ``_state``;
* learning rates: 0 where θ must stay frozen (T-BPTT, UORO: the toolkit sets θ between steps), 1 in ``FPPModel``
  so that its returned ``s - lr * grad`` gives the state gradients;
* within a UORO step float64 is torch's default dtype (``UOROModel`` builds s̃, θ̃ and ν with it).

Entries (``--impl TARGET=verify.gallery.fpp:NAME``):

* ``fpp`` -- eq. (7) through ``FPPModel.train`` on one buffer item (its loss
  ``CE(ŷ_i) + reg_lambda * MSE(s_i, ŝ_i)``: the paper's λ/2‖·‖² is ``reg_lambda`` times a *mean* over the k state
  units, so ``reg_lambda = λ k / 2``);
* ``sampler`` -- the index of FPP's sample through ``ReplayBuffer.sample_successive`` (§4.1's k ~ uniform{T..n});
* ``tbptt`` -- ``TBPTTModel`` with ``overlap=True``: the gradient of ℓ_t through the buffer's last k transitions;
* ``uoro`` -- ``UOROModel.forward``: g̃ from the factors *before* the update (Algorithm 1, ``gtilde="pre"``); its
  ν = ``round(torch.rand(...)) * 2 - 1`` is routed through ``ctx.noise`` by answering that ``torch.rand`` call
  with (ν + 1)/2 (a ``TorchFunctionMode``): the noise hook.

Reproduce a row::

    RNN_VERIFY_GALLERY_FPP=~/src/fpp rnn-verify run --impl uoro=verify.gallery.fpp:uoro --impl-only
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from verify.errors import NotApplicable
from verify.gallery import Entry, Repository, checkout_path
from verify.impl.adapters import Batch1, Context, problem_kind

REPO = Repository(
    name="fpp",
    url="VincentLiu3/fpp",
    commit="c8df3b4825dadcf0629ceecfb4f6dfc903b81e92",
    license="none stated (no license file)",
    language="torch",
    marker=("model/torch_fpp.py",),
    entries=(
        Entry(
            "FPPModel (eq. 7)",
            "fpp",
            "fpp",
            claims=("fpp.gradient-eq7",),
            note=(
                "Elman-tanh only (its SimpleRNN): the suite's other cells are left out with that reason. Its loss is "
                "CE + reg_lambda * MSE: reg_lambda = 1 is the paper's lambda = 2/k (MSE averages over the k units); "
                "fpp.stationarity left out (minutes through FPPModel.train per sample)"
            ),
            glue_why=(
                "the FPP checks vmap over samples and FPPModel.train is imperative (backward, an optimizer step): "
                "the adapter is a torch.autograd.Function whose vmap rule loops over the rows (18 lines)"
            ),
            truth="eq. (7) of the toolkit on the same problems, and autograd of L_i (eq. (6)): 3.4e-16 apart",
            findings=(
                "reg_lambda is not the paper's lambda: the penalty is reg_lambda * MSE, a mean over the k state "
                "units, so reg_lambda = 1 is lambda = 2/k (0.5 in CycleWorld, 1/16 in Stochastic World); with "
                "reg_lambda = lambda k / 2 its gradients equal eq. (7) to 3.4e-16 (a difference from the paper, not "
                "a bug)",
            ),
        ),
        Entry(
            "ReplayBuffer.sample_successive",
            "fpp.sampler",
            "sampler",
            claims=("fpp.lemma3-unbiased",),
            note="eq. (7) is the toolkit's here: the row judges the repository's sampling of the index alone",
            truth=(
                "2000 draws from a buffer of n = 8 with T = 2: count 0 at i = 8, ~330 at each of 2..7; the "
                "stand-in's inclusive sampler PASSes the same claim, its exclusive-bound variant FAILs"
            ),
            findings=(
                "the buffer never samples the newest transition: model/torch_buffer.py l. 87 "
                "np.random.randint(T - 1, len - 1) excludes its upper bound, so k ~ uniform{T..n} (Lemma 3, "
                "both ends included) never draws k = n (chi-square p 2.2e-60; support {T..n-1})",
                "two copies of every state, updated independently (main_torch.py l. 181-182: replace_old writes "
                "the start copy, replace_new the end copy): the s_i a window's penalty moves is never the s_i a "
                "later window starts from (not judged by a claim: its online loop is a __main__ block; "
                "reports/gallery-notes/repro/fpp_buffer_copies.py)",
            ),
        ),
        Entry(
            "TBPTTModel (overlap)",
            "truncation.tbptt",
            "tbptt",
            claims=("rtrl.truncated-bptt",),
            note=(
                "Elman-tanh only (its SimpleRNN): the suite's other cells are left out with that reason; "
                "overlap=True only (overlap=False sums a block's losses every T steps: not a per-step estimator); "
                "the truncation-bound claims judge truncation.tbptt_gradient on the toolkit's systems, not this part"
            ),
            truth="the toolkit's offline truncated BPTT per step (float64 references): 1.5e-16 apart",
        ),
        Entry(
            "UOROModel",
            "uoro",
            "uoro",
            claims=("uoro.exact-expectation", "uoro.algorithm-1-conformance"),
            note=(
                "g~ formed before the update (Algorithm 1); its nu routed through the toolkit's noise hook; left "
                "out: rank/block claims (no rank or block), the variance claims and uoro.unbiased-statistical "
                "(~2e5 draws x 16 steps through a batch-1 torch object: hours)"
            ),
            glue_why=(
                "12 lines route its torch.rand call through the noise hook and build its s~, theta~ in float64 "
                "(the repository runs in float32)"
            ),
            truth=(
                "the same adapter PASSes on the stand-in, whose forwarddiff is exact; the misses move with "
                "epsilon_perturbation as a finite difference's do (exact expectation 2.3e-12 at 1e-7, 6.1e-14 at "
                "1e-5, 6.6e-10 at 1e-3)"
            ),
            findings=(
                "forwarddiff by a finite difference (model/torch_uoro.py l. 118-120, epsilon = 1e-7) where "
                "Algorithm 1's is the exact tangent: in float64 E g~ misses RTRL by 2.3e-12 (budget 1.9e-14) and g~ "
                "is 7.7e-9 off Algorithm 1; in float32, the repository's dtype, the difference is mostly rounding "
                "(median relative error 0.65 against the exact tangent: "
                "reports/gallery-notes/repro/uoro_fd_float32.py)",
            ),
        ),
    ),
    cite=(
        "the FPP paper's official code: Anonymous authors, 'Training Recurrent Neural Networks Online by "
        "Learning Explicit State Variables' (paper under double-blind review)"
    ),
)


_LOSSES = ("squared-error", "softmax-cross-entropy")


def _load(name: str) -> Any:
    """``model.<name>`` from the checkout (the repository's modules import each other relatively)."""
    root = str(checkout_path(REPO))
    sys.path[:0] = [] if root in sys.path else [root]
    return importlib.import_module(f"model.{name}")


def _setup(m: Any, p: Any, s0: Any, problem: Any) -> Any:
    """``m``'s SimpleRNN set to θ (``p`` in the toolkit's names: W, U, b, V, c) in float64 with ``bias_hh`` zero
    and frozen, ``_state`` = s_0, and on a squared-error problem ``criterion`` = the problem's loss; the
    parameters in θ's order are ``m.gallery_theta`` (their ``.grad`` is the gradient, in θ's layout)."""
    rnn, out = m.rnn_model.rnn_layer, m.rnn_model.output_layer
    rnn.bias_hh_l0.requires_grad_(False).data = torch.zeros(rnn.hidden_size, dtype=torch.float64)
    m.gallery_theta = (rnn.weight_hh_l0, rnn.weight_ih_l0, rnn.bias_ih_l0, out.weight, out.bias)
    for q, name in zip(m.gallery_theta, "WUbVc", strict=True):
        q.data = torch.as_tensor(p[name]).clone()
    m._state = torch.as_tensor(s0, dtype=torch.float64).reshape(1, 1, -1)
    if problem.loss.name == "squared-error":
        m.criterion = lambda o, y: problem.loss.pointwise(o, y).sum()
    return m


def fpp(
    problem: Any, T: int, lam: float, theta: Any, s_start: Any, s_end: Any, window: Any, target: Any, w: Any
) -> Any:
    """Eq. (7) by ``FPPModel.train`` on each buffer item (one call per row b, weighted by ``w_b``; lr = 1, so the
    returned ``s - lr * grad`` gives the state gradients): a ``torch.autograd.Function`` whose vmap rule loops
    over the rows (the FPP checks vmap over samples). ``reg_lambda = λ k / 2`` (its MSE averages over k units)."""
    if problem_kind(problem) != "elman-tanh":
        raise NotApplicable(
            "fpp FPPModel", f"its SimpleRNN is an Elman-tanh network; this problem is {problem_kind(problem)}"
        )
    FPPModel, (n, d, k) = _load("torch_fpp").FPPModel, (problem.n, window.shape[-1], target.shape[-1])

    class Eq7(torch.autograd.Function):
        @staticmethod
        def forward(th: Any, s: Any, e: Any, win: Any, y: Any, wb: Any) -> Any:
            params = {key[-1]: v for key, v in problem.layout.unflatten(th).items()}
            out = []
            for b in range(s.shape[0]):
                m = _setup(FPPModel(d, n, k, 1.0, True, 1, T, lam * n / 2, "cpu"), params, s[b], problem)
                with torch.enable_grad():
                    _, s_new, e_new = m.train(
                        win[b][:, None], s[b].view(1, 1, -1), e[b].view(1, 1, -1), y[b][None, None]
                    )
                g = torch.cat([q.grad.reshape(-1) for q in m.gallery_theta])
                out.append((wb[b] * g, wb[b] * (s[b] - s_new.view(-1)), wb[b] * (e[b] - e_new.view(-1))))
            return sum(o[0] for o in out), torch.stack([o[1] for o in out]), torch.stack([o[2] for o in out])

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            pass

        @staticmethod
        def vmap(info: Any, dims: Any, *a: Any) -> Any:
            rows = [
                Eq7.apply(*[x if dm is None else x.select(dm, i) for x, dm in zip(a, dims, strict=True)])  # type: ignore[no-untyped-call]
                for i in range(info.batch_size)
            ]
            return tuple(torch.stack(r) for r in zip(*rows, strict=True)), (0, 0, 0)

    return Eq7.apply(theta, s_start, s_end, window, target, w)  # type: ignore[no-untyped-call]


def sampler(n: int, T: int, size: Any, generator: torch.Generator) -> torch.Tensor:
    """The index i of each sample ``ReplayBuffer.sample_successive(T)`` draws from a buffer of n transitions
    (storage j holds transition j + 1; i is the window's last item), numpy's global generator (which the
    repository samples with) seeded from ``generator`` and restored after."""
    buffer, saved = _load("torch_buffer").ReplayBuffer(n), np.random.get_state()  # noqa: NPY002
    for _ in range(n):
        buffer.add((torch.zeros(1),) * 4)
    np.random.seed(int(torch.randint(0, 2**31, (), generator=generator)))  # noqa: NPY002
    try:
        return torch.tensor([buffer.sample_successive(T)[4][-1] + 1 for _ in range(int(np.prod(size)))]).reshape(size)
    finally:
        np.random.set_state(saved)  # noqa: NPY002


def tbptt(k: int) -> Batch1:
    """``TBPTTModel`` (overlap, lr = 0) with a ``ReplayBuffer(k)``: per step ``forward``, ``add``,
    ``train(*sample_all())``; the gradient is the parameters' ``.grad``."""
    lib, Buffer = _load("torch_tbptt"), _load("torch_buffer").ReplayBuffer

    def make(ctx: Context) -> Any:
        (n, d), m = ctx.params["U"].shape, ctx.params["c"].size
        model = lib.TBPTTModel(d, n, m, 0.0, False, 1, k, True, "cpu")
        return _setup(model, ctx.params, ctx.s0, ctx.problem), Buffer(k)

    def step(obj: Any, x: np.ndarray, y: np.ndarray) -> Any:
        (model, buffer), x3, y2 = obj, torch.as_tensor(x).view(1, 1, -1), torch.as_tensor(y).view(1, -1)
        buffer.add((x3, *model.forward(x3, y2)[2:], y2))
        model.train(*buffer.sample_all()[:4])
        return torch.cat([q.grad.reshape(-1) for q in model.gallery_theta]).numpy()

    return Batch1(make, step, losses=_LOSSES, name="fpp TBPTTModel")


def uoro() -> Batch1:
    """``UOROModel`` (SGD, lr = 0): ``forward(x, y)`` per step, whose ``.grad`` is g̃; within the step float64 is
    the default dtype (it builds s̃, θ̃ and ν with it) and its one ``torch.rand`` call -- ν = round(rand) * 2 - 1
    -- is answered with (ν + 1)/2, ν from ``ctx.noise()`` (the noise hook)."""
    lib = _load("torch_uoro")

    def make(ctx: Context) -> Any:
        (n, d), m = ctx.params["U"].shape, ctx.params["c"].size
        model = _setup(lib.UOROModel(d, n, m, 0.0, "cpu", "SGD"), ctx.params, ctx.s0, ctx.problem)
        model.nn_param = lib.Param2Vec(model.rnn_model)  # built again without the frozen bias_hh
        return model, ctx

    def step(obj: Any, x: np.ndarray, y: np.ndarray) -> Any:
        class Signs(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                if func is torch.rand:
                    return torch.as_tensor((obj[1].noise() + 1.0) / 2.0).reshape(args)
                return func(*args, **(kwargs or {}))

        dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            with Signs():
                obj[0].forward(torch.as_tensor(x).view(1, 1, -1), torch.as_tensor(y).view(1, -1))
        finally:
            torch.set_default_dtype(dtype)
        return torch.cat([q.grad.reshape(-1) for q in obj[0].gallery_theta]).numpy()

    return Batch1(make, step, losses=_LOSSES, noise_hook=True, gtilde="pre", name="fpp UOROModel")
