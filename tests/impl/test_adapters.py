"""The batch-1 adapter's per-step bookkeeping (:class:`verify.impl.adapters.Batch1`).

θ is compared once per step (not once per sample) and against a copy: an in-place update of θ between steps
(an online run) reaches every sample's object through ``set_params``; without ``set_params`` it is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from verify.errors import NotApplicable
from verify.examples import numpy_rtrl
from verify.impl.adapters import Batch1, _f64, low_precision_seen, reset_precision
from verify.model.builders import random_problem

NAMES = {"Wx": "U", "Wh": "W", "bh": "b", "Wy": "V", "by": "c"}


def _adapter(seen: list[dict[str, np.ndarray]] | None) -> Batch1:
    def make(ctx):  # type: ignore[no-untyped-def]
        p = ctx.params
        return numpy_rtrl.NumpyRTRL(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=ctx.s0)  # type: ignore[no-untyped-call]

    def set_params(obj, params):  # type: ignore[no-untyped-def]
        assert seen is not None
        seen.append(params)
        obj.Wx, obj.Wh, obj.bh, obj.Wy, obj.by = (params[k] for k in ("Wx", "Wh", "bh", "Wy", "by"))

    return Batch1(
        make,
        step_fn=lambda est, x, y: est.step(x, y),
        names=NAMES,
        state=lambda est: est.h,
        set_params=None if seen is None else set_params,
        name="numpy-rtrl",
    )


def test_an_in_place_update_of_theta_reaches_every_sample() -> None:
    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    seen: list[dict[str, np.ndarray]] = []
    est = _adapter(seen)
    g = torch.Generator().manual_seed(1)
    state = est.init(P, th, g, samples=3)
    state, _ = est.step(P, th, state, 1, g)
    assert seen == []  # θ unchanged: no call
    th.mul_(0.5)  # in place, as an online learner updates θ
    state, _ = est.step(P, th, state, 2, g)
    assert len(seen) == 3  # once per sample's object
    want = P.layout.unflatten(th, "")["cell.W"].numpy()
    assert all(np.array_equal(p["Wh"], want) for p in seen)
    state, _ = est.step(P, th, state, 3, g)
    assert len(seen) == 3  # unchanged again: no call


def test_theta_changed_without_set_params_is_refused() -> None:
    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    est = _adapter(None)
    g = torch.Generator().manual_seed(1)
    state = est.init(P, th, g, samples=2)
    state, _ = est.step(P, th, state, 1, g)
    th.add_(0.1)
    with pytest.raises(NotApplicable, match="set_params"):
        est.step(P, th, state, 2, g)


@pytest.mark.parametrize(
    ("value", "narrow"),
    [
        (np.ones(3), ()),
        (np.ones(3, dtype=np.float32), ("float32",)),
        (np.ones(3, dtype=np.float16), ("float16",)),
        (torch.ones(3, dtype=torch.float32), ("float32",)),
        (torch.ones(3, dtype=torch.bfloat16).float().to(torch.bfloat16), ("bfloat16",)),
        ([1.0, 2.0], ()),
    ],
)
def test_narrow_floats_are_recorded_on_the_fast_path_too(value: object, narrow: tuple[str, ...]) -> None:
    reset_precision()
    out = _f64(value)
    assert out.dtype == np.float64 and low_precision_seen() == narrow
    reset_precision()


# ---------------------------------------------------------------- θ̃ over the cell's parameters only (issue 37, item 2)
class _Factors:
    """A stand-in object whose factors() returns what the test puts in it (s̃ and θ̃ in the user's names)."""

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        self.tt = {k: np.full(v.shape, i + 1.0) for i, (k, v) in enumerate(ctx.params.items())}
        self.st = np.ones(ctx.s0.size)

    def step(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.zeros(0)


def _factors(form: str) -> tuple[torch.Tensor, torch.Tensor]:
    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    cell = ("Wh", "Wx", "bh")

    def factors(obj):  # type: ignore[no-untyped-def]
        tt = obj.tt
        if form == "cell-dict":
            tt = {k: tt[k] for k in cell}
        elif form == "cell-flat":  # θ's layout order: W, U, b
            tt = np.concatenate([tt[k].ravel() for k in cell])
        elif form == "missing-cell":
            tt = {k: tt[k] for k in ("Wh", "bh", "Wy", "by")}
        return obj.st, tt

    est = Batch1(_Factors, names=NAMES, factors=factors, name="factors")
    state = est.init(P, th, torch.Generator().manual_seed(1), samples=2)
    return est.uoro_factors(P, state)


def test_theta_tilde_over_the_cell_only_is_padded_with_the_readouts_zeros() -> None:
    """Tallec & Ollivier 2017, Alg. 1's own form (θ̃ over F_state's parameters, the readout's gradient exact) is
    taken as a dict without the readout's names or flat over the cell; the readout's entries of θ̃ are 0."""
    _, full = _factors("full")
    p_cell = 3 * 3 + 3 * 2 + 3
    for form in ("cell-dict", "cell-flat"):
        _st, tt = _factors(form)
        assert tt.shape == full.shape == (2, 1, 3 * 3 + 3 * 2 + 3 + 2 * 3 + 2)
        assert torch.equal(tt[..., :p_cell], full[..., :p_cell]), form
        assert torch.count_nonzero(tt[..., p_cell:]) == 0 and torch.count_nonzero(full[..., p_cell:]) > 0, form


def test_theta_tilde_without_a_cell_parameter_is_refused_naming_it() -> None:
    from verify.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=r"factors\(obj\)\[1\].*'Wx' missing"):
        _factors("missing-cell")
