"""The reference self-check passes correct references and FAILs every broken adjoint."""

from __future__ import annotations

import pytest
import torch

from verify.impl.mutants.reference import MUTANTS
from verify.oracles.selfcheck import reference_self_check
from verify.testing.strategies import CELL_KINDS, random_problem


@pytest.mark.parametrize("kind", CELL_KINDS)
def test_self_check_passes_correct_references(kind: str) -> None:
    gen = torch.Generator().manual_seed(1)
    P, th = random_problem(kind, T=10, loss="cross-entropy", generator=gen)
    rep = reference_self_check(P, th, generator=gen, full_jacobian_max_p=80)
    assert rep.ok, rep.format()
    names = [c.name for c in rep.comparisons]
    assert any("Richardson" in n for n in names)
    assert any("complex step" in n for n in names) == (kind != "elman-relu")
    assert "overall: PASS" in rep.format()


ADJOINT = [m for m in MUTANTS if m.field == "adjoint"]
INFLUENCE = [m for m in MUTANTS if m.field == "influence"]


@pytest.mark.parametrize("mutant", ADJOINT, ids=[m.name for m in ADJOINT])
@pytest.mark.parametrize("kind", ["elman-tanh", "lstm"])
def test_self_check_fails_broken_adjoint(mutant: object, kind: str) -> None:
    gen = torch.Generator().manual_seed(2)
    P, th = random_problem(kind, T=8, generator=gen)
    rep = reference_self_check(P, th, generator=gen, adjoint=mutant.part)  # type: ignore[attr-defined]
    assert not rep.ok
    failed = {c.family for c in rep.comparisons if not c.passed}
    # the adjoint pair sees every mutant; the independent methods see it too
    assert "adjoint" in failed and "finite-difference" in failed
    assert "overall: FAIL" in rep.format()


@pytest.mark.parametrize("mutant", INFLUENCE, ids=[m.name for m in INFLUENCE])
def test_self_check_fails_broken_influence(mutant: object) -> None:
    gen = torch.Generator().manual_seed(2)
    P, th = random_problem("elman-tanh", T=8, generator=gen)
    rep = reference_self_check(P, th, generator=gen, influence=mutant.part)  # type: ignore[attr-defined]
    assert not rep.ok
    failed = {c.family for c in rep.comparisons if not c.passed}
    # reverse vs forward mode and complex step vs influence see it; the gradient pairs do not use it
    assert "influence" in failed and not failed & {"adjoint", "finite-difference"}


def test_a_shared_memo_changes_no_comparison() -> None:
    """The memo the reference claims share (conditioning, BPTT gradient; issue 42) gives every family the comparisons
    it computes alone -- and a broken adjoint still FAILs with the memo filled by a correct run."""
    P, th = random_problem("lstm", n=3, d=2, T=6, k=2, generator=torch.Generator().manual_seed(4))
    memo: dict[str, object] = {}
    for family in ("adjoint", "influence", "complex-step", "finite-difference"):
        alone = reference_self_check(P, th, generator=torch.Generator().manual_seed(1), families=(family,))
        shared = reference_self_check(
            P, th, generator=torch.Generator().manual_seed(1), families=(family,), shared=memo
        )
        assert [(c.name, c.error, c.budget) for c in shared.comparisons] == [
            (c.name, c.error, c.budget) for c in alone.comparisons
        ], family
    assert set(memo) == {"conditioning", "bptt"}
    for mutant in ADJOINT:
        rep = reference_self_check(P, th, generator=torch.Generator().manual_seed(1), families=("adjoint",),
                                   adjoint=mutant.part, shared=memo)  # type: ignore[attr-defined]  # fmt: skip
        assert not rep.ok, mutant.name
