"""``verify.gallery.uoro_demo`` against the stand-in of petered/uoro-demo (``tests/gallery/standins/uoro_demo``: the
module paths, classes and signatures the adapters use, maths of its own, no artemis): RTRL equals the toolkit's,
UORO PASSes its exact expectation, and the stand-in's seeded bug (``RNN_VERIFY_STANDIN_BUG=1``) is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from verify.errors import InvalidArgument
from verify.estimators import RTRL
from verify.gallery import env_var, glue_lines, repository
from verify.model.builders import random_problem

from ._standin import run_claim, use_standin

VAR = env_var("uoro-demo")


def _gallery() -> object:
    from verify.gallery import uoro_demo

    return uoro_demo


def test_declaration_and_missing_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repository("uoro_demo")
    assert [e.target for e in repo.entries] == ["uoro", "rtrl"]
    assert all("artemis" in e.requires and glue_lines(repo, e) > 0 for e in repo.entries)
    monkeypatch.delenv(VAR, raising=False)
    est = _gallery().rtrl()  # type: ignore[attr-defined]
    P, th = random_problem("elman-tanh", n=2, d=2, T=2, k=2, generator=torch.Generator().manual_seed(0))
    with pytest.raises(InvalidArgument, match=VAR):
        est.init(P, th, torch.Generator())


@pytest.mark.parametrize("bug", [False, True])
@pytest.mark.parametrize(("kind", "loss"), [("elman-tanh", "squared-error"), ("gru", "cross-entropy")])
def test_rtrl_adapter_is_rtrl(monkeypatch: pytest.MonkeyPatch, bug: bool, kind: str, loss: str) -> None:
    """Per-step gradients and influence of RTRL through ``train_it`` equal the toolkit's RTRL to round-off (Elman-tanh
    and GRU: ``torch.nn.GRU`` with ``b_hh`` = 0 is the toolkit's cell); the stand-in's J_t without its propagated term
    does not."""
    use_standin(monkeypatch, VAR, "uoro_demo", "uoro_demo", bug=bug)
    P, th = random_problem(kind, n=3, d=2, T=6, k=2, loss=loss, generator=torch.Generator().manual_seed(1))
    ours, theirs = RTRL(), _gallery().rtrl()  # type: ignore[attr-defined]
    r1, r2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    s1, s2 = ours.init(P, th, r1), theirs.init(P, th, r2)
    worst = 0.0
    for t in range(1, P.T + 1):
        (s1, g1), (s2, g2) = ours.step(P, th, s1, t, r1), theirs.step(P, th, s2, t, r2)
        J1, J2 = ours.influence_estimate(P, s1), theirs.influence_estimate(P, s2)
        worst = max(worst, float((g1 - g2).norm() / g1.norm()), float((J1 - J2).norm() / J1.norm()))
    assert (worst > 1e-3) if bug else (worst <= 1e-12), worst


@pytest.mark.slow
@pytest.mark.parametrize("bug", [False, True])
def test_rtrl_through_rtrl_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    use_standin(monkeypatch, VAR, "uoro_demo", "uoro_demo", bug=bug)
    _, rec = run_claim(tmp_path, "rtrl=verify.gallery.uoro_demo:rtrl", "rtrl.exact")
    assert rec["verdict"] == ("FAIL" if bug else "PASS"), rec.get("summary")


@pytest.mark.slow
@pytest.mark.parametrize("bug", [False, True])
def test_uoro_through_exact_expectation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    use_standin(monkeypatch, VAR, "uoro_demo", "uoro_demo", bug=bug)
    _, rec = run_claim(tmp_path, "uoro=verify.gallery.uoro_demo:uoro", "uoro.exact-expectation")
    assert rec["verdict"] == ("FAIL" if bug else "PASS"), rec.get("summary")
