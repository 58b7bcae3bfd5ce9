"""Shared fixtures of the estimator tests: the estimators under the contract and small problems."""

from __future__ import annotations

import torch

from verify.estimators import RTRL, TBPTT, UORO, PreactivationUORO, TruncatedModel
from verify.estimators.kfrtrl import KFRTRL
from verify.estimators.local import RFLO, EProp
from verify.estimators.ok import OK
from verify.estimators.snap import SnAp
from verify.testing.strategies import random_problem

#: every estimator of the toolkit, with the cells it supports (None = all)
ESTIMATORS = [
    (RTRL(), None),
    (TBPTT(1), None),
    (TBPTT(3), None),
    (TruncatedModel(2), None),
    (UORO(), None),
    (UORO(rank=2), None),
    (UORO(block=2), None),
    (UORO(block=3, rank=2), None),
    (PreactivationUORO(), ("elman-tanh", "elman-relu")),
    (PreactivationUORO(rank=3), ("elman-tanh", "elman-relu")),
    (KFRTRL(), ("elman-tanh", "elman-relu")),
    (OK(), ("elman-tanh", "elman-relu")),
    (OK(rank=2), ("elman-tanh", "elman-relu")),
    (SnAp(1), ("elman-tanh", "elman-relu", "linear", "gru", "lstm")),
    (SnAp(2), ("elman-tanh", "elman-relu", "linear", "gru", "lstm")),
    (RFLO(), ("elman-tanh", "elman-relu", "linear")),
    (EProp(), ("elman-tanh", "elman-relu", "linear")),
]


def small_problem(kind: str = "elman-tanh", batch: tuple[int, ...] = (), T: int = 5, seed: int = 0, **kw):
    gen = torch.Generator().manual_seed(seed)
    return random_problem(kind, n=kw.pop("n", 3), d=kw.pop("d", 2), T=T, k=2, batch=batch, generator=gen, **kw)
