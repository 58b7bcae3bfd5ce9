"""The check of ``rtrl.snap-exactness``: SnAp-n (Menick et al. 2021, arXiv:2006.07232, §3) against exact RTRL.

Decides only: the rows come from :func:`verify.estimators.snap.exactness_suite` run on the implementation under
test (``config.impls.rtrl.snap``, built as ``snap(order=n)``). PASS when every row the pattern says is exact
(diagonal ``W`` at n = 1, dense ``W`` at n = 2, the first n steps of a directed ring) is within 1e-12 of
exact float64 RTRL, and every row it says is biased (the ring over all T steps, pattern not closed) differs by
more than 1e-6 (an RTRL passed off as SnAp is not SnAp); code that computes in float32 (declared so) is judged
by 2.7e-4 for both (:func:`verify.checks.exact_cases.thresholds`). Negative controls: the mutants of
:mod:`verify.impl.mutants.snap` rerun through the same suite must FAIL.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from verify.checks import judged_dtype, register
from verify.checks.exact_cases import decide_cases, thresholds
from verify.config import RunConfig
from verify.estimators.snap import exactness_suite
from verify.impl import build
from verify.impl.capabilities import Coverage, build_orders, cover
from verify.model.builders import random_problem
from verify.verdict import CheckResult

CLAIM = "rtrl.snap-exactness"
CONTROLS = ("snap.transposed-pattern", "snap.short-pattern", "snap.no-mask")


def _cells(config: RunConfig) -> tuple[str, ...]:
    return ("elman-tanh", "linear", "gru", "lstm") if config.full else ("elman-tanh", "gru")


#: the orders n of SnAp-n the claim runs (Menick et al. 2021 §3: n = 1 diagonal, n = 2 dense patterns)
ORDERS = (1, 2)


def _suite(
    factory: Any, config: RunConfig, cells: tuple[str, ...] | None = None, orders: tuple[int, ...] = ORDERS
) -> list[dict[str, Any]]:
    cells = _cells(config) if cells is None else cells
    return exactness_suite(
        lambda n: build(factory, "rtrl.snap", order=n), config.generator(salt=26), cells=cells, orders=orders
    )


def _covered(factory: Any, config: RunConfig) -> tuple[tuple[str, ...], tuple[int, ...], Coverage]:
    """The cells and orders the implementation under test declares (a user's SnAp for Elman-tanh only is run there,
    a SnAp-1-only one at n = 1, the rest left out with its reason; none: SKIPPED)."""
    built, refused = build_orders(factory, "rtrl.snap", ORDERS)

    def probe(kind: str) -> tuple[str, Any, Any, Any]:
        P, th = random_problem(kind, n=3, d=2, T=3, generator=torch.Generator().manual_seed(0))
        return kind, next(iter(built.values())), P, th

    kept, coverage = cover(CLAIM, _cells(config), probe)
    coverage = Coverage(coverage.covered, coverage.left_out + tuple(refused))
    return tuple(kept), tuple(built), coverage


def _label(r: Any) -> str:
    return f"{r['cell']} {r['W']} n={r['order']}{' first' if r['steps'] != 'all' else ''}"


def _name(r: dict[str, Any]) -> str:
    where = (
        f", largest at t = {r['worst_step']} in the block {r['worst_block']}"
        if r.get("worst_block") and r["expect"] == "exact"
        else ""
    )
    return (
        f"{r['cell']} {r['W']} W, n = {r['order']}, {r['steps']} steps ({r['expect']}: error {r['error']:.1e}{where})"
    )


def _summary(rows: list[dict[str, Any]], dtype: torch.dtype = torch.float64) -> str:
    exact_t, biased_t = thresholds(dtype)
    exact = [r["error"] for r in rows if r["expect"] == "exact"]
    biased = [r["error"] for r in rows if r["expect"] == "biased"]
    return (
        f"{len(exact)} exact cases: largest error {max(exact):.1e} (must be <= {exact_t:.2g}); {len(biased)} biased "
        f"cases: relative bias {min(biased):.1e}..{max(biased):.1e} (must be > {biased_t:.2g})"
    )


@register(CLAIM, uses=("rtrl.snap",))
def check_snap_exactness(config: RunConfig) -> CheckResult:
    """Menick et al. 2021 §3: SnAp-n = RTRL (<= 1e-12) where its n-step pattern is closed or within the first n
    steps; biased elsewhere."""
    t0 = time.perf_counter()
    cells, orders, coverage = _covered(config.impls.rtrl.snap, config)
    dtype = judged_dtype(config, CLAIM)
    return decide_cases(
        CLAIM, config, t0, _suite(config.impls.rtrl.snap, config, cells, orders),
        summary=lambda rows: _summary(rows, dtype), controls=CONTROLS, rerun=lambda part: _suite(part, config),
        name=_name, label=_label, title="SnAp-n: each case against exact RTRL", coverage=coverage, dtype=dtype,
    )  # fmt: skip
