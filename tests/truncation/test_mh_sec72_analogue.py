"""The synthetic analogue of Miller & Hardt §7.2 (arXiv:1805.10369): its measurements against independent ones."""

from __future__ import annotations

import pytest
import torch

from verify.errors import InvalidArgument
from verify.model.builders import random_problem
from verify.oracles.bptt import truncated_model_states
from verify.rtrl.mh_sec72 import AnalogueSetup, input_sensitivity, run_analogue, truncated_outputs


def _problem() -> tuple[object, torch.Tensor]:
    return random_problem("elman-tanh", n=3, d=2, T=12, k=1, batch=(2,), generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("k", [1, 3, 12, 20])
def test_truncated_outputs_match_the_oracle_states(k: int) -> None:
    P, th = _problem()
    P = P.with_sequence(P.inputs, P.targets, torch.zeros_like(P.s0))  # the analogue's students start from 0
    want = P.output(th, truncated_model_states(P, th, k))
    assert torch.allclose(truncated_outputs(P, th, k), want, rtol=0, atol=1e-13)


def test_input_sensitivity_matches_the_full_jacobian() -> None:
    P, th = _problem()

    def outputs(x: torch.Tensor) -> torch.Tensor:
        Px = P.with_sequence(x, P.targets)
        return Px.output(th, Px.rollout(th)[1:])[..., 0]  # (T, B)

    J = torch.autograd.functional.jacobian(outputs, P.inputs)  # (T, B, T, B, d)
    T, B = J.shape[:2]
    for i in (1, 2, 5):
        norms = [float(torch.linalg.vector_norm(J[t + i, b, t, b])) for t in range(T - i) for b in range(B)]
        assert input_sensitivity(P, th, 5)[i - 1] == pytest.approx(sum(norms) / len(norms), rel=1e-12)


def test_tiny_analogue_runs_and_the_stable_model_is_stable() -> None:
    res = run_analogue(AnalogueSetup(n=4, sequences=2, T=30, steps=4, ks=(2, 40), i_max=5))
    assert res["finite"] and res["spectral_norm_W"]["stable"] <= 1.0 + 1e-9
    assert len(res["sensitivity"]["trained"]) == 5 and len(res["distance_to_full"]["2"]) == 4
    assert max(res["distance_to_full"]["40"]) < 1e-10  # k >= T: the truncated model is the full one
    assert "analogue" in res["analogue"]


@pytest.mark.parametrize(("kw", "arg"), [({"T": 0}, "T"), ({"i_max": 200}, "i_max"), ({"ks": (0,)}, "ks")])
def test_bad_setup_names_the_argument(kw: dict[str, object], arg: str) -> None:
    with pytest.raises(InvalidArgument, match=arg):
        AnalogueSetup(**kw)  # type: ignore[arg-type]
