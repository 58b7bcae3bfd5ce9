r"""A public numpy KF-RTRL through the batch-1 adapter: the ``KF_RTRL`` of omarschall/vanilla-rtrl (Marschall,
Cho & Savin 2020, "A unified framework of online learning algorithms for training recurrent neural networks",
JMLR 21(135), arXiv:1907.02649), which implements KF-RTRL of Mujika, Meier & Steger 2018 ("Approximating
Real-Time Recurrent Learning with Random Kronecker Factors", arXiv:1805.10842, §4).

The library is *not* installed or vendored here (its repository has no license file: it is read, not copied).
Give the path of a checkout (``path=`` or the environment variable ``RNN_VERIFY_VANILLA_RTRL``); the adapter
imports ``core.RNN``, ``functions`` and ``learning_algorithms.KF_RTRL`` from it and drives them exactly as the
library's ``Simulation`` does at each step: ``rnn.next_state(x)``, ``rnn.z_out()``, ``rnn.error = loss'(z, y)``,
``alg.update_learning_vars()``, ``grads = alg()`` (so g̃ is formed from the *updated* factors: ``gtilde="post"``).

The library's network is :math:`a_t = (1-\alpha)a_{t-1} + \alpha\tanh(W_{rec}a_{t-1} + W_{in}x_t + b_{rec})`,
:math:`z_t = W_{out}a_t + b_{out}`, loss :math:`\tfrac12\|z_t - y_t\|^2` (its ``mean_squared_error`` has the
derivative :math:`z - y`); with :math:`\alpha = 1` it is the toolkit's Elman-tanh problem with :math:`s = a`.
Its KF-RTRL keeps :math:`\partial a_t/\partial[W_{rec}, W_{in}, b_{rec}] \approx \tilde A_t \otimes \tilde B_t`
and updates (its docstring, eqs. 1-4) :math:`\tilde A' = \nu_0 p_0\tilde A + \nu_1 p_1\hat a`,
:math:`\tilde B' = \nu_0 p_0^{-1} J\tilde B + \nu_1 p_1^{-1} D` with :math:`\nu` two random signs per step.
It starts :math:`\tilde A_0, \tilde B_0` at standard-normal draws (to avoid 0/0 in :math:`p_0`), so:

* :data:`VanillaKFRTRL` -- a fresh random start per sample (from the toolkit's generator): the estimate is
  unbiased *over the random start* (the start term :math:`\tilde A_0\otimes\tilde B_0` has mean zero), and the
  UORO unbiasedness claims PASS;
* :data:`VanillaKFRTRLFixedStart` -- one start drawn once and shared by every sample (what one run of the library
  is): conditioned on it the estimate carries the propagated start term, biased, and the unbiasedness claims FAIL.

Randomness: the two signs ν are drawn with the library's own law ('discrete': ±1) but from the sample's
generator (``ctx.rng``) instead of numpy's global one, and the global state the library's ``RNN.__init__``
touches is restored, so a run is reproducible. No noise hook (ν has 2 values, not n): the claims on tabulated
noise are SKIPPED with that reason. Use::

    export RNN_VERIFY_VANILLA_RTRL=/path/to/vanilla-rtrl
    rnn-verify run --impl uoro=verify.examples.vanilla_rtrl_adapter:VanillaKFRTRL --impl-only
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from verify.errors import InvalidArgument
from verify.impl.adapters import Batch1, Context

__all__ = ["ENV", "VanillaKFRTRL", "VanillaKFRTRLFixedStart", "kfrtrl", "load_library", "vanilla_rtrl_path"]

ENV = "RNN_VERIFY_VANILLA_RTRL"  #: the environment variable naming the checkout
_NEEDS = ("core/RNN.py", "functions/tanh.py", "learning_algorithms/KF_RTRL.py")
_NAMES = {"W_rec": "W", "W_in": "U", "b_rec": "b", "W_out": "V", "b_out": "c"}  # the library's -> the toolkit's
_ORDER = ("W_rec", "W_in", "b_rec", "W_out", "b_out")  # the order of the library's grads list


def vanilla_rtrl_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The checkout's root: ``path``, else ``$RNN_VERIFY_VANILLA_RTRL``; :class:`InvalidArgument` naming which
    one and its value when it is unset, missing or not a vanilla-rtrl checkout."""
    argument = "path" if path is not None else ENV
    value = path if path is not None else os.environ.get(ENV)
    if value is None or str(value) == "":
        raise InvalidArgument(argument, "unset", "the path of a checkout of github.com/omarschall/vanilla-rtrl")
    root = Path(value).expanduser()
    if not root.is_dir():
        raise InvalidArgument(argument, str(value), "an existing directory (a checkout of omarschall/vanilla-rtrl)")
    missing = [f for f in _NEEDS if not (root / f).is_file()]
    if missing:
        raise InvalidArgument(
            argument, str(value), f"a checkout of omarschall/vanilla-rtrl (it has no {', '.join(missing)})"
        )
    return root.resolve()


def load_library(path: str | os.PathLike[str] | None = None) -> SimpleNamespace:
    """``RNN``, ``KF_RTRL``, ``tanh``, ``identity``, ``mean_squared_error`` imported from the checkout.

    The library imports its packages by top-level names (``core``, ``functions``, ``utils``,
    ``learning_algorithms``); the checkout goes first on ``sys.path``, and a same-named module already imported
    from elsewhere is an error (never a silent mix of two libraries)."""
    root = vanilla_rtrl_path(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mods = {}
    for name in ("core", "functions", "utils", "learning_algorithms"):
        # the library's docstrings have invalid escapes ('\\p'): a warning, an error under -W error
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            mod = importlib.import_module(name)
        where = Path(getattr(mod, "__file__", "") or "").resolve()
        if root not in where.parents:
            raise InvalidArgument(
                "path" if path is not None else ENV,
                str(root),
                f"the only module named {name!r} in this process; {name!r} is already imported from {where}",
            )
        mods[name] = mod
    kf = importlib.import_module("learning_algorithms.KF_RTRL")
    fn = mods["functions"]
    return SimpleNamespace(
        RNN=mods["core"].RNN,
        KF_RTRL=kf.KF_RTRL,
        tanh=fn.tanh,
        identity=fn.identity,
        mean_squared_error=fn.mean_squared_error,
        root=root,
    )


class _Run:
    """One sample: the library's RNN (alpha = 1) and its KF_RTRL, stepped as its Simulation does."""

    def __init__(self, lib: SimpleNamespace, ctx: Context, start: tuple[np.ndarray, np.ndarray]) -> None:
        p = ctx.params
        saved = np.random.get_state()  # noqa: NPY002 -- RNN.__init__ draws a random reset from numpy's global generator
        try:
            self.rnn = lib.RNN(
                p["W_in"], p["W_rec"], p["W_out"], p["b_rec"], p["b_out"],
                activation=lib.tanh, alpha=1, output=lib.identity, loss=lib.mean_squared_error,
            )  # fmt: skip
        finally:
            np.random.set_state(saved)  # noqa: NPY002 -- the library uses the global generator
        self.rnn.reset_network(h=np.zeros_like(ctx.s0), a=ctx.s0.copy())
        self.alg = lib.KF_RTRL(self.rnn, A=start[0].copy(), B=start[1].copy())
        self.alg.sample_nu = lambda: ctx.rng.choice(np.array([-1.0, 1.0]), 2)  # the library's law, ctx's generator
        self.shapes = {k: np.shape(v) for k, v in p.items()}

    def step(self, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        rnn = self.rnn
        rnn.next_state(x)
        rnn.z_out()
        rnn.y = y
        rnn.error = rnn.loss.f_prime(rnn.z, y)
        self.alg.update_learning_vars()
        grads = self.alg()  # [W_rec, W_in, b_rec, W_out, b_out], squeezed
        return {k: np.reshape(g, self.shapes[k]) for k, g in zip(_ORDER, grads, strict=True)}


def kfrtrl(path: str | os.PathLike[str] | None = None, *, fixed_start: bool = False) -> Batch1:
    """The library's KF-RTRL as a toolkit estimator (UORO family: unbiased online estimate of ∇ℓ_t).

    ``fixed_start=False``: Ã₀, B̃₀ drawn per sample from its generator (unbiased over the start);
    ``fixed_start=True``: one draw (seed 0) shared by every sample (biased given the start)."""
    lib = load_library(path)

    def make(ctx: Context) -> _Run:
        n, m = ctx.s0.size, ctx.s0.size + ctx.params["W_in"].shape[1] + 1
        rng = np.random.default_rng(0) if fixed_start else ctx.rng
        start = (rng.normal(0.0, 1.0, m), rng.normal(0.0, 1.0, (n, n)))
        return _Run(lib, ctx, start)

    return Batch1(
        make,
        names=_NAMES,
        cells=("elman-tanh",),
        state=lambda run: run.rnn.a,
        gtilde="post",
        name="vanilla-rtrl KF_RTRL" + (" (fixed start)" if fixed_start else ""),
    )


def VanillaKFRTRL() -> Any:
    """``kfrtrl()`` with the checkout from ``$RNN_VERIFY_VANILLA_RTRL``: a random start per sample."""
    return kfrtrl()


def VanillaKFRTRLFixedStart() -> Any:
    """``kfrtrl(fixed_start=True)`` with the checkout from ``$RNN_VERIFY_VANILLA_RTRL``."""
    return kfrtrl(fixed_start=True)
