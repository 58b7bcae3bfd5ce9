"""Public builders refuse bad sizes, shapes, absurd memory and NaN/inf scalars (issue 12, case 6).

Every refusal is an :class:`~verify.errors.InvalidArgument` that names the argument the
caller spelled and its value -- never a raw RuntimeError from torch, never a silent NaN.
"""

from __future__ import annotations

import math

import pytest
import torch

from verify import _validate
from verify.errors import InvalidArgument
from verify.fpp.envs import cycle_world, stochastic_world
from verify.model.builders import problem_nbytes
from verify.model.cells import ElmanCell
from verify.testing.strategies import (
    clip_spectral_norm,
    contractive_problem,
    contractive_problems,
    influence_balancing_problem,
    problems,
    random_problem,
)

NAN, INF = float("nan"), float("inf")


def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def refused(argument: str, fn, *args, **kwargs) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as info:
        fn(*args, **kwargs)
    assert info.value.argument == argument, str(info.value)
    assert f"{argument}=" in str(info.value)
    return info.value


# ------------------------------------------------------------ random_problem
@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"T": -3}, "T"),
        ({"T": 0}, "T"),  # named T, not 'inputs'
        ({"T": 2.0}, "T"),
        ({"n": 0}, "n"),
        ({"n": -1}, "n"),
        ({"d": -1}, "d"),
        ({"k": 0}, "k"),
        ({"batch": (-1,)}, "batch"),
        ({"batch": (2, 0)}, "batch"),
        ({"batch": 3}, "batch"),
        ({"scale": NAN}, "scale"),
        ({"scale": INF}, "scale"),
        ({"scale": -INF}, "scale"),
        ({"scale": -0.5}, "scale"),
        ({"scale": "big"}, "scale"),
        ({"dtype": torch.int64}, "dtype"),
        ({"loss": "hinge"}, "loss"),
        ({"loss": "cross-entropy", "k": 1}, "k"),
    ],
)
def test_random_problem_refuses(kwargs, argument):
    err = refused(argument, random_problem, "elman-tanh", generator=gen(), **kwargs)
    assert repr(kwargs[argument])[:20] in str(err) or argument == "k"


def test_random_problem_refuses_a_non_generator():
    refused("generator", random_problem, "gru", generator=0)


def test_huge_state_refused_before_allocating_with_the_estimate():
    err = refused("n", random_problem, "elman-tanh", n=10**6, generator=gen())
    msg = str(err)
    assert "n=1000000" in msg
    assert "TiB" in msg and "estimated before allocating" in msg  # ~22 TiB: the estimate is in the message
    assert "available memory" in msg


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"T": 10**11}, "T"), ({"batch": (10**5, 10**5)}, "batch"), ({"n": 3 * 10**5, "kind": "lstm"}, "n")],
)
def test_absurd_sizes_name_the_argument_that_drives_them(kwargs, argument):
    kind = kwargs.pop("kind", "linear")
    refused(argument, random_problem, kind, generator=gen(), **kwargs)


def test_memory_cap_is_a_fraction_of_available_memory(monkeypatch):
    """The cap follows MemAvailable: a problem that fits is built, the same one on a tiny machine is refused."""
    params, data = problem_nbytes(ElmanCell(64, 3), 2, 50, ())
    need = params + data
    monkeypatch.setattr(_validate, "available_memory_bytes", lambda: int(2.5 * need))
    random_problem("elman-tanh", n=64, T=50, generator=gen())  # 2.5x the need: within the 50% share
    monkeypatch.setattr(_validate, "available_memory_bytes", lambda: int(1.5 * need))
    err = refused("n", random_problem, "elman-tanh", n=64, T=50, generator=gen())
    assert "50%" in str(err)


def test_valid_builds_still_work():
    P, theta = random_problem("lstm", n=3, d=2, T=4, batch=(2,), scale=0.0, generator=gen())
    assert P.batch_shape == (2,) and bool(torch.isfinite(theta).all())
    P, theta = random_problem("gru", n=2, T=1, batch=[1, 2], generator=gen())
    assert P.T == 1


def test_init_theta_refuses_nan_scale():
    P, _ = random_problem("elman-relu", generator=gen())
    refused("scale", P.init_theta, gen(), scale=NAN)
    refused("scale", P.cell.init_params, gen(), scale=INF)


# ------------------------------------------------------- other builders
@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"lam": NAN}, "lam"),
        ({"lam": 1.0}, "lam"),
        ({"lam": 0.5, "T": 0}, "T"),
        ({"lam": 0.5, "T": -1}, "T"),
        ({"lam": 0.5, "n": 0}, "n"),
        ({"lam": 0.5, "input_bound": NAN}, "input_bound"),
        ({"lam": 0.5, "input_bound": 0.0}, "input_bound"),
        ({"lam": 0.5, "n": 10**6}, "n"),
    ],
)
def test_contractive_problem_refuses(kwargs, argument):
    refused(argument, contractive_problem, "linear", generator=gen(), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"T": 0}, "T"),
        ({"theta": NAN}, "theta"),
        ({"n": 0}, "n"),
        ({"n": 10**6}, "n"),
        ({"dtype": torch.int32}, "dtype"),
    ],
)
def test_influence_balancing_problem_refuses(kwargs, argument):
    refused(argument, influence_balancing_problem, **kwargs)


def test_clip_spectral_norm_refuses():
    refused("lam", clip_spectral_norm, torch.eye(2), NAN)
    refused("lam", clip_spectral_norm, torch.eye(2), -1.0)
    refused("W", clip_spectral_norm, torch.ones(3), 0.5)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_n": 0}, "max_n"),
        ({"max_T": -1}, "max_T"),
        ({"max_k": 1}, "max_k"),  # cross-entropy is among the losses: needs 2 classes
        ({"cells": ("rnn",)}, "cells"),
        ({"cells": "lstm"}, "cells"),
        ({"losses": ()}, "losses"),
        ({"max_n": 10**6}, "n"),
    ],
)
def test_problems_strategy_validates_when_built(kwargs, argument):
    refused(argument, problems, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"lam_min": 0.0}, "lam_min"),
        ({"lam_max": NAN}, "lam_max"),
        ({"lam_min": 0.9, "lam_max": 0.5}, "lam_max"),
        ({"min_T": 5, "max_T": 4}, "max_T"),
        ({"cells": ("gru",)}, "cells"),
        ({"input_bound": INF}, "input_bound"),
    ],
)
def test_contractive_problems_strategy_validates_when_built(kwargs, argument):
    refused(argument, contractive_problems, **kwargs)


def test_fpp_streams_refuse_absurd_sizes():
    refused("steps", cycle_world, 4, 10**8, 10**5, gen())
    refused("steps", stochastic_world, 10**8, 10**5, gen())
    assert cycle_world(4, 10, 2, gen()).inputs.shape == (2, 10, 1)


def test_require_finite_number_bounds():
    assert _validate.require_finite_number("x", 3) == 3.0
    for bad in (True, None, "1", NAN, INF, -INF):
        refused("x", _validate.require_finite_number, "x", bad)
    refused("x", _validate.require_finite_number, "x", 1.0, maximum=1.0, exclusive=True)
    assert math.isclose(_validate.require_finite_number("x", 0.5, minimum=0, maximum=1, exclusive=True), 0.5)


def test_fpp_teacher_buffer_refuses_absurd_sizes():
    from verify.fpp.problems import teacher_buffer

    refused("n", teacher_buffer, n=10**11, generator=gen())
    assert teacher_buffer(n=10, generator=gen()).problem.T == 10
