"""``verify.gallery.fpp`` against the stand-in of VincentLiu3/fpp (``tests/gallery/standins/fpp``: the module paths,
classes and signatures the adapters use, maths of its own): each adapter agrees with the toolkit or PASSes a claim,
and the stand-in's seeded bug (``RNN_VERIFY_STANDIN_BUG=1``) is caught."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators import TBPTT
from verify.fpp.exactness import SuiteSetup, exactness_suite
from verify.fpp.objective import eq7_gradients, per_sample_gradients
from verify.gallery import env_var, glue_lines, repository
from verify.model.builders import random_problem

from ._standin import run_claim, use_standin

VAR = env_var("fpp")


def _gallery() -> object:
    from verify.gallery import fpp

    return fpp


def test_declaration_and_missing_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repository("fpp")
    assert [e.target for e in repo.entries] == ["fpp", "fpp.sampler", "truncation.tbptt", "uoro"]
    assert all(glue_lines(repo, e) > 0 for e in repo.entries)
    monkeypatch.delenv(VAR, raising=False)
    with pytest.raises(InvalidArgument, match=VAR):
        _gallery().uoro()  # type: ignore[attr-defined]


@pytest.mark.parametrize("bug", [False, True])
def test_eq7_adapter_is_eq7_on_elman_tanh(monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    """Every per-sample gradient of the Elman-tanh problems of fpp.gradient-eq7's suite (both losses, T in
    {1, 2, 5}) through FPPModel.train equals eq. (7) to round-off; the stand-in's flipped penalty does not."""
    use_standin(monkeypatch, VAR, "fpp", "model", bug=bug)
    G = _gallery()
    worst = 0.0
    for label, obj, v in exactness_suite(SuiteSetup(n=3, buffer=8), torch.Generator().manual_seed(0)):
        if not label.startswith("elman-tanh/"):
            with pytest.raises(NotApplicable, match="Elman-tanh"):
                per_sample_gradients(obj, v, G.fpp)  # type: ignore[attr-defined]
            continue
        a, b = per_sample_gradients(obj, v, G.fpp), per_sample_gradients(obj, v, eq7_gradients)  # type: ignore[attr-defined]
        worst = max(worst, float(((a - b).norm(dim=-1) / b.norm(dim=-1)).max()))
    assert (worst > 1e-3) if bug else (worst <= 1e-12), worst


@pytest.mark.parametrize("bug", [False, True])
def test_tbptt_adapter_is_truncated_bptt(monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    use_standin(monkeypatch, VAR, "fpp", "model", bug=bug)
    G = _gallery()
    P, th = random_problem("elman-tanh", n=3, d=2, T=7, k=2, generator=torch.Generator().manual_seed(1))
    worst = 0.0
    for k in (1, 3):
        ours, theirs = TBPTT(k), G.tbptt(k)  # type: ignore[attr-defined]
        r1, r2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
        s1, s2 = ours.init(P, th, r1), theirs.init(P, th, r2)
        for t in range(1, P.T + 1):
            (s1, g1), (s2, g2) = ours.step(P, th, s1, t, r1), theirs.step(P, th, s2, t, r2)
            worst = max(worst, float((g1 - g2).norm() / g1.norm()))
    assert (worst > 1e-3) if bug else (worst <= 1e-12), worst


@pytest.mark.slow
@pytest.mark.parametrize("bug", [False, True])
def test_sampler_through_lemma3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    use_standin(monkeypatch, VAR, "fpp", "model", bug=bug)
    _code, rec = run_claim(tmp_path, "fpp.sampler=verify.gallery.fpp:sampler", "fpp.lemma3-unbiased")
    assert rec["verdict"] == ("FAIL" if bug else "PASS"), rec.get("summary")


@pytest.mark.slow
@pytest.mark.parametrize("bug", [False, True])
def test_uoro_through_exact_expectation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bug: bool) -> None:
    use_standin(monkeypatch, VAR, "fpp", "model", bug=bug)
    _code, rec = run_claim(tmp_path, "uoro=verify.gallery.fpp:uoro", "uoro.exact-expectation")
    assert rec["verdict"] == ("FAIL" if bug else "PASS"), rec.get("summary")
