"""The OK claims (Benzing et al. 2019, arXiv:1902.03993): both sides, on the implementation route.

* ``uoro.ok-unbiased`` PASSes the toolkit's OK (controls included) and FAILs each biased reduction; the unbiased
  but noisier ``ok.uniform`` does not FAIL it; an OK without the exact-mean hook, or one supporting none of the
  problems, is SKIPPED with the reason;
* ``uoro.ok-variance`` PASSes the toolkit's OK (per-step minimum exactly, pooled ratios below 1) and FAILs
  ``ok.uniform``; without the per-step hooks only the trajectory comparison decides, and the summary says so.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from theory.catalog import get_claim
from verify.config import RunConfig
from verify.estimators.ok import OK, optimal_variance
from verify.impl import DEFAULT
from verify.impl.mutants import get
from verify.impl.mutants.ok import MUST_NOT_FAIL, MUTANTS, OKUniform
from verify.model.problem import Problem
from verify.report.figures import claim_figures
from verify.run.check import run_check
from verify.uoro.ok import as_matrix, kf_step_variance, pooled_ratio
from verify.verdict import Verdict

NO_CONTROLS = (("controls", False),)


def _run(claim: str, implementations: object = None, **kw: object) -> Any:
    cfg = RunConfig(**kw) if implementations is None else RunConfig(implementations=implementations, **kw)  # type: ignore[arg-type]
    return run_check(get_claim(claim), cfg)


def _with(part: object, label: str) -> object:
    return DEFAULT.with_family(DEFAULT.uoro.with_part("ok", part), label=label)


def test_unbiased_passes_the_toolkit_ok_with_its_controls() -> None:
    res = _run("uoro.ok-unbiased")
    assert res.verdict is Verdict.PASS, res.summary
    got = {c.name: (c.expected, c.observed) for c in res.controls}
    assert got == {
        "mutant ok.truncated-svd": ("FAIL", "FAIL"),
        "mutant ok.unscaled": ("FAIL", "FAIL"),
        "mutant ok.uniform": ("PASS", "PASS"),
    }
    rows = res.data["exact_mean"]
    assert {r["rank"] for r in rows} == {1, 2} and len({r["problem"] for r in rows}) == 2
    assert max(r["gradient_error"] for r in rows) <= 1e-12  # measured 5e-16


def test_variance_passes_the_toolkit_ok_with_its_control() -> None:
    res = _run("uoro.ok-variance")
    assert res.verdict is Verdict.PASS, res.summary
    assert [(c.expected, c.observed) for c in res.controls] == [("FAIL", "FAIL")]
    steps = res.data["steps"]
    assert [s["rank"] for s in steps] == [1, 2] and max(s["excess"] for s in steps) <= 1e-12
    assert steps[0]["ok_over_kf"] <= 1 + 1e-10 and steps[0]["mean_ok_over_kf"] < 1.0  # seed 0: 0.90
    for name in ("ok1/kf", "ok2/ok1"):
        assert [r["n"] for r in res.data["ratios"][name]] == [4, 8]
        assert res.data["pooled"][name][1][1] < 1.0
    # seed 0: OK(1)'s noise is about 0.3 x ||g_T||^2 at n = 4 and 8 -- not negligible, and the claim says so
    assert any("negligible noise" in f for f in res.findings)


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.visible_to], ids=lambda m: m.name)
def test_each_ok_mutant_fails_the_claims_it_is_visible_to(mutant: Any) -> None:
    m = get(mutant.name)
    for claim in m.visible_to:
        res = _run(claim, m.implementations, options=NO_CONTROLS)
        assert res.verdict is Verdict.FAIL, (m.name, claim, res.summary)


@pytest.mark.parametrize("name", sorted(MUST_NOT_FAIL))
def test_unbiased_mutant_does_not_fail_unbiasedness(name: str) -> None:
    for claim in MUST_NOT_FAIL[name]:
        res = _run(claim, get(name).implementations, options=NO_CONTROLS)
        assert res.verdict is Verdict.PASS, res.summary


def test_the_uniform_control_fails_the_per_step_part_exactly() -> None:
    res = _run("uoro.ok-variance", get("ok.uniform").implementations, options=NO_CONTROLS)
    assert res.verdict is Verdict.FAIL
    assert "above the minimum" in res.summary and "x KF-RTRL's variance" in res.summary


@dataclass(frozen=True)
class _NoElman(OK):
    """An OK that declares it supports nothing the claims run on."""

    def supports(self, problem: Problem) -> str | None:
        return "this implementation supports only a cell the fixtures do not have"


@pytest.mark.parametrize("claim", ["uoro.ok-unbiased", "uoro.ok-variance"])
def test_skipped_with_the_reason_when_nothing_is_supported(claim: str) -> None:
    res = _run(claim, _with(_NoElman, "no-elman"))
    assert res.verdict is Verdict.SKIPPED
    assert "supports only a cell" in (res.reason or "")


class _NoHooks:
    """A user's OK with init/step only: no exact_mean, no terms/reduce/breakpoints."""

    def __init__(self, rank: int = 1) -> None:
        self._ok = OK(rank=rank)
        self.name = f"user-ok-r{rank}"
        self.guarantee = self._ok.guarantee

    def supports(self, problem: Problem) -> str | None:
        return None

    def init(self, *a: Any, **k: Any) -> Any:
        return self._ok.init(*a, **k)

    def step(self, *a: Any) -> Any:
        return self._ok.step(*a)


def test_unbiased_without_the_exact_mean_hook_is_skipped_with_the_reason() -> None:
    res = _run("uoro.ok-unbiased", _with(_NoHooks, "no-hooks"), options=NO_CONTROLS)
    assert res.verdict is Verdict.SKIPPED
    assert "no exact_mean" in (res.reason or "") and "no event floor" in (res.reason or "")


def test_variance_without_the_step_hooks_says_the_exact_part_was_not_run() -> None:
    res = _run("uoro.ok-variance", _with(_NoHooks, "no-hooks"), options=NO_CONTROLS)
    assert res.verdict is Verdict.PASS, res.summary  # the trajectory comparison alone (same draws as OK's)
    assert "per step" in res.summary and "not run (_NoHooks lacks terms" in res.summary
    assert res.data["steps"] is None


def test_kf_step_variance_is_the_enumerated_sign_average() -> None:
    g = torch.Generator().manual_seed(3)
    us = torch.randn(1, 2, 5, generator=g, dtype=torch.float64)
    Bs = torch.randn(1, 2, 3, 3, generator=g, dtype=torch.float64)
    v = float(kf_step_variance(us, Bs)[0])
    # by hand: the cross term c1 c2 (rho1/rho2 u1 (x) B2 + rho2/rho1 u2 (x) B1), rho_i^2 = ||B_i|| / ||u_i||
    n = [(float(us[0, i].norm()), float(Bs[0, i].norm())) for i in (0, 1)]
    r = [nb / nu for nu, nb in n]
    e = r[0] / r[1] * n[0][0] ** 2 * n[1][1] ** 2 + r[1] / r[0] * n[1][0] ** 2 * n[0][1] ** 2
    e += 2 * float(us[0, 0] @ us[0, 1]) * float((Bs[0, 0] * Bs[0, 1]).sum())
    assert v == pytest.approx(e, rel=1e-12)
    assert float(optimal_variance(us, Bs, 1)[0]) <= v * (1 + 1e-12)
    assert as_matrix(us, Bs).shape == (1, 9, 5)


def test_uniform_reduction_is_unbiased_and_noisier_per_step() -> None:
    g = torch.Generator().manual_seed(5)
    us = torch.randn(1, 2, 4, generator=g, dtype=torch.float64)
    Bs = torch.randn(1, 2, 3, 3, generator=g, dtype=torch.float64)
    C, est = as_matrix(us, Bs), OKUniform(rank=1)
    cuts = sorted({0.0, 1.0, *est.breakpoints(us, Bs).flatten().tolist()})
    mean, var = torch.zeros_like(C), 0.0
    for lo, hi in itertools.pairwise(cuts):
        Cp = as_matrix(*est.reduce(us, Bs, torch.tensor([0.5 * (lo + hi)], dtype=torch.float64)))
        mean, var = mean + (hi - lo) * Cp, var + (hi - lo) * float(((Cp - C) ** 2).sum())
    assert float((mean - C).norm()) <= 1e-12 * float(C.norm())
    assert var > float(optimal_variance(us, Bs, 1)[0]) * 1.01


def test_pooled_ratio_weights_by_precision() -> None:
    rows = [{"ratio": 0.5, "log_se": 0.01}, {"ratio": 2.0, "log_se": 1.0}]
    ratio, (lo, hi) = pooled_ratio(rows, 0.95)
    assert 0.5 < ratio < 0.51 and lo < ratio < hi


def test_variance_draws_its_figure() -> None:
    res = _run("uoro.ok-variance", options=NO_CONTROLS)
    figs, problems = claim_figures("uoro.ok-variance", res.data)
    assert len(figs) == 1 and not problems, problems
    assert [s["label"] for s in figs[0]["series"]] == ["ok1/kf", "ok2/ok1"]
    res.to_dict()
