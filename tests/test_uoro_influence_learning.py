"""The domain runner of ``uoro.influence-balancing-learning`` (verify.uoro.influence_learning)."""

from __future__ import annotations

import pytest

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
