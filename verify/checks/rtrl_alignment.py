"""The check of ``rtrl.bias-alignment``: every online algorithm's declared guarantee, measured against exact RTRL.

Decides only: the rows come from :func:`verify.estimators.alignment.axis_sweep` run on the implementations under
test -- RTRL (``rtrl.rtrl``), SnAp-1 and SnAp-2 (``rtrl.snap``), RFLO (``rtrl.rflo``), e-prop (``rtrl.eprop``),
UORO (``uoro.uoro``) and KF-RTRL (``uoro.kfrtrl``) -- on tanh Elman problems with a sparse ``W``, one axis at a
time (n, T, spectral radius, density of W). Each estimator is judged by the guarantee it *declares*:

* ``exact``: every problem's normalized bias <= 1e-11 (the design's RTRL-vs-BPTT float64 target);
* ``unbiased``: no problem's unbiasedness test (:func:`verify.stats.unbiased.fixed_sample_test`) detects a bias,
  at α = 1e-3 for the whole claim (Bonferroni over the estimators declared unbiased, then the test's own split
  over the problems and grid points); draws that are all identical are judged as a deterministic estimator's
  (the "flat draws" rule of :mod:`verify.estimators.alignment`);
* ``biased`` / ``truncated``: measured and reported (bias, alignment, intervals), no decision.

PASS when every decided estimator holds its declaration. Negative control: the mutant
:mod:`verify.impl.mutants.alignment` (SnAp-1 declared unbiased) rerun through the same sweep must FAIL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from theory.gate import planned_alpha
from verify.checks import register, result
from verify.config import RunConfig
from verify.estimators.alignment import AXES, AlignmentRow, GridPoint, alignment_figures, axis_sweep, rows_as_dicts
from verify.estimators.base import OnlineEstimator
from verify.estimators.guarantee import Guarantee, guarantee_of, with_guarantee
from verify.impl import build, precision
from verify.impl.capabilities import build_orders
from verify.impl.mutants import get as get_mutant
from verify.verdict import CheckResult, Control

CLAIM = "rtrl.bias-alignment"
EXACT = 1e-11  #: the design's float64 target for RTRL vs BPTT (DESIGN.md "Numerical policy")
ALPHA = planned_alpha(CLAIM)  #: false-FAIL rate of the unbiasedness decisions for the whole claim (theory.gate)
BETA = 1e-3  #: the confidence balls' miss rate (the stochastic rows' intervals)
CONTROL = "alignment.snap-declared-unbiased"
CENTER = GridPoint(n=6, T=8, radius=0.9, density=0.3)
#: the axes each profile sweeps (one at a time around CENTER), problems per point, draws per stochastic problem
GRID: dict[str, tuple[dict[str, tuple[float, ...]], int, int]] = {
    "ci": ({"n": (4, 6, 8), "T": (4, 8, 12), "radius": (0.5, 0.9, 1.2), "density": (0.1, 0.3, 1.0)}, 3, 200),
    "full": (
        {"n": (4, 6, 8, 12, 16), "T": (4, 8, 16, 32), "radius": (0.3, 0.6, 0.9, 1.2, 1.5),
         "density": (0.05, 0.1, 0.3, 0.6, 1.0)},
        6,
        400,
    ),
}  # fmt: skip


#: each family's guarantee by definition: what an implementation that declares none is judged by
FAMILY_GUARANTEES = {
    "RTRL": Guarantee("exact", source="Williams & Zipser 1989 (rtrl.exact)"),
    "UORO": Guarantee("unbiased", source="Tallec & Ollivier 2017 Prop. 1"),
    "KF-RTRL": Guarantee("unbiased", source="Mujika, Meier & Steger 2018 §4"),
    "SnAp-1": Guarantee("biased", source="Menick et al. 2021 §3"),
    "SnAp-2": Guarantee("biased", source="Menick et al. 2021 §3"),
    "RFLO": Guarantee("biased", source="Murray 2019"),
    "e-prop": Guarantee("biased", source="Bellec et al. 2020"),
}


def estimators(
    rtrl: Any, uoro: Any, assumed: list[str] | None = None, left_out: list[tuple[str, str]] | None = None
) -> dict[str, OnlineEstimator]:
    """The estimators measured, built from the ``rtrl`` and ``uoro`` implementations under test; one that declares
    no guarantee is judged by its family's (:data:`FAMILY_GUARANTEES`), and its label is appended to ``assumed``.
    A SnAp order the implementation refuses to construct (SnAp-1-only code) is left out and appended to
    ``left_out`` with the reason (:func:`~verify.impl.capabilities.build_orders`)."""
    snaps, refused = build_orders(rtrl.snap, "rtrl.snap", (1, 2))
    if left_out is not None:
        left_out += [(f"SnAp-{label.split()[-1]}", why) for label, why in refused]
    built = {
        "RTRL": build(rtrl.rtrl, "rtrl.rtrl"),
        "UORO": build(uoro.uoro, "uoro.uoro"),
        "KF-RTRL": build(uoro.kfrtrl, "uoro.kfrtrl"),
        **{f"SnAp-{n}": est for n, est in snaps.items()},
        "RFLO": build(rtrl.rflo, "rtrl.rflo"),
        "e-prop": build(rtrl.eprop, "rtrl.eprop"),
    }
    out: dict[str, OnlineEstimator] = {}
    for label, est in built.items():
        out[label], was_assumed = with_guarantee(est, FAMILY_GUARANTEES[label])
        if was_assumed and assumed is not None:
            assumed.append(label)
    return out


#: the part under test each estimator label is built from (its declared precision is the label's)
PARTS = {
    "RTRL": "rtrl.rtrl",
    "UORO": "uoro.uoro",
    "KF-RTRL": "uoro.kfrtrl",
    "SnAp-1": "rtrl.snap",
    "SnAp-2": "rtrl.snap",
    "RFLO": "rtrl.rflo",
    "e-prop": "rtrl.eprop",
}


def precisions(config: RunConfig) -> dict[str, torch.dtype]:
    """Each estimator's judged precision: float32 where its part declares it or the run says ``--dtype float32``
    (:mod:`verify.impl.precision`)."""
    return {label: precision.judged_dtype(config.dtype, (config.impls.part(part),)) for label, part in PARTS.items()}


def _sweep(
    ests: Mapping[str, OnlineEstimator], config: RunConfig, judged: Mapping[str, torch.dtype] | None = None
) -> list[AlignmentRow]:
    axes, problems, samples = GRID["full" if config.full else "ci"]
    unbiased = sum(guarantee_of(e).kind == "unbiased" for e in ests.values())
    return axis_sweep(
        ests, center=CENTER, axes=axes, problems=problems, samples=samples, seed=config.seed * 10_000 + 27,
        test_alpha=ALPHA / max(unbiased, 1), beta=BETA, precisions=judged,
    )  # fmt: skip


def decide(rows: list[AlignmentRow]) -> list[str]:
    """What breaks a declaration: ``exact`` rows above :data:`EXACT` (judged at float32: above their predicted
    float32 budget, :func:`~verify.estimators.alignment.float32_budget`), ``unbiased`` rows with a detected bias."""
    bad = []
    for r in rows:
        where = f"{r.estimator} at n = {r.n}, T = {r.T}, radius = {r.radius:g}, density = {r.density:g}"
        if r.guarantee == "exact" and r.precision == "float32":
            if r.budget_ratio > 1.0:
                bad.append(
                    f"{where}: declared exact, bias {r.max_bias:.1e} > its float32 budget "
                    f"({r.budget_ratio:.2g} x the budget)"
                )
        elif r.guarantee == "exact" and r.max_bias > EXACT:
            bad.append(f"{where}: declared exact, bias {r.max_bias:.1e} > {EXACT:.0e}")
        if r.guarantee == "unbiased" and r.failed:
            bad.append(f"{where}: declared unbiased, bias detected on {r.failed}/{r.problems} problems")
    return list(dict.fromkeys(bad))


def _table(rows: list[AlignmentRow]) -> dict[str, Any]:
    at = [r for r in rows if (r.n, r.T, r.radius, r.density) == tuple(CENTER)]
    seen: dict[str, AlignmentRow] = {}
    for r in at:
        seen.setdefault(r.estimator, r)
    return {
        "kind": "table",
        "title": f"bias and alignment at n = {CENTER.n}, T = {CENTER.T}, radius = {CENTER.radius}, "
        f"density = {CENTER.density}",
        "columns": ["estimator", "declared", "bias", "bias interval", "cosine", "cosine interval", "interval"],
        "rows": [
            [
                r.estimator,
                r.guarantee,
                f"{r.bias:.3g}",
                f"[{r.bias_low:.3g}, {r.bias_high:.3g}]",
                f"{r.cosine:.4f}",
                f"[{r.cosine_low:.4f}, {r.cosine_high:.4f}]",
                r.interval,
            ]
            for r in seen.values()
        ],
    }


def _summary(rows: list[AlignmentRow]) -> str:
    parts = []
    for label in dict.fromkeys(r.estimator for r in rows):
        rs = [r for r in rows if r.estimator == label]
        kind = rs[0].guarantee
        lo, hi = min(r.bias for r in rs), max(r.bias for r in rs)
        parts.append(f"{label} ({kind}) bias {lo:.2g}..{hi:.2g}, cos >= {min(r.cosine for r in rs):.3f}")
    return "; ".join(parts)


@register(CLAIM, uses=("rtrl.rtrl", "rtrl.snap", "rtrl.rflo", "rtrl.eprop", "uoro.uoro", "uoro.kfrtrl"))
def check_bias_alignment(config: RunConfig) -> CheckResult:
    """Each algorithm's declared guarantee (UORO: Tallec & Ollivier 2017 Prop. 1; KF-RTRL: Mujika et al. 2018 §4;
    SnAp-n: Menick et al. 2021 §3; RFLO, e-prop: declared biased) holds against exact float64 RTRL (UORO eq. (4));
    normalized bias and alignment of all (the comparison of Marschall et al. 2020), in figures."""
    t0 = time.perf_counter()
    impls = config.impls
    assumed: list[str] = []
    left_out: list[tuple[str, str]] = []
    judged = precisions(config)
    rows = _sweep(estimators(impls.rtrl, impls.uoro, assumed, left_out), config, judged)
    bad = decide(rows)
    controls: list[Control] = []
    if config.option("controls", True):
        m = get_mutant(CONTROL)
        snap: Callable[..., Any] = m.part
        ctl = {f"SnAp-{k}": build(snap, "rtrl.snap", order=k) for k in (1, 2)}
        wrong = decide(_sweep(ctl, config))
        controls.append(Control(f"mutant {CONTROL}", "FAIL", "FAIL" if wrong else "PASS", "; ".join(wrong[:2])))
    figures = [f for axis in AXES for f in alignment_figures(rows, over=axis)]
    summary = _summary(rows)
    if assumed:
        summary += "; declaring no guarantee, judged by their family's: " + ", ".join(
            f"{label} ({FAMILY_GUARANTEES[label].kind})" for label in assumed
        )
    if left_out:
        summary += "; left out (not implemented by the implementation under test): " + ", ".join(
            f"{label} ({why})" for label, why in left_out
        )
    f32 = sorted(label for label, dt in judged.items() if dt == torch.float32 and label in {r.estimator for r in rows})
    if f32:
        summary += "; judged at float32 (declared or --dtype float32): " + ", ".join(f32)
    if bad:
        summary = "declaration broken: " + "; ".join(bad[:3]) + f" ({len(bad)} in all); " + summary
    decided = [r for r in rows if r.guarantee in ("exact", "unbiased")]
    return result(
        CLAIM,
        config,
        t0,
        not bad,
        summary,
        controls=controls,
        statistic=max((r.max_bias for r in rows if r.guarantee == "exact" and r.precision == "float64"), default=0.0),
        threshold=EXACT,
        alpha=ALPHA,
        dtype="float32" if f32 else "float64",
        data={
            "rows": rows_as_dicts(rows),
            "broken": bad,
            "decided": len(decided),
            "center": CENTER._asdict(),
            "exact": EXACT,
            "figures": [_table(rows), *figures],
        },
    )
