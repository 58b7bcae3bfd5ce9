"""theory/fpp_kkt.py: Prop. 2 re-derived with sympy and compared with the numerical KKT quantities."""

from __future__ import annotations

import pytest
import sympy as sp
import torch
from torch.func import grad

from theory.fpp_kkt import kkt_system, prop2_residuals, verify_prop2
from verify.fpp.kkt import lagrangian, lemma1_multipliers, rnn_gradient
from verify.fpp.objective import FPPVariables
from verify.model.cells import ElmanCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem


@pytest.mark.parametrize("kind", ["generic", "elman"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_prop2_holds_symbolically(kind, n) -> None:
    assert verify_prop2(n, kind)


def test_wrong_multipliers_break_the_identity() -> None:
    """Negative control: with the full-loss adjoint as multipliers the s-equations do not vanish."""
    sysm = kkt_system(2, "elman")
    z = sp.Symbol("z")
    own = [sp.diff((sysm.params[3] * z + sysm.params[4] - sysm.y[j - 1]) ** 2 / 2, z).subs(z, sysm.s[j])
           for j in (1, 2)]  # fmt: skip
    wrong = {sysm.lam[j]: sysm.lemma1[j] - own[j] for j in range(2)}
    point = {sym: sp.Rational(k + 3, 7) for k, sym in enumerate((*sysm.params, sysm.s[0], *sysm.o, *sysm.y))}
    res = [float(sysm.feasible(e.subs(wrong)).subs(point).evalf()) for e in sysm.kkt12_states]
    assert max(abs(r) for r in res) > 1e-3
    assert all(r == 0 for group in prop2_residuals(2, "elman").values() for r in group)


def _numeric_problem(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, generator=g, dtype=torch.float64)
    y = torch.randn(n, 1, generator=g, dtype=torch.float64)
    s0 = torch.randn(1, generator=g, dtype=torch.float64)
    P = Problem(ElmanCell(1, 1, "tanh"), LinearReadout(1, 1), SquaredError(), x, y, s0)
    theta = torch.randn(P.p, generator=g, dtype=torch.float64)
    return P, theta


@pytest.mark.parametrize("n", [1, 2, 3])
def test_symbolic_kkt_matches_the_numerical_one(n) -> None:
    """Evaluate the sympy expressions (ElmanCell(1,1) + LinearReadout + SquaredError) against torch."""
    sysm = kkt_system(n, "elman")
    P, theta = _numeric_problem(n, 10 + n)
    lay = P.layout
    W, U, b = (float(theta[lay[f"cell.{k}"].slice]) for k in ("W", "U", "b"))
    V, c = float(theta[lay["readout.V"].slice]), float(theta[lay["readout.c"].slice])
    S = P.rollout(theta)
    subs = dict(zip(sysm.params, (W, U, b, V, c), strict=True))
    subs.update({sysm.s[j]: float(S[j]) for j in range(n + 1)})
    subs.update({sysm.o[i]: float(P.inputs[i]) for i in range(n)})
    subs.update({sysm.y[i]: float(P.targets[i]) for i in range(n)})
    # eq. (13)-(15) against autograd of E
    kkt10 = torch.tensor([float(e.subs(subs)) for e in sysm.kkt10], dtype=torch.float64)
    assert torch.allclose(kkt10, rnn_gradient(P, theta, P.s0), rtol=1e-12, atol=1e-14)
    # Lemma 1 against the recursion
    lam = lemma1_multipliers(P, theta, S)
    sym_lam = torch.tensor([float(e.subs(subs)) for e in sysm.lemma1], dtype=torch.float64)
    assert torch.allclose(sym_lam, lam[1:, 0], rtol=1e-12, atol=1e-14)
    # the Lagrangian's gradient (17)-(18) with those multipliers
    subs.update({sysm.lam[j]: float(lam[j + 1, 0]) for j in range(n)})
    g_th, g_S = grad(lambda th, SS: lagrangian(P, FPPVariables(th, SS), lam), argnums=(0, 1))(theta, S)
    sym_par = torch.tensor([float(e.subs(subs)) for e in sysm.kkt12_params], dtype=torch.float64)
    assert torch.allclose(sym_par, torch.cat([g_th, g_S[0]]), rtol=1e-12, atol=1e-14)
    sym_states = torch.tensor([float(e.subs(subs)) for e in sysm.kkt12_states], dtype=torch.float64)
    assert torch.allclose(sym_states, g_S[1:, 0], rtol=0, atol=1e-14)
