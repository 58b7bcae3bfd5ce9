"""The domain runner of ``uoro.influence-balancing-learning`` (verify.uoro.influence_learning)."""

from __future__ import annotations

import pytest
import torch

from verify.checks.uoro_learning import check_influence_balancing_learning, judge_uoro
from verify.errors import InvalidArgument
from verify.estimators.tbptt import TBPTT
from verify.estimators.uoro import UORO
from verify.uoro import influence_learning as il

SMALL = il.LearningSetup(23, 10, 300, 3e-4, 10, 1)


def test_optimum_theta_is_one_over_4p_minus_2n() -> None:
    assert il.optimum_theta(23, 10) == pytest.approx(-1 / 6, rel=1e-15)
    with pytest.raises(InvalidArgument, match="p"):
        il.optimum_theta(4, 2)


def test_frozen_learner_never_moves() -> None:
    c = il.learning_curve(il.frozen(UORO()), SMALL, 0)
    assert c.theta == 0.0 and c.diverged_at is None
    # θ = 0 from s_0 = 0: s stays 0 and every online loss is exactly 1/2
    assert float(c.losses.min()) == float(c.losses.max()) == 0.5


def test_truncated_bptt_moves_away_and_is_deterministic() -> None:
    a = il.learning_curve(TBPTT(10), SMALL, 0)
    b = il.learning_curve(TBPTT(10), SMALL, 5)
    assert a.theta == b.theta > 0  # wrong sign: θ grows away from θ* < 0
    assert il.final_loss(a, 0.2) > float(a.losses[:60].mean())


def test_divergence_stops_the_run() -> None:
    fast = il.LearningSetup(23, 10, 3000, 0.5, 10, 1)
    c = il.learning_curve(TBPTT(10), fast, 0)
    assert c.diverged_at is not None and c.diverged_at < 3000
    assert float(c.losses[c.diverged_at - 1 :].min()) == il.DIVERGED_LOSS


def test_bad_seed_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="seed"):
        il.learning_curve(UORO(), SMALL, -1)


def test_batched_uoro_is_the_uoro_under_test_on_the_same_signs() -> None:
    d = il.conformance(UORO(), SMALL, 3, steps=200)
    assert d["theta"] < 1e-12 and d["loss"] < 1e-12 * max(1.0, d["loss_scale"])


def test_conformance_catches_a_broken_uoro() -> None:
    # theta~ scaled by 2 (a mutant of eq. (6)): the batched runs are no longer that estimator
    import dataclasses

    d = il.conformance(dataclasses.replace(UORO(), theta_tilde_scale=2.0), SMALL, 3, steps=200)
    assert d["theta"] > 1e-6


def test_batched_runs_are_independent_and_seeded() -> None:
    a = il.uoro_runs(SMALL, [4, 5])
    b = il.uoro_runs(SMALL, [5])
    assert torch.equal(a.losses[1], b.losses[0]) and float(a.theta[1]) == float(b.theta[0])
    assert not torch.equal(a.losses[0], a.losses[1])


def test_broken_learners_fail_the_convergence_criterion_by_construction() -> None:
    """The controls of the claim: frozen UORO stays at loss 1/2, sign-flipped UORO does not descend; both fail L1."""
    setup = il.LearningSetup(23, 10, 3000, 3e-4, 10, 1)
    r = il.uoro_runs(setup, [0, 1, 2, 3, 4, 5], factor=[0.0] * 3 + [-1.0] * 3)
    frozen = [il.final_loss(r.curve(i), 0.2) for i in range(3)]
    flipped = [il.final_loss(r.curve(i), 0.2) for i in range(3, 6)]
    assert frozen == [0.5, 0.5, 0.5]
    assert sorted(flipped)[1] > 0.3  # gradient ascent: the median run is no closer than the start (loss 1/2)
    assert not judge_uoro(frozen)[0] and not judge_uoro(flipped)[0]


def test_bad_factor_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="factor"):
        il.uoro_runs(SMALL, [0, 1], factor=[1.0])


@pytest.mark.slow
def test_claim_passes_at_ci_seeds_0_to_9() -> None:
    from verify.config import RunConfig

    verdicts = [check_influence_balancing_learning(RunConfig(seed=s)) for s in range(10)]
    assert all(v.verdict == "PASS" for v in verdicts), [v.summary for v in verdicts if v.verdict != "PASS"]
    assert all(c.observed == "FAIL" for v in verdicts for c in v.controls)


def _run_with(uoro: object) -> object:
    from theory.catalog import get_claim
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check

    return run_check(
        get_claim("uoro.influence-balancing-learning"),
        RunConfig(implementations=DEFAULT.with_part("uoro", "uoro", uoro)),
    )


def test_a_valid_uoro_variant_the_batched_runs_do_not_model_is_skipped_not_accused() -> None:
    """Post-update g~ (App. A) and a UORO without a noise hook: SKIPPED with the reason, never a FAIL."""
    from verify.estimators.uoro import UORO
    from verify.verdict import Verdict

    class PostUpdate(UORO):
        gtilde = "post"

    res = _run_with(PostUpdate)
    assert res.verdict is Verdict.SKIPPED and "post-update form" in res.summary, res.summary  # type: ignore[attr-defined]

    class NoHook:
        """The toolkit's UORO without the noise-hook methods: it cannot take a table of signs."""

        def __init__(self, *a: object, **k: object) -> None:
            self._inner = UORO(*a, **k)  # type: ignore[arg-type]

        def __getattr__(self, name: str) -> object:
            if name in ("noise_shape", "noise_draws", "with_noise"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    res = _run_with(NoHook)
    assert res.verdict is Verdict.SKIPPED and "noise hook" in res.summary, res.summary  # type: ignore[attr-defined]


def test_a_correct_uoro_with_its_own_noise_layout_passes() -> None:
    """The example user UORO (noise_shape = (n,), not the toolkit's (rank, n)) gets the same signs and PASSes."""
    from verify.examples.uoro import MyUORO
    from verify.verdict import Verdict

    res = _run_with(MyUORO)
    assert res.verdict is Verdict.PASS, res.summary  # type: ignore[attr-defined]
