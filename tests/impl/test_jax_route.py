"""The JAX route (:mod:`verify.impl.jax_route`): the contract, vmap and its fallback, DLPack, the x64 refusal, the
one-line refusal of a missing jax, and claims on a JAX UORO / RTRL (correct PASS, seeded bug FAIL)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from verify.errors import ImplementationError, InvalidArgument
from verify.impl.jax_route import INSTALL_HINT, missing_extra
from verify.impl.loader import load_implementations
from verify.model.builders import random_problem

ROOT = Path(__file__).resolve().parents[2]


def _problem() -> tuple[object, torch.Tensor]:
    return random_problem("elman-tanh", n=3, d=2, T=4, k=2, generator=torch.Generator().manual_seed(0))


# ------------------------------------------------------------------ without jax
def test_missing_extra_names_the_module_and_the_install_line() -> None:
    assert missing_extra("jax") == (
        "no module named 'jax': the JAX route needs it, install the jax extra: pip install -e '.[jax]'"
    )
    assert INSTALL_HINT in (missing_extra("jaxlib.xla_client") or "")
    assert "pip install -e '.[gallery]'" in (missing_extra("equinox") or "")
    assert "'flax.linen'" in (missing_extra("flax.linen") or "")
    assert missing_extra("numpy") is None and missing_extra("jaxfoo") is None and missing_extra(None) is None


def test_loader_refuses_a_jax_impl_without_jax_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)  # as if jax were not installed: import jax -> ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "verify.examples.jax_uoro", raising=False)
    with pytest.raises(ImplementationError) as info:
        load_implementations(["uoro=verify.examples.jax_uoro:JaxUORO"])
    text = str(info.value)
    assert "\n" not in text and "no module named 'jax'" in text and "pip install -e '.[jax]'" in text, text


def test_loader_words_a_missing_equinox_raised_by_a_factory(tmp_path: Path) -> None:
    spec = tmp_path / "wrap.py"
    spec.write_text("def rtrl():\n    import equinox\n", encoding="utf-8")  # a factory importing its repository
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "equinox", None)
        with pytest.raises(ImplementationError) as info:
            load_implementations([f"rtrl={spec}:rtrl"])
    assert "no module named 'equinox'" in str(info.value) and "'.[gallery]'" in str(info.value), str(info.value)


@pytest.mark.slow
def test_cli_refuses_without_jax_in_one_line_and_exit_2(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['jax'] = None\n", encoding="utf-8")
    env = {"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "verify", "run", "--impl", "uoro=verify.examples.jax_uoro:JaxUORO", "--impl-only"]
    out = subprocess.run(
        [*cmd, "--out", str(tmp_path / "o"), "-q"], env=env, capture_output=True, text=True, timeout=300
    )
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "pip install -e '.[jax]'" in lines[0], out.stderr


# ------------------------------------------------------------------ with jax
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # as a user of the JAX route does (the x64 test turns it off and back on)


@pytest.mark.slow
def test_jax_uoro_follows_the_contract_vectorized() -> None:
    from verify.estimators.online import check_contract
    from verify.examples.jax_uoro import JaxUORO

    P, th = _problem()
    check_contract(JaxUORO, P, th, samples=3, steps=3)
    assert JaxUORO.name == "jax-uoro [jax.vmap+jit]"


def test_dlpack_shares_memory_both_ways() -> None:
    from verify.impl.jax_route import to_jax, to_torch

    P, _ = _problem()
    t = torch.arange(6, dtype=torch.float64)
    a = to_jax(t)
    assert a.unsafe_buffer_pointer() == t.data_ptr()
    back = to_torch(a * 2.0, P)
    assert back.dtype == torch.float64 and torch.equal(back, 2.0 * t)


def test_x64_off_is_refused_in_one_line_naming_how_to_turn_it_on() -> None:
    from verify.examples.jax_uoro import JaxUORO

    P, th = _problem()
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(InvalidArgument) as info:
            JaxUORO.init(P, th, torch.Generator().manual_seed(0), samples=2)
        with pytest.raises(ImplementationError) as load:
            load_implementations(["uoro=verify.examples.jax_uoro:JaxUORO"])
    finally:
        jax.config.update("jax_enable_x64", True)
    for text in (str(info.value), str(load.value)):
        assert "\n" not in text and "JAX_ENABLE_X64=1" in text and 'jax.config.update("jax_enable_x64", True)' in text


def _steps(traceable: bool):  # type: ignore[no-untyped-def]
    """A tiny deterministic online 'estimator' (an exponential trace of x as the gradient of b): traceable, or
    with a Python branch on a value (not traceable under jit/vmap)."""
    import jax.numpy as jnp

    def init(p, s0, key):  # type: ignore[no-untyped-def]
        return {"e": jnp.zeros_like(p["b"]), "k": jnp.zeros((), dtype=jnp.int32)}

    def step(p, c, x, y, key):  # type: ignore[no-untyped-def]
        scale = (2.0 if float(x[0]) > 0 else 1.0) if not traceable else jnp.where(x[0] > 0, 2.0, 1.0)
        e = 0.5 * c["e"] + scale * jnp.tanh(p["U"] @ x) + jax.random.normal(key, c["e"].shape) * 0.0
        grad = {k: jnp.zeros_like(v) for k, v in p.items()} | {"b": e}
        return {"e": e, "k": c["k"] + 1}, grad

    return init, step


def test_a_traceable_step_runs_vectorized() -> None:
    from verify.estimators.online import check_contract
    from verify.impl.jax_route import JaxStep

    P, th = _problem()
    est = JaxStep(*_steps(True), name="tiny")
    check_contract(est, P, th, samples=2, steps=2)
    assert est.vectorized and est.name == "tiny [jax.vmap+jit]"


@pytest.mark.slow
def test_untraceable_step_falls_back_to_a_loop_says_so_and_agrees() -> None:
    from verify.estimators.base import run_estimator
    from verify.impl.jax_route import JaxStep

    P, th = _problem()
    runs = {}
    for traceable in (True, False):
        est = JaxStep(*_steps(traceable), name="trace")
        runs[traceable] = run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=3, steps=2)
        assert est.vectorized is traceable
        assert ("per-sample loop: jax.vmap/jit could not trace it" in est.name) is not traceable, est.name
    assert torch.allclose(runs[True], runs[False], rtol=0, atol=1e-15)
    assert runs[True][:, :, P.layout["cell.b"].slice].abs().sum() > 0


@pytest.mark.slow
def test_vmap_and_loop_give_the_same_uoro_estimates() -> None:
    from verify.estimators.base import run_estimator
    from verify.examples.jax_uoro import NAMES, uoro_init, uoro_step
    from verify.impl.jax_route import JaxStep

    P, th = _problem()
    kw = {"names": NAMES, "noise_hook": True}
    a = run_estimator(JaxStep(uoro_init, uoro_step, **kw), P, th, torch.Generator().manual_seed(1), samples=2)  # type: ignore[arg-type]
    b = run_estimator(
        JaxStep(uoro_init, uoro_step, vmap=False, **kw), P, th, torch.Generator().manual_seed(1), samples=2
    )  # type: ignore[arg-type]
    assert torch.allclose(a, b, rtol=0, atol=1e-13)


def test_layout_errors_name_the_argument() -> None:
    import jax.numpy as jnp

    from verify.impl.jax_route import JaxStep

    P, th = _problem()
    bad = JaxStep(lambda p, s0, k: s0, lambda p, c, x, y, k: (c, {"W": jnp.zeros(1)}), name="bad")
    with pytest.raises(InvalidArgument, match="the gradient step\\(\\) returned"):
        bad.init(P, th, torch.Generator().manual_seed(0), samples=1)
        bad.step(P, th, bad.init(P, th, torch.Generator().manual_seed(0)), 1, torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match="gtilde"):
        JaxStep(lambda *a: 0, lambda *a: 0, gtilde="middle")


def _check(claim: str, family: str, part: str, obj: object) -> object:
    from theory.catalog import get_claim
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check

    return run_check(get_claim(claim), RunConfig(implementations=DEFAULT.with_part(family, part, obj)))


@pytest.mark.slow
@pytest.mark.parametrize(("wrap", "verdict"), [("JaxUORO", "PASS"), ("JaxUOROBernoulli", "FAIL")])
def test_jax_uoro_exact_expectation(wrap: str, verdict: str) -> None:
    from verify.examples import jax_uoro

    res = _check("uoro.exact-expectation", "uoro", "uoro", getattr(jax_uoro, wrap))
    assert res.verdict.name == verdict, res.summary  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize(("wrap", "verdict"), [("JaxRTRL", "PASS"), ("JaxRTRLNoImmediate", "FAIL")])
def test_jax_rtrl_exact(wrap: str, verdict: str) -> None:
    from verify.examples import jax_rtrl

    res = _check("rtrl.exact", "rtrl", "rtrl", getattr(jax_rtrl, wrap))
    assert res.verdict.name == verdict, res.summary  # type: ignore[attr-defined]
