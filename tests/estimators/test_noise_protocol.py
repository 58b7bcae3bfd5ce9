"""The noise protocol of user estimators (verify.estimators.noise) and what the UORO claims make of it.

- randomness drawn outside the noise hook (a random start) is refused by ``enumerate_expectation``;
- an estimator without the hook, or without ``rank=``, gets SKIPPED (with the reason) on the claims
  that need them, never PASS;
- a g~ of the post-update form is named a variant and checked in expectation, not failed;
- a stale rho0 (unbiased) is a variance anomaly, not bias.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.estimators import enumerate_expectation
from verify.examples.uoro import MyUORO, State
from verify.impl import DEFAULT
from verify.impl.mutants import get as get_mutant
from verify.run.check import run_check
from verify.testing.strategies import random_problem
from verify.verdict import CheckResult, Verdict


def _run(claim: str, factory: Any) -> CheckResult:
    impls = DEFAULT.with_part("uoro", "uoro", factory)
    return run_check(all_claims()[claim], RunConfig(implementations=impls))


@dataclasses.dataclass(frozen=True)
class RandomStart(MyUORO):
    """Draws s~_0 from the generator it is given: randomness outside the noise hook."""

    def init(self, problem: Any, theta: torch.Tensor, rng: torch.Generator, *, samples: int = 1) -> State:
        st = super().init(problem, theta, rng, samples=samples)
        noise = torch.randn(st.s_tilde.shape, generator=rng, dtype=st.s_tilde.dtype)
        return st._replace(s_tilde=noise, theta_tilde=torch.ones_like(st.theta_tilde))


def test_random_start_outside_the_hook_is_refused_by_the_enumeration() -> None:
    P, th = random_problem("elman-tanh", n=2, d=2, T=3, generator=torch.Generator().manual_seed(0))
    E = enumerate_expectation(MyUORO(), P, th, steps=3)  # the hooked estimator: exact
    assert E.patterns == 2 ** (2 * 3)
    with pytest.raises(InvalidArgument, match="outside its noise hook"):
        enumerate_expectation(RandomStart(), P, th, steps=3)


class NoHook:
    """A UORO without the noise hook: MyUORO's methods, no noise_shape / with_noise."""

    name = "no-hook"

    def __init__(self) -> None:
        self._inner = MyUORO()

    def init(self, *a: Any, **k: Any) -> Any:
        return self._inner.init(*a, **k)

    def step(self, *a: Any, **k: Any) -> Any:
        return self._inner.step(*a, **k)


def test_claims_the_implementation_cannot_serve_are_skipped_with_the_reason() -> None:
    res = _run("uoro.algorithm-1-conformance", NoHook)
    assert res.verdict is Verdict.SKIPPED and "no noise hook" in res.reason
    res = _run("uoro.rank-variance", MyUORO)
    assert res.verdict is Verdict.SKIPPED and "does not take" in res.reason and "rank" in res.reason


@dataclasses.dataclass(frozen=True)
class PostUpdate(MyUORO):
    """g~ from s~_t, theta~_t after the update: (dl_t/ds_t . s~_t) theta~_t + dl_t/dtheta -- unbiased too."""

    def step(self, problem: Any, theta: torch.Tensor, state: State, t: int, rng: torch.Generator) -> Any:
        new, _ = super().step(problem, theta, state, t, rng)
        M, shape = new.s.shape[0], new.s.shape[1:]
        with torch.enable_grad():
            w = theta.detach().clone().requires_grad_(True)
            s = new.s[0].clone().requires_grad_(True)
            d_th, d_s = torch.autograd.grad(problem.step_loss(w, s, problem.targets[t - 1]), (w, s), allow_unused=True)
        d_th = torch.zeros_like(w) if d_th is None else d_th
        d_s = torch.zeros_like(s) if d_s is None else d_s
        g = (new.s_tilde.reshape(M, -1) @ d_s.reshape(-1)).unsqueeze(-1) * new.theta_tilde + d_th
        assert tuple(new.s_tilde.shape[1:]) == tuple(shape)
        return new, g.detach()


def test_post_update_form_is_a_variant_checked_in_expectation() -> None:
    res = _run("uoro.algorithm-1-conformance", PostUpdate)
    assert res.verdict is Verdict.PASS, res.summary
    assert "VARIANT" in res.summary and "in expectation" in res.summary


def test_stale_rho0_is_a_variance_anomaly_not_bias() -> None:
    res = _run("uoro.variance-matches-algorithm-1", get_mutant("uoro.rho0-previous-step").part)
    assert res.verdict is Verdict.FAIL
    assert "VARIANCE ANOMALY (the second moment differs" in res.summary
