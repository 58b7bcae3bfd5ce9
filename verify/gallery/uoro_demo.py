r"""Gallery adapters for github.com/petered/uoro-demo @ 47817432f10d: a 2018 PyTorch UORO and RTRL.

The repository (no license file: imported from a checkout, never copied) has ``uoro_demo.uoro.UOROVec`` and
``uoro_demo.rtrl.RTRL``, both ``TrainableStatefulModule``\ s around a ``RecurrentStatelessModule`` -- here
``uoro_demo.predictor_funcs.StatelessPredictorRNN(d, n, k)``: ``torch.nn.RNN`` (tanh, biases ``b_ih`` and
``b_hh``) and a ``torch.nn.Linear`` readout. The toolkit's Elman-tanh cell is that network with ``b_hh`` held at
zero (frozen before the learner merges the parameters that require grad into its single vector ``theta``:
``[W_ih, W_hh, b_ih, V, c]``, reordered here to the toolkit's ``[W, U, b, V, c]``). Each step is ``train_it(x, y)``
(SGD, learning rate 0: θ stays frozen); ``theta.grad`` is the gradient it produced. On the toolkit's ``gru`` problems
the network is ``StatelessPredictorRNN(..., rnn_type='gru')``: ``torch.nn.GRU`` with ``b_hh`` zero is that cell
exactly (gates r, z, n in both; ``n = tanh(U_n x + b_n + r * (W_n h + b_hn))`` with ``b_hn = 0``).

**2018 PyTorch on torch 2.13**: the repository's own code runs (``Variable``, ``MergedVariable``'s ``__class__``
assignment, ``grad``, ``torch.tensor(t.data)`` only warn). What breaks is its dependency *artemis* (the
requirement is ``git+https://github.com/QUVA-Lab/artemis``, unpinned; PyPI's ``artemis-ml`` 2.0.0 lacks
``artemis.ml.tools.running_averages``): a checkout of QUVA-Lab/artemis at e1700ca (7 Dec 2018, the day of
uoro-demo's commit) imports only with ``six``, ``si_prefix`` and ``decorator`` installed, and its
``artemis/general/nested_structures.py`` line 2 (``from collections import OrderedDict, Iterable``) raises
``ImportError: cannot import name 'Iterable' from 'collections'`` on Python >= 3.10 (the ABC aliases were removed).
The adapters restore those aliases (``collections.Iterable = collections.abc.Iterable`` ...) before importing;
without artemis on the path the rows are SKIPPED with that reason.

Interventions, stated: the loss is the problem's (``loss=`` takes a callable; the repository's ``'mse'`` is
``MSELoss``, a mean, where the toolkit's is ½‖·‖²); s_0 is the claims' (``_state`` / ``state``); within a step float64
is the default dtype (the learners build s̃, θ̃, ν and ∂s/∂θ with it); in ``UOROVec`` its one ``torch.rand`` call --
ν = round(rand) * 2 - 1 -- is answered with (ν + 1)/2, ν from ``ctx.noise()`` (the noise hook).

Reproduce a row::

    RNN_VERIFY_GALLERY_UORO_DEMO=~/src/uoro-demo PYTHONPATH=~/src/artemis rnn-verify run \
        --impl uoro=verify.gallery.uoro_demo:uoro --impl-only
"""

from __future__ import annotations

import collections
import collections.abc
import importlib
import sys
from functools import partial
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from verify.gallery import Entry, Repository, checkout_path
from verify.impl.adapters import Batch1, Context, problem_kind

_REQUIRES = ("artemis", "six", "si_prefix", "decorator")

REPO = Repository(
    name="uoro-demo",
    url="petered/uoro-demo",
    commit="47817432f10d21350b4cbb30a31589d10a2936e6",
    license="none stated (no license file)",
    language="torch",
    marker=("uoro_demo/uoro.py",),
    entries=(
        Entry(
            "UOROVec",
            "uoro",
            "uoro",
            claims=("uoro.exact-expectation", "uoro.algorithm-1-conformance"),
            requires=_REQUIRES,
            note=(
                "needs QUVA-Lab/artemis @ e1700ca on PYTHONPATH (PyPI's artemis-ml 2.0.0 lacks "
                "artemis.ml.tools.running_averages) and six, si-prefix, decorator; Elman-tanh and GRU (torch.nn.GRU "
                "with b_hh = 0 is the toolkit's gru); left out: rank/block claims, the variance claims and "
                "uoro.unbiased-statistical (hours through a batch-1 torch object)"
            ),
            glue_why=(
                "its parameter order (W_ih before W_hh), the collections aliases Python 3.10 removed (artemis "
                "imports them), float64 and the torch.rand routing of nu"
            ),
            truth=(
                "the same adapter PASSes on the stand-in (exact forwarddiff); the misses scale with its "
                "epsilon_perturbation as a finite difference's do"
            ),
            findings=(
                "forwarddiff by a finite difference (uoro_demo/uoro.py l. 73-75, epsilon = 1e-7): E g~ misses RTRL "
                "by 3.2e-12 in float64 and g~ is 1.5e-8 (Elman-tanh) / 2.7e-8 (GRU) off Algorithm 1",
                "rho_0, rho_1 are not Algorithm 1's (uoro_demo/uoro.py l. 82-83: epsilon inside the square root, "
                "no trailing + epsilon): unbiased still (any positive rho is), another variance",
            ),
        ),
        Entry(
            "RTRL",
            "rtrl",
            "rtrl",
            claims=("rtrl.exact",),
            requires=_REQUIRES,
            note="Elman-tanh and GRU; rtrl.online-convergence left out (minutes online through batch-1 torch)",
            glue_why="the learner set-up it shares with UOROVec (parameter order, collections aliases, float64)",
            truth="float64 reverse-mode influence matrices and per-step BPTT gradients of the toolkit: 1.5e-16 apart",
        ),
    ),
    cite='Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043',
)


_LOSSES, _CELLS = ("squared-error", "softmax-cross-entropy"), ("elman-tanh", "gru")


def _learner(module: str, cls: str, state: str, ctx: Context) -> Any:
    """``uoro_demo.<module>.<cls>`` around a ``StatelessPredictorRNN`` (``elman`` or ``gru``) set to θ (float64,
    ``b_hh`` zero and frozen: then ``torch.nn.GRU`` is the toolkit's ``gru`` cell, gates r, z, n in both),
    the problem's loss, SGD at learning rate 0 and s_0 in its attribute ``state``; ``gallery_order`` maps its
    ``theta`` ([W_ih, W_hh, b_ih, V, c]) to θ's layout. Returns (learner, ctx): the object the steps get."""
    root = str(checkout_path(REPO))
    sys.path[:0] = [] if root in sys.path else [root]
    for name in ("Iterable", "Mapping", "MutableMapping", "Sequence", "Callable"):  # removed in Python 3.10
        setattr(collections, name, getattr(collections, name, getattr(collections.abc, name)))
    mod, pf = importlib.import_module(f"uoro_demo.{module}"), importlib.import_module("uoro_demo.predictor_funcs")
    p, n = ctx.params, ctx.s0.size
    d, k, a, w = p["U"].shape[1], p["c"].size, p["U"].size, p["W"].size
    net = pf.StatelessPredictorRNN(d, n, k, rnn_type="gru" if problem_kind(ctx.problem) == "gru" else "elman")
    net.rnn.bias_hh_l0.requires_grad_(False).data = torch.zeros(net.rnn.bias_hh_l0.shape, dtype=torch.float64)
    mine = (net.rnn.weight_ih_l0, net.rnn.weight_hh_l0, net.rnn.bias_ih_l0, *net.output_layer.parameters())
    for q, v in zip(mine, "UWbVc", strict=True):
        q.data = torch.as_tensor(p[v]).clone()
    sgd = importlib.import_module("uoro_demo.torch_utils.training").get_named_torch_optimizer_factory("sgd", 0.0)
    learner = getattr(mod, cls)(net, loss=lambda o, y: ctx.problem.loss.pointwise(o, y).sum(), optimizer_factory=sgd)
    setattr(learner, state, torch.as_tensor(ctx.s0).view(1, 1, -1))
    learner.gallery_order = np.r_[a : a + w, 0:a, a + w : learner.theta.numel()]
    return learner, ctx


def _step(obj: Any, x: np.ndarray, y: np.ndarray) -> Any:
    """``train_it(x, y)`` with float64 as the default dtype and its ``torch.rand`` answered from ``ctx.noise()``;
    ``theta.grad`` in θ's layout."""
    learner, ctx = obj

    class Signs(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is torch.rand:
                return torch.as_tensor((ctx.noise() + 1.0) / 2.0).reshape(args)
            return func(*args, **(kwargs or {}))

    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Signs():
            learner.train_it(torch.as_tensor(x).view(1, -1), torch.as_tensor(y).view(1, -1))
    finally:
        torch.set_default_dtype(dtype)
    return learner.theta.grad.detach().numpy()[learner.gallery_order]


def uoro() -> Batch1:
    """``UOROVec``: g̃ from the factors before the update (``gtilde="pre"``), ν through the noise hook."""
    make = partial(_learner, "uoro", "UOROVec", "_state")
    return Batch1(make, _step, cells=_CELLS, losses=_LOSSES, noise_hook=True, gtilde="pre", name="uoro-demo UOROVec")


def rtrl() -> Batch1:
    """``RTRL``: its ``dstate_dtheta`` (∂s_t/∂θ after the step) is the influence estimate."""
    make = partial(_learner, "rtrl", "RTRL", "state")

    def influence(obj: Any) -> Any:
        return obj[0].dstate_dtheta.detach().numpy()[:, obj[0].gallery_order]

    return Batch1(make, _step, cells=_CELLS, losses=_LOSSES, influence=influence, name="uoro-demo RTRL")
