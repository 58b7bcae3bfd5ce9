"""Lemma 1, Lemma 2 (truncated model and truncated BPTT) and the k·λ^k rate on ≥ 200 random contractive instances.

Miller & Hardt, Lemma 1 and Lemma 2 with the explicit constants of theory.truncation /
theory.instances. Hypothesis draws λ ∈ [0.3, 0.95], tanh or linear, n ≤ 6, d ≤ 3,
T ∈ [16, 32] (``verify.testing.strategies.contractive_problems``; derandomized under the ``ci``
profile). Each instance must satisfy every bound at every k (errors are compared with
bound + predicted round-off budget), and the confidence bound of the fitted slope of
log(e_k/k) must reach log λ or lie below. About 450 fits are tested, so each is decided
with a one-sided bound at the Bonferroni level 1e-3/450 (family-wise false-fail rate
1e-3, DESIGN 'multiplicity control'); the unadjusted 99% intervals above log λ are
counted and printed. A bound above log λ counts against the rate only on a window where
λ^k falls by at least two decades (the premise of a rate test: on a shorter window the
fluctuations of ‖h_{T−k}‖ dominate the trend); otherwise the fit is not informative.
Because T ≤ 32 leaves no such window for λ close to 1, a second test draws λ ∈ [0.8, 0.95]
with long sequences. The tightness distribution is printed at the end (run with ``-s``)
and asserted to be sane.
"""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from theory.claims.truncation import RATE_ALPHA
from verify.testing.strategies import contractive_problem, contractive_problems
from verify.truncation import FIB, evaluate_instance, fit_log_rate, rate_verdict

N_EXAMPLES = 200
N_HIGH = 25
#: 225 instances take ~20 s on a quiet core: the module runs in .ci/run's slow step, in one process (``-n 0``: the
#: summary reads what the property tests recorded in that process); the catalog's truncation.* claims check the same
#: bounds on their fixed problems in the default run (tests/truncation/test_checks.py)
pytestmark = pytest.mark.slow
ALPHA = RATE_ALPHA / (2 * (N_EXAMPLES + N_HIGH))  # Bonferroni over every fit of this module
_RECORD: list[dict[str, float]] = []
_HIGH: list[float] = []
_UNADJUSTED: list[str] = []


@settings(max_examples=examples(N_EXAMPLES))
@given(contractive_problems(lam_min=0.3, lam_max=0.95, min_T=16, max_T=32))
def test_bounds_hold_with_explicit_constants(case) -> None:  # type: ignore[no-untyped-def]
    ev = evaluate_instance(case.problem, case.theta, label=repr(case), forms=("gamma",), state_ks=FIB)
    row: dict[str, float] = {"lam": ev.lam, "kind": float(ev.kind == "linear")}
    for name in ("state", "model", "tbptt"):
        s = ev.series[name]
        k, err, bound = s.worst
        assert s.holds, f"{name} bound violated at k={k}: error {err:.3e} > bound {bound:.3e} + budget {s.budget:.1e}"
        row[f"{name}_tightness"] = s.tightness
    row["gamma_tightness"] = ev.series["model:gamma"].tightness
    for name in ("model", "tbptt"):
        s = ev.series[name]
        fit = fit_log_rate(s.ks, s.errors, 10 * s.budget)
        if fit is None or rate_verdict(fit, math.log(ev.lam), ALPHA) == "not informative":
            row[f"{name}_fit"] = math.nan
            continue
        assert rate_verdict(fit, math.log(ev.lam), ALPHA) == "consistent", (
            f"{name}: slope {fit.slope:.3f}, adjusted lower bound {fit.lower(ALPHA):.3f} "
            f"above log lambda {math.log(ev.lam):.3f}"
        )
        if rate_verdict(fit, math.log(ev.lam)) != "consistent":
            _UNADJUSTED.append(f"{case!r}/{name}: 99% CI low - log lambda = {fit.lo - math.log(ev.lam):.4f}")
        row[f"{name}_fit"] = fit.hi - math.log(ev.lam)
    _RECORD.append(row)


@st.composite
def _long_high_lambda(draw):  # type: ignore[no-untyped-def]
    lam = draw(st.floats(0.8, 0.95))
    kind = draw(st.sampled_from(("elman-tanh", "linear")))
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    T = math.ceil(2.5 * math.log(10) / -math.log(lam)) + draw(st.integers(2, 20))  # λ^T ~ 10^-2.5 or less
    seed = draw(st.integers(0, 2**31 - 1))
    P, th = contractive_problem(kind, lam=lam, n=n, d=d, T=T, generator=torch.Generator().manual_seed(seed))
    return P, th, f"{kind} lam={lam:.3f} n={n} d={d} T={T} seed={seed}"


@settings(max_examples=examples(N_HIGH))
@given(_long_high_lambda())
def test_rate_for_lambda_close_to_one_on_long_sequences(inst) -> None:  # type: ignore[no-untyped-def]
    P, th, label = inst
    ev = evaluate_instance(P, th, ks=list(range(1, P.T, 3)), parts=("model", "tbptt"), with_rate=False)
    for name in ("model", "tbptt"):
        s = ev.series[name]
        assert s.holds, label
        fit = fit_log_rate(s.ks, s.errors, 10 * s.budget)
        assert fit is not None, label
        assert rate_verdict(fit, math.log(ev.lam), ALPHA) == "consistent", (
            f"{label} {name}: slope {fit.slope:.3f}, adjusted lower bound {fit.lower(ALPHA):.3f}, "
            f"log lambda {math.log(ev.lam):.3f}"
        )
        if rate_verdict(fit, math.log(ev.lam)) != "consistent":
            _UNADJUSTED.append(f"{label}/{name}: 99% CI low - log lambda = {fit.lo - math.log(ev.lam):.4f}")
        _HIGH.append(fit.hi - math.log(ev.lam))


def test_tightness_summary() -> None:
    """Runs after the property tests (definition order): summarises what they measured."""
    if not _RECORD:  # the property test was deselected
        return
    assert len(_RECORD) >= min(examples(N_EXAMPLES), 200) * 0.99
    lines = [
        f"{len(_RECORD)} instances, lambda in [{min(r['lam'] for r in _RECORD):.3f}, "
        f"{max(r['lam'] for r in _RECORD):.3f}]"
    ]
    for key in ("state_tightness", "model_tightness", "gamma_tightness", "tbptt_tightness"):
        vals = [r[key] for r in _RECORD if math.isfinite(r[key])]
        lines.append(f"{key}: median {statistics.median(vals):.3e}, worst {max(vals):.3e}, best {min(vals):.3e}")
        assert max(vals) <= 1.0
    for key in ("model_fit", "tbptt_fit"):
        vals = [r[key] for r in _RECORD if math.isfinite(r[key])]
        share = len(vals) / len(_RECORD)
        lines.append(
            f"{key}: {len(vals)} conclusive fits ({share:.0%}), all consistent (Bonferroni); "
            f"CI high - log lambda median {statistics.median(vals):.3f}"
        )
        assert share >= 0.8
    if _HIGH:
        lines.append(
            f"lambda in [0.8, 0.95], long T: {len(_HIGH)} fits, all consistent; "
            f"CI high - log lambda median {statistics.median(_HIGH):.3f}"
        )
    lines.append(f"unadjusted 99% CIs above log lambda: {len(_UNADJUSTED)}")
    lines.extend(f"  {u}" for u in _UNADJUSTED)
    print("\n" + "\n".join(lines))
