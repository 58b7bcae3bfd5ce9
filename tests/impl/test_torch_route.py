"""The torch route (:mod:`verify.impl.torch_route`): the contract, ``torch.func.vmap`` and its fallback (named),
the float32 refusal, bad inputs named, and claims on the torch UORO of :mod:`verify.examples.torch_uoro` (correct
PASS, seeded bug FAIL)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from verify.errors import InvalidArgument
from verify.estimators.base import run_estimator
from verify.estimators.online import check_contract
from verify.examples import torch_uoro
from verify.examples.torch_uoro import NAMES, TorchUORO, uoro_init, uoro_step
from verify.impl.torch_route import TorchStep
from verify.model.builders import random_problem


def _problem() -> tuple[Any, torch.Tensor]:
    return random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))


def test_torch_uoro_follows_the_contract_vectorized() -> None:
    P, th = _problem()
    check_contract(TorchUORO, P, th, samples=3, steps=3)
    assert TorchUORO.name == "torch-uoro [torch.func.vmap]" and TorchUORO.vectorized


def test_vmap_and_loop_give_the_same_uoro_estimates_and_factors() -> None:
    P, th = _problem()
    kw: dict[str, Any] = {"names": NAMES, "noise_hook": True, "factors": lambda c: (c["s_tilde"], c["theta_tilde"])}
    vec, loop = TorchStep(uoro_init, uoro_step, **kw), TorchStep(uoro_init, uoro_step, vmap=False, **kw)
    a = run_estimator(vec, P, th, torch.Generator().manual_seed(1), samples=3)
    b = run_estimator(loop, P, th, torch.Generator().manual_seed(1), samples=3)
    assert vec.vectorized and not loop.vectorized and "per-sample loop (vmap=False)" in loop.name
    assert torch.allclose(a, b, rtol=0, atol=1e-13) and a.abs().sum() > 0
    st = vec.init(P, th, torch.Generator().manual_seed(2), samples=2)
    st, _ = vec.step(P, th, st, 1, torch.Generator().manual_seed(3))
    s_tilde, theta_tilde = vec.uoro_factors(P, st)
    assert s_tilde.shape == (2, 1, P.n) and theta_tilde.shape == (2, 1, P.p)
    # theta~ over W_out, b_out (the readout) is zero: nu^T J_theta has no readout columns (Algorithm 1)
    assert theta_tilde[..., P.layout["readout.V"].slice].abs().max() == 0


def _steps(traceable: bool, noise: bool = False):  # type: ignore[no-untyped-def]
    """A tiny online 'estimator' (an exponential trace of tanh(U x) as the gradient of b): traceable, or with
    ``.item()`` on the carry (not traceable under vmap); ``noise``: plus a draw from torch's default generator."""

    def init(p, s0):  # type: ignore[no-untyped-def]
        return {"e": torch.zeros_like(p["b"]), "k": torch.zeros((), dtype=torch.int64)}

    def step(p, c, x, y, nu):  # type: ignore[no-untyped-def]
        up = c["e"].sum() > 0  # a value of the carry: batched under vmap
        scale = (2.0 if up.item() else 1.0) if not traceable else torch.where(up, 2.0, 1.0)
        e = 0.5 * c["e"] + scale * torch.tanh(p["U"] @ x)
        if noise:
            e = e + torch.randn(e.shape, dtype=torch.float64)
        grad = {k: torch.zeros_like(v) for k, v in p.items()} | {"b": e}
        return {"e": e, "k": c["k"] + 1}, grad

    return init, step


def test_untraceable_step_falls_back_to_a_loop_says_so_and_agrees() -> None:
    P, th = _problem()
    runs = {}
    for traceable in (True, False):
        est = TorchStep(*_steps(traceable), name="trace")
        runs[traceable] = run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=3, steps=2)
        assert est.vectorized is traceable
        assert ("per-sample loop: torch.func.vmap could not trace it: RuntimeError" in est.name) is not traceable
    assert "[per-sample loop" in est.name and ".item()" in est.name, est.name
    assert torch.allclose(runs[True], runs[False], rtol=0, atol=1e-15)
    assert runs[True][:, :, P.layout["cell.b"].slice].abs().sum() > 0


def test_own_randomness_is_seeded_from_the_toolkit_generator_and_differs_per_sample() -> None:
    P, th = _problem()
    est = TorchStep(*_steps(True, noise=True), name="noisy")
    before = torch.random.get_rng_state()
    a = run_estimator(est, P, th, torch.Generator().manual_seed(5), samples=4, steps=2)
    b = run_estimator(est, P, th, torch.Generator().manual_seed(5), samples=4, steps=2)
    c = run_estimator(est, P, th, torch.Generator().manual_seed(6), samples=4, steps=2)
    assert torch.equal(torch.random.get_rng_state(), before)  # the process's generator is left as it was
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert est.vectorized and not torch.equal(a[:, 0], a[:, 1])  # randomness="different": each sample its own
    assert est.noise_shape is None and est.with_noise is None  # no hook: the tabulated-noise claims are SKIPPED


def test_float32_is_refused_naming_the_argument() -> None:
    P, th = _problem()
    init, step = _steps(True)
    carry32 = TorchStep(lambda p, s0: {"e": torch.zeros(P.n, dtype=torch.float32)}, step, name="f32")
    with pytest.raises(InvalidArgument) as info:
        carry32.init(P, th, torch.Generator().manual_seed(0))
    assert "init(params, s0) carry" in str(info.value) and "float32" in str(info.value)
    assert "dtype=torch.float64" in str(info.value) and "\n" not in str(info.value)

    def step32(p, c, x, y, nu):  # type: ignore[no-untyped-def]
        new, g = step(p, c, x, y, nu)
        return new, {k: v.float() for k, v in g.items()}

    grad32 = TorchStep(init, step32, name="f32-grad")
    st = grad32.init(P, th, torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match=r"the gradient step\(\) returned\['W'\].*float32"):
        grad32.step(P, th, st, 1, torch.Generator().manual_seed(0))


def test_bad_inputs_are_named() -> None:
    P, th = _problem()
    init, _ = _steps(True)
    short = TorchStep(init, lambda p, c, x, y, nu: (c, {"U": torch.zeros(1, dtype=torch.float64)}), name="bad")
    st = short.init(P, th, torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match=r"the gradient step\(\) returned.*'W' missing"):
        short.step(P, th, st, 1, torch.Generator().manual_seed(0))
    shaped = TorchStep(init, lambda p, c, x, y, nu: (c, {k: v.T.reshape(-1) for k, v in p.items()}), name="bad")
    with pytest.raises(InvalidArgument, match=r"shape \(9,\).*shape \(3, 3\)"):
        shaped.step(P, th, shaped.init(P, th, torch.Generator().manual_seed(0)), 1, torch.Generator().manual_seed(0))
    flat = TorchStep(init, lambda p, c, x, y, nu: (c, torch.zeros(P.p - 1, dtype=torch.float64)), name="bad")
    with pytest.raises(InvalidArgument, match=f"array of {P.p - 1} values"):
        flat.step(P, th, flat.init(P, th, torch.Generator().manual_seed(0)), 1, torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match="gtilde"):
        TorchStep(init, _steps(True)[1], gtilde="middle")
    with pytest.raises(InvalidArgument, match=r"TorchStep\(init, step\)"):
        TorchStep(init, None)  # type: ignore[arg-type]
    nontensor = TorchStep(lambda p, s0: {"e": 0.0}, _steps(True)[1], name="bad")
    with pytest.raises(InvalidArgument, match="a leaf of type float"):
        nontensor.init(P, th, torch.Generator().manual_seed(0))


def _check(claim: str, obj: object) -> Any:
    from theory.catalog import get_claim
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check

    return run_check(get_claim(claim), RunConfig(implementations=DEFAULT.with_part("uoro", "uoro", obj)))


@pytest.mark.parametrize(("wrap", "verdict"), [("TorchUORO", "PASS"), ("TorchUORONoRho1", "FAIL")])
@pytest.mark.parametrize("claim", ["uoro.exact-expectation", "uoro.algorithm-1-conformance"])
def test_torch_uoro_claims(claim: str, wrap: str, verdict: str) -> None:
    res = _check(claim, getattr(torch_uoro, wrap))
    assert res.verdict.name == verdict, res.summary
    assert getattr(torch_uoro, wrap).vectorized  # judged through vmap, not the loop


@pytest.mark.parametrize("form", ["cell-dict", "cell-flat"])
def test_theta_tilde_over_the_cell_only_is_padded_with_the_readouts_zeros(form: str) -> None:
    """θ̃ over the cell's parameters only (Tallec & Ollivier 2017, Alg. 1's own form: the readout's gradient exact)
    is taken from a torch carry as a dict without the readout's names or flat over the cell (issue 37, item 2)."""
    P, th = random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))
    cell = [k for k, v in NAMES.items() if v in ("W", "U", "b")]
    order = sorted(cell, key=lambda k: ("W", "U", "b").index(NAMES[k]))

    def factors(c: dict[str, Any]) -> tuple[Any, Any]:
        tt = {k: c["theta_tilde"][k] for k in cell}
        return c["s_tilde"], (tt if form == "cell-dict" else torch.cat([tt[k].reshape(-1) for k in order]))

    full = TorchStep(uoro_init, uoro_step, names=NAMES, factors=lambda c: (c["s_tilde"], c["theta_tilde"]),
                     noise_hook=True)  # fmt: skip
    part = TorchStep(uoro_init, uoro_step, names=NAMES, factors=factors, noise_hook=True)
    outs = []
    for est in (full, part):
        g = torch.Generator().manual_seed(3)
        state = est.init(P, th, g, samples=2)
        for t in (1, 2):
            state, _ = est.step(P, th, state, t, g)
        outs.append(est.uoro_factors(P, state))
    p_cell = 3 * 3 + 3 * 2 + 3
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    assert torch.count_nonzero(outs[1][1][..., p_cell:]) == 0 and torch.count_nonzero(outs[1][1][..., :p_cell]) > 0
