"""Everything reaches the implementation under test (issue 21 item 6): the GPU-scale unbiasedness test, the
operating characteristic of the UORO kill table and the FPP §5 reproductions run ``config.impls``, not the
toolkit's own classes -- a user's correct part gives the toolkit's result, a broken one a different one."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import torch

import verify.impl
from theory.catalog import all_claims
from verify.checks import uses
from verify.checks.uoro_common import options
from verify.config import RunConfig
from verify.errors import NotApplicable
from verify.estimators import UORO
from verify.examples.uoro import MyUORO
from verify.fpp.batched import run_online_batched
from verify.fpp.broken_learners import frozen_learner
from verify.fpp.reproduction import Block, fpp_learner, run_block
from verify.gpu.unbiasedness import ScaleSetup, _probe, gpu_scale_unbiasedness, scale_problem
from verify.impl import DEFAULT, FPPImpl, signatures
from verify.impl.loader import load_implementations
from verify.impl.mutants import get as get_mutant
from verify.impl.mutants.estimators import ZeroOne
from verify.run.check import run_check
from verify.uoro.cases import problem_case
from verify.uoro.power import POWER_FRACTIONS, power_curve
from verify.verdict import Verdict


def _zero_one_uoro() -> MyUORO:
    """A user's UORO with a bug: ν drawn from {0, 1} through its noise hook (biased)."""
    return MyUORO().with_noise(ZeroOne())


# ------------------------------------------------------------------ GPU-scale unbiasedness (on the CPU)
_SMALL = ScaleSetup(device=torch.device("cpu"), n=3, T=3, max_samples=50_000, delta=0.1, directions=4, chunk=2048)


@pytest.mark.statistical
def test_gpu_unbiasedness_runs_the_estimator_it_is_given() -> None:
    """The toolkit's UORO (fused) and the user's MyUORO (own steps) PASS; the user's {0,1}-noise UORO FAILs.

    False-fail rate: α = 1e-3 per correct run (:class:`ScaleSetup`'s default).
    """
    runs = {
        name: gpu_scale_unbiasedness(est, torch.Generator().manual_seed(1), _SMALL)
        for name, est in (("toolkit", UORO()), ("mine", MyUORO()), ("mine-zero-one", _zero_one_uoro()))
    }
    assert runs["toolkit"].sampling["path"] == "fused"
    assert runs["mine"].sampling["path"].startswith("the estimator's own steps")
    assert runs["toolkit"].result.verdict is Verdict.PASS and runs["mine"].result.verdict is Verdict.PASS
    assert runs["mine-zero-one"].result.verdict is Verdict.FAIL


class _NumpyUORO(MyUORO):
    """A user's UORO that goes through numpy: it runs on the CPU only."""

    def step(self, problem: Any, theta: torch.Tensor, state: Any, t: int, rng: torch.Generator) -> Any:
        new, g = super().step(problem, theta, state, t, rng)
        return new, torch.from_numpy(g.numpy().copy())


class _Broken(MyUORO):
    def step(self, problem: Any, theta: torch.Tensor, state: Any, t: int, rng: torch.Generator) -> Any:
        raise ZeroDivisionError("broken everywhere")


def test_an_estimator_that_runs_on_the_cpu_only_is_not_applicable_off_it() -> None:
    """The probe of :func:`gpu_scale_unbiasedness`: two draws on the device, and where they fail, two on the CPU.

    No CUDA here: the ``meta`` device stands in (anything fails there); the estimator-side failure on CUDA (numpy
    on a CUDA tensor) takes the same path. Runs on the CPU -> NotApplicable naming the device and the error;
    fails on the CPU too -> its own error (a broken estimator is not SKIPPED).
    """
    P, th = scale_problem(3, 3, torch.device("cpu"), torch.Generator().manual_seed(0))
    q = torch.linalg.qr(torch.randn(P.p, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64))[0]
    meta = torch.device("meta")
    with pytest.raises(NotApplicable, match=r"\(my-uoro\) runs on the CPU but not on meta: RuntimeError"):
        _probe(_NumpyUORO(), P, th, q, meta)
    with pytest.raises(ZeroDivisionError, match="broken everywhere"):
        _probe(_Broken(), P, th, q, meta)
    _probe(_NumpyUORO(), P, th, q, torch.device("cpu"))  # on the CPU it runs: no error
    cpu = ScaleSetup(device=torch.device("cpu"), n=3, T=3, max_samples=2000, delta=0.5, directions=4)
    assert gpu_scale_unbiasedness(_NumpyUORO(), torch.Generator().manual_seed(0), cpu).result.samples_used > 0


@pytest.mark.statistical
def test_gpu_unbiasedness_check_runs_config_impls() -> None:
    """The registered check (CPU stand-in) builds ``config.impls.uoro.uoro``: the user's buggy UORO FAILs, its
    control (a catalog mutant) still FAILs as expected, and the summary names what was under test."""
    opts = (("standin", True), ("n", 3), ("T", 3), ("max_samples", 20_000), ("directions", 4), ("delta", 0.1))
    impls = DEFAULT.with_part("uoro", "uoro", _zero_one_uoro)
    res = run_check(
        all_claims()["device.gpu-unbiasedness"], RunConfig(profile="full", options=opts, implementations=impls)
    )
    assert res.verdict is Verdict.FAIL, res.summary
    assert "UORO under test" in res.summary and "_zero_one_uoro" in res.summary
    assert [c.name for c in res.controls] == ["uoro.noise-zero-one"] and all(c.ok for c in res.controls)
    assert "_zero_one_uoro" in res.implementation["uoro.uoro"]
    # a factory that needs an argument the claim cannot give: SKIPPED with the reason, not a crash
    needy = DEFAULT.with_part("uoro", "uoro", lambda rank: MyUORO())
    res = run_check(
        all_claims()["device.gpu-unbiasedness"], RunConfig(profile="full", options=opts, implementations=needy)
    )
    assert res.verdict is Verdict.SKIPPED and "does not take" in (res.reason or ""), res.summary


def test_the_gpu_claim_declares_the_uoro_it_runs() -> None:
    assert "uoro.uoro" in uses("device.gpu-unbiasedness")


# ------------------------------------------------------------------ the operating characteristic
def test_power_curve_mixes_into_the_uoro_under_test() -> None:
    """MyUORO draws what the toolkit's UORO draws (same rows); a biased UORO under test shifts every row's bias."""
    case = problem_case("elman-tanh", 2, 3, 0, 410)
    bad = get_mutant("uoro.no-delta-theta").part()

    def curve(good: Any) -> list[dict[str, Any]]:
        gens = [RunConfig().generator(470 + i) for i in range(len(POWER_FRACTIONS))]  # the check's salts
        return power_curve(
            "uoro.no-delta-theta", bad, case, options(RunConfig(), "uoro.mutants-caught"), gens, 5000, good=good
        )

    ours, mine, broken = curve(UORO()), curve(MyUORO()), curve(_zero_one_uoro())
    assert [(r["verdict"], r["draws"]) for r in mine] == [(r["verdict"], r["draws"]) for r in ours]
    assert [r["relative_bias"] for r in mine] == pytest.approx([r["relative_bias"] for r in ours], rel=1e-12)
    assert all(r["good_relative_bias"] < 1e-12 for r in ours + mine)
    assert all(r["good_relative_bias"] > 0.05 for r in broken)
    # at λ = 1% the mixture's bias is the under-test UORO's own, not λ·b₁
    assert broken[-1]["relative_bias"] > 5 * ours[-1]["relative_bias"]
    assert broken[-1]["draws"] < ours[-1]["draws"]


def test_the_kill_table_declares_the_uoro_of_its_operating_characteristic() -> None:
    assert "uoro.uoro" in uses("uoro.mutants-caught")


# ------------------------------------------------------------------ the FPP learner of the §5 reproductions
_BLOCK = Block("cycleworld", "fpp", 2, (3e-2,), 200, 4, hidden=4, p=4, buffer_size=20)


def test_fpp_learner_is_a_part_with_a_documented_signature() -> None:
    assert FPPImpl().learner is fpp_learner and "fpp.learner" in signatures()
    assert "learner(model, cfg, inputs, targets, theta0, lrs, generator)" in signatures()["fpp.learner"]
    assert "``learner``" in (verify.impl.__doc__ or "")


def test_run_block_runs_the_learner_it_is_given() -> None:
    """The default is the batched engine's FPP; a user's learner runs the FPP blocks, not the rivals or controls."""
    calls: list[str] = []

    def mine(*args: Any) -> torch.Tensor:
        calls.append("mine")
        return fpp_learner(*args)

    assert run_block(_BLOCK) == run_block(_BLOCK, mine) and calls == ["mine"]
    run_block(Block("cycleworld", "tbptt", 2, (3e-2,), 50, 2, hidden=4, p=4, buffer_size=20), mine)
    run_block(
        Block("cycleworld", "fpp", 2, (3e-2,), 50, 2, hidden=4, p=4, buffer_size=20, mutant="fpp.learner-frozen"), mine
    )
    assert calls == ["mine"]  # a rival and a control are the toolkit's
    frozen = functools.partial(run_online_batched, "fpp", theta_grad=frozen_learner)
    assert run_block(_BLOCK, frozen)["online"] != run_block(_BLOCK)["online"]
    with pytest.raises(Exception, match=r"online losses of shape"):
        run_block(_BLOCK, lambda *a: torch.zeros(3))


def _verdict(claim: str, learner: Any) -> tuple[Verdict, str]:
    res = run_check(all_claims()[claim], RunConfig(implementations=DEFAULT.with_part("fpp", "learner", learner)))
    return res.verdict, res.summary


@pytest.mark.parametrize(
    "claim", ["fpp.cycleworld-reproduction", "fpp.stochasticworld-reproduction", "fpp.updates-reproduction"]
)
def test_a_learner_that_does_not_learn_cannot_pass_the_reproduction(claim: str) -> None:
    """Through ``DEFAULT.with_part("fpp", "learner", X)``: a wrapper of the toolkit's learner gives its verdict
    (PASS at ci), a frozen learner (never updates θ) FAILs the premise."""
    calls: list[int] = []

    def wrapper(*args: Any) -> torch.Tensor:
        calls.append(1)
        return fpp_learner(*args)

    verdict, summary = _verdict(claim, wrapper)
    assert verdict is Verdict.PASS and calls, summary
    frozen = functools.partial(run_online_batched, "fpp", theta_grad=frozen_learner)
    verdict, summary = _verdict(claim, frozen)
    assert verdict is Verdict.FAIL and "NOT MET" in summary, summary


def test_impl_fpp_learner_loads_from_a_file(tmp_path: Path) -> None:
    f = tmp_path / "my_fpp.py"
    f.write_text(
        "from verify.fpp.reproduction import fpp_learner\n\n"
        "def my_learner(model, cfg, inputs, targets, theta0, lrs, generator):\n"
        "    return fpp_learner(model, cfg, inputs, targets, theta0, lrs, generator)\n"
    )
    impls = load_implementations([f"fpp.learner={f}:my_learner"])
    assert impls.user_parts() == ("fpp.learner",) and impls.fpp.learner.__name__ == "my_learner"
    assert impls.source("fpp.learner") is not None


def test_the_reproductions_declare_the_fpp_learner() -> None:
    for cid in ("fpp.cycleworld-reproduction", "fpp.stochasticworld-reproduction", "fpp.updates-reproduction"):
        assert uses(cid) == ("fpp.learner",), cid
