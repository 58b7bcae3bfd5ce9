"""The gallery's jax_rtrl adapters (verify.gallery.jax_rtrl) against a stand-in of jax_rtrl's API (no network).

The stand-in (``tests/gallery/standins/jax_rtrl``) has the module path, class and call signatures the adapters use,
its maths written from the papers; ``RNN_VERIFY_STANDIN_JAX_RTRL_BUG`` seeds a bug per rule. The real checkout's
runs are in reports/gallery-notes/notes-jax_rtrl.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.gallery import env_var, glue_lines, repository

STANDIN = Path(__file__).parent / "standins" / "jax_rtrl"
BUG = "RNN_VERIFY_STANDIN_JAX_RTRL_BUG"


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in as the checkout, no seeded bug, and a fresh compile cache (a bug is read when a step is traced)."""
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    import verify.gallery.jax_rtrl as mod

    monkeypatch.setenv(env_var("jax_rtrl"), str(STANDIN))
    monkeypatch.delenv(BUG, raising=False)
    mod._compiled.cache_clear()


def test_the_declaration_imports_without_jax_and_every_adapter_is_small() -> None:
    import ast

    import verify.gallery.jax_rtrl as mod

    top = ast.parse(Path(mod.__file__).read_text(encoding="utf-8")).body  # module level: no jax, flax, jax_rtrl
    names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in top if isinstance(n, ast.ImportFrom)}
    assert not {m.split(".")[0] for m in names} & {"jax", "flax", "jax_rtrl", "chex"}, names
    repo = repository("jax_rtrl")
    assert [e.target for e in repo.entries] == [
        "rtrl", "rtrl.rflo", "rtrl.eprop", "rtrl", "rtrl.rflo", "rtrl.eprop", "rtrl.snap"
    ]  # fmt: skip
    for e in repo.entries:
        assert glue_lines(repo, e) <= 30, e.adapter
        assert {"jax", "flax", "chex"} <= set(e.requires)
    assert [e.adapter for e in repo.entries if e.skip] == ["snap0"]


def _gap(factory: str, bug: str, monkeypatch: pytest.MonkeyPatch, alpha: float) -> float:
    """Largest per-step relative gap between the adapter's gradients and the toolkit's estimator of the same rule."""
    import torch

    import verify.gallery.jax_rtrl as mod
    from verify.estimators import RTRL, run_estimator
    from verify.estimators.local import RFLO, EProp, _limit_problem

    monkeypatch.setenv(BUG, bug)
    P, th = _limit_problem("dense", alpha, 3, 5, torch.Generator().manual_seed(1), "leaky-elman-tanh")
    ours = {"rtrl": RTRL(), "rflo": RFLO(), "eprop": EProp()}[factory.removeprefix("murray_")]
    a = run_estimator(getattr(mod, factory)(), P, th, torch.Generator())
    b = run_estimator(ours, P, th, torch.Generator())
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize(
    ("factory", "bug"), [("rtrl", "rtrl-transposed"), ("murray_rflo", "rflo-no-leak"), ("eprop", "eprop-no-self")]
)
def test_adapter_equals_the_toolkit_rule_on_leaky_units_and_a_seeded_bug_does_not(
    factory: str, bug: str, standin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alpha = dt/tau = 0.5 (dt = T = 0.5, tau = 1; both ODE types): the adapter maps the leak; float64 (1e-13)."""
    assert _gap(factory, "", monkeypatch, 0.5) <= 1e-13
    import verify.gallery.jax_rtrl as mod

    mod._compiled.cache_clear()
    assert _gap(factory, bug, monkeypatch, 0.5) > 1e-3


def test_snap0_declines_the_orders_the_claims_ask(standin: None) -> None:
    from verify.errors import NotApplicable
    from verify.gallery.jax_rtrl import snap0

    for order in (1, 2):
        with pytest.raises(NotApplicable, match=f"order={order}"):
            snap0(order=order)


@pytest.mark.slow  # about 10 s per run on one core (jit compiles in the worker)
@pytest.mark.parametrize(
    ("factory", "claim", "bug"),
    [
        ("rtrl", "rtrl.exact", ""),
        ("rtrl", "rtrl.exact", "rtrl-transposed"),
        ("rflo", "rtrl.rflo-limits", ""),
        ("rflo", "rtrl.rflo-limits", "rflo-no-leak"),
        ("eprop", "rtrl.eprop-limits", ""),
        ("eprop", "rtrl.eprop-limits", "eprop-no-self"),
        ("murray_eprop", "rtrl.eprop-limits", ""),
    ],
)
def test_each_row_through_the_cli(
    factory: str, claim: str, bug: str, standin: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The row as a user runs it: PASS on the stand-in, FAIL with its seeded bug (the claim's own verdict)."""
    from verify.cli import main

    monkeypatch.setenv(BUG, bug)
    out = tmp_path / "results.json"
    field = factory.removeprefix("murray_")
    code = main(
        ["run", "--impl", f"{field}=verify.gallery.jax_rtrl:{factory}", "--impl-only", "--claims", claim,
         "--no-report", "-q", "--workers", "1", "--json", str(out)]
    )  # fmt: skip
    r = {c["id"]: c for c in json.loads(out.read_text())["claims"]}[claim]
    assert (code, r["verdict"]) == ((1, "FAIL") if bug else (0, "PASS")), r["summary"]
    if claim != "rtrl.exact" and not bug:  # the leaky units and the plain Elman cell are both covered
        assert {c["cell"] for c in r["data"]["cases"]} == {"leaky-elman-tanh", "elman-tanh"}
