r"""The contraction checker's validity (Miller & Hardt, "Stable Recurrent Models", eq. (2), §6, Prop. 5).

A contraction certificate (:mod:`verify.oracles.contraction`) claims
:math:`\|\phi_w(h, x) - \phi_w(h', x)\| \le \lambda\|h - h'\|`; :func:`contraction_witness` searches
for the largest expansion ratio an instance shows (adversarial pairs along the top singular vector
of W, pairs around the trajectory, random pairs; LSTM: pairs in the reachable box of Lemma 5), so a
certificate whose λ lies below a witness is invalid. :func:`checker_suite` is the suite the
``truncation.assumption-checker`` check decides on; :func:`run_checker` runs a certificate on it.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from verify.errors import AssumptionViolated
from verify.model.builders import contractive_problem, make_cell
from verify.model.cells import ElmanCell, LinearCell, LSTMCell
from verify.model.losses import LinearReadout, SquaredError
from verify.model.problem import Problem
from verify.oracles.contraction import ContractionCertificate
from verify.truncation.fixtures import prop3_problem
from verify.truncation.instances import CertFn

__all__ = ["CheckerCase", "checker_suite", "contraction_witness", "run_checker"]

#: (label, problem, θ, expected contractive? -- None when only the refusal is expected)
CheckerCase = tuple[str, Problem, torch.Tensor, bool | None]


def _ratio(
    problem: Problem, th: torch.Tensor, ordv: float, s: torch.Tensor, s2: torch.Tensor, x: torch.Tensor
) -> float:
    """Largest ‖f(s, x) − f(s', x)‖ / ‖s − s'‖ over a batch of pairs (norm order ``ordv``)."""
    with torch.no_grad():
        num = torch.linalg.vector_norm(problem.transition(th, s, x) - problem.transition(th, s2, x), ord=ordv, dim=-1)
        den = torch.linalg.vector_norm(s - s2, ord=ordv, dim=-1)
    return float((num / den).max())


def _elman_witness(
    problem: Problem, th: torch.Tensor, traj: torch.Tensor, ordv: float, gen: torch.Generator, pairs: int
) -> float:
    """Elman/linear: the top right singular vector of W at x = 0, pairs around the trajectory, random pairs."""
    worst = 0.0
    n = problem.n
    zero_x = torch.zeros(problem.cell.input_size, dtype=torch.float64)
    W = problem.cell_params(th)["W"].detach()
    v = torch.linalg.svd(W).Vh[0]
    for eps in (1e-6, 1e-3):
        worst = max(worst, _ratio(problem, th, ordv, eps * v, -eps * v, zero_x))
    idx = torch.randint(0, problem.T, (pairs,), generator=gen)
    base = traj[idx]
    d = torch.randn(pairs, n, generator=gen, dtype=torch.float64)
    worst = max(worst, _ratio(problem, th, ordv, base + 1e-3 * d, base - 1e-3 * d, problem.inputs[idx]))
    s1 = torch.randn(pairs, n, generator=gen, dtype=torch.float64)
    s2 = torch.randn(pairs, n, generator=gen, dtype=torch.float64)
    return max(worst, _ratio(problem, th, ordv, s1, s2, problem.inputs[idx]))


def _lstm_witness(
    problem: Problem, th: torch.Tensor, cert: ContractionCertificate, ordv: float, gen: torch.Generator, pairs: int
) -> float:
    """LSTM: pairs in the reachable box (|h| ≤ 1, |c| ≤ the Lemma 5 bound) at the problem's inputs."""
    worst = 0.0
    assert isinstance(problem.cell, LSTMCell)
    H = problem.cell.hidden
    cb = cert.cell_bound
    cmax = max(1.0, cb) if cb is not None and math.isfinite(cb) else 1.0
    idx = torch.randint(0, problem.T, (pairs,), generator=gen)
    for scale in (1.0, 1e-3):
        c1 = cmax * (2 * torch.rand(pairs, H, generator=gen, dtype=torch.float64) - 1)
        h1 = 2 * torch.rand(pairs, H, generator=gen, dtype=torch.float64) - 1
        dc = scale * (2 * torch.rand(pairs, H, generator=gen, dtype=torch.float64) - 1)
        dh = scale * (2 * torch.rand(pairs, H, generator=gen, dtype=torch.float64) - 1)
        s1 = torch.cat([c1, h1], -1)
        s2 = torch.cat([(c1 + dc).clamp(-cmax, cmax), (h1 + dh).clamp(-1, 1)], -1)
        worst = max(worst, _ratio(problem, th, ordv, s1, s2, problem.inputs[idx]))
    return worst


def contraction_witness(
    problem: Problem, theta: torch.Tensor, cert: ContractionCertificate, gen: torch.Generator, pairs: int = 64
) -> float:
    r"""Largest observed expansion ratio over adversarial and random pairs, in the certificate's norm.

    .. math:: \max \|f(s, x) - f(s', x)\| / \|s - s'\|

    Elman/linear: the top right singular vector v of W at x = 0 (:math:`s = \epsilon v`,
    :math:`s' = -\epsilon v`, where :math:`\tanh' \approx 1`), pairs around the trajectory's
    states, random pairs. LSTM: pairs in the reachable box (|h| ≤ 1, |c| ≤ the Lemma 5
    bound) at the problem's inputs. A valid certificate has witness ≤ λ.
    """
    th = theta.detach()
    with torch.no_grad():
        traj = problem.rollout(th)
    ordv = math.inf if cert.norm == "linf" else 2
    if isinstance(problem.cell, ElmanCell | LinearCell):
        return _elman_witness(problem, th, traj, ordv, gen, pairs)
    if isinstance(problem.cell, LSTMCell):
        return _lstm_witness(problem, th, cert, ordv, gen, pairs)
    return 0.0


def _norm_cases(gen: torch.Generator) -> list[CheckerCase]:
    """Linear and tanh with ‖W‖ = λ < 1, with ‖W‖ = 1.5, and a non-normal W (ρ = 0.6, ‖W‖₂ = 1.2)."""
    out: list[CheckerCase] = []
    for kind, lam in (("linear", 0.5), ("elman-tanh", 0.9), ("linear", 0.99)):
        P, th = contractive_problem(kind, lam=lam, n=4, d=2, T=20, generator=gen)
        out.append((f"{kind} lam={lam}", P, th, True))
    for kind in ("linear", "elman-tanh"):
        P, th = contractive_problem(kind, lam=0.5, n=4, d=2, T=20, generator=gen)
        th = th.clone()
        th[P.layout["cell.W"].slice] *= 3.0  # ||W|| = 1.5
        out.append((f"{kind} ||W||=1.5", P, th, False))
    # non-normal W: spectral radius 0.6, ||W||_inf = 0.6, ||W||_2 = 1.2
    P, th = contractive_problem("linear", lam=0.5, n=4, d=2, T=20, generator=gen)
    th = th.clone()
    W = torch.zeros(4, 4, dtype=torch.float64)
    W[:, 0] = 0.6
    th[P.layout["cell.W"].slice] = W.reshape(-1)
    out.append(("linear non-normal rho=0.6 ||W||_2=1.2", P, th, False))
    return out


def _gated_cases(gen: torch.Generator) -> list[CheckerCase]:
    """An LSTM satisfying Prop. 5 (small recurrent weights, forget bias −3), a random LSTM, a GRU (no certificate)."""
    x = torch.randn(20, 2, generator=gen, dtype=torch.float64)
    P = Problem(
        LSTMCell(3, 2),
        LinearReadout(3, 1),
        SquaredError(),
        x,
        torch.zeros(20, 1, dtype=torch.float64),
        torch.zeros(6, dtype=torch.float64),
    )
    prm = {
        "cell.W": 0.05 * torch.randn(12, 3, generator=gen, dtype=torch.float64),
        "cell.U": 0.3 * torch.randn(12, 2, generator=gen, dtype=torch.float64),
        "cell.b": torch.cat([torch.full((3,), -3.0), torch.zeros(9)]).double(),
        "readout.V": torch.ones(1, 3, dtype=torch.float64),
        "readout.c": torch.zeros(1, dtype=torch.float64),
    }
    out: list[CheckerCase] = [("lstm Prop. 5", P, P.layout.flatten(prm), True)]
    prm2 = dict(
        prm,
        **{
            "cell.W": 1.5 * torch.randn(12, 3, generator=gen, dtype=torch.float64),
            "cell.b": torch.zeros(12, dtype=torch.float64),
        },
    )
    out.append(("lstm large W", P, P.layout.flatten(prm2), False))
    Pg = Problem(
        make_cell("gru", 3, 2),
        LinearReadout(3, 1),
        SquaredError(),
        x,
        torch.zeros(20, 1, dtype=torch.float64),
        torch.zeros(3, dtype=torch.float64),
    )
    out.append(("gru (no certificate)", Pg, Pg.init_theta(gen), None))
    return out


def checker_suite(gen: torch.Generator) -> list[CheckerCase]:
    """(label, problem, θ, expected contractive?) -- None when only the refusal is expected; Prop. 3's a = 2 last."""
    out = _norm_cases(gen) + _gated_cases(gen)
    Pr, thr = prop3_problem(2.0, 10)
    out.append(("prop3 a=2", Pr, thr, False))
    return out


def _certificate_row(label: str, cert: ContractionCertificate, wit: float, expected: bool | None) -> dict[str, Any]:
    limit = cert.lam * (1 + 1e-9) + 1e-12  # a certified factor must bound every observed ratio (up to round-off)
    valid = wit <= limit
    decided_ok = expected is None or cert.contractive == expected
    return {
        "instance": label,
        "decision": "contractive" if cert.contractive else "refused",
        "lam": cert.lam,
        "norm": cert.norm,
        "iterations": cert.iterations,
        "witness": wit,
        "witness/lam": wit / cert.lam if cert.lam > 0 else math.nan,
        "limit/lam": limit / cert.lam if cert.lam > 0 else math.nan,  # the largest valid witness/lam
        "valid": valid,
        "ok": valid and decided_ok,
        "method": cert.method,
    }


def run_checker(
    certificate: CertFn, suite: list[CheckerCase], gen: torch.Generator
) -> tuple[bool, list[dict[str, Any]]]:
    """``certificate`` on every case of ``suite``: valid (no witness above λ) and deciding as expected.

    A refusal (AssumptionViolated) is right only where no certificate is expected. Returns
    (every case right, one row per case).
    """
    rows, ok = [], True
    for label, P, th, expected in suite:
        try:
            cert = certificate(P, th)
        except AssumptionViolated as exc:
            refused_ok = expected is None
            ok = ok and refused_ok
            rows.append({"instance": label, "decision": "no certificate", "ok": refused_ok, "detail": str(exc)})
            continue
        row = _certificate_row(label, cert, contraction_witness(P, th, cert, gen), expected)
        ok = ok and row["ok"]
        rows.append(row)
    return ok, rows
