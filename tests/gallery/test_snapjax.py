"""The snapjax gallery adapters (:mod:`verify.gallery.snapjax`) against a stand-in of snapjax's public API
(``tests/gallery/standins/snapjax``: written for these tests, not snapjax's code), no network, no checkout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from verify.gallery import env_var, glue_lines, repository

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parent / "standins" / "snapjax"


def test_declaration_and_glue() -> None:
    repo = repository("snapjax")
    assert [e.target for e in repo.entries] == ["rtrl", "rtrl.snap"]
    for e in repo.entries:
        assert glue_lines(repo, e) <= 30, (e.algorithm, glue_lines(repo, e))
        assert {"jax", "equinox"} <= set(e.requires) and e.claims


@pytest.mark.slow
def test_module_imports_without_jax_or_a_checkout() -> None:
    code = (
        "import sys, verify.gallery.snapjax\n"
        "print(any(m.split('.')[0] in ('jax', 'equinox', 'snapjax') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr + out.stdout


pytest.importorskip("jax")
pytest.importorskip("equinox")


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(env_var("snapjax"), str(STANDIN))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the adapter prepends the checkout; undone after the test
    yield
    for name in [m for m in sys.modules if m == "snapjax" or m.startswith("snapjax.")]:
        del sys.modules[name]


def _check(claim: str, part: str, obj: object) -> object:
    from theory.catalog import get_claim
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check

    return run_check(get_claim(claim), RunConfig(implementations=DEFAULT.with_part("rtrl", part, obj)))


@pytest.mark.slow
@pytest.mark.parametrize(("bug", "verdict"), [("", "PASS"), ("no-immediate", "FAIL")])
def test_rtrl_exact_on_the_standin(standin: None, monkeypatch: pytest.MonkeyPatch, bug: str, verdict: str) -> None:
    from verify.gallery import snapjax

    monkeypatch.setenv("SNAPJAX_STANDIN_BUG", bug)
    res = _check("rtrl.exact", "rtrl", snapjax.rtrl())
    assert res.verdict.name == verdict, res.summary  # type: ignore[attr-defined]


@pytest.mark.slow
def test_snap_exactness_on_the_standin_shows_the_dense_pattern(standin: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like snapjax, the stand-in's SnAp-2 keeps every entry of a dense weight array: on the 4-unit ring it is RTRL,
    the only case not as the theory says; with the immediate term dropped the exact cases fail as well."""
    from verify.gallery import snapjax

    monkeypatch.setenv("SNAPJAX_STANDIN_BUG", "")
    res = _check("rtrl.snap-exactness", "snap", snapjax.snap)
    wrong = res.summary.split("not as the theory says: ")[1].split("; covered")[0]  # type: ignore[attr-defined]
    assert res.verdict.name == "FAIL" and wrong.startswith("elman-tanh ring W, n = 2") and ";" not in wrong, wrong  # type: ignore[attr-defined]
    monkeypatch.setenv("SNAPJAX_STANDIN_BUG", "no-immediate")
    bug = _check("rtrl.snap-exactness", "snap", snapjax.snap)
    assert bug.verdict.name == "FAIL" and "diagonal W, n = 1" in bug.summary, bug.summary  # type: ignore[attr-defined]


def test_adapter_runs_the_standin_vectorized(standin: None) -> None:
    import torch

    from verify.estimators.base import run_estimator
    from verify.gallery import snapjax
    from verify.model.builders import random_problem

    P, th = random_problem("elman-tanh", n=3, d=2, T=2, k=2, generator=torch.Generator().manual_seed(0))
    est = snapjax.snap(order=1)
    g = run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=2)
    assert est.vectorized and g.shape == (2, 2, P.p) and torch.equal(g[:, 0], g[:, 1])
