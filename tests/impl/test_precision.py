"""Precision as a declared property (issue 37, item 3): :mod:`verify.impl.precision` and the claims that use it.

The tester tested: a correct float32 RTRL / UORO (:mod:`verify.examples.numpy_float32`) PASSes the exact claims when
it declares ``dtype="float32"`` or the run says ``--dtype float32``, and FAILs them undeclared with the round-off
hint; its seeded bugs (a wrong derivative of tanh, h_t for h_{t-1}, θ̃ without 1/ρ₁) FAIL under the float32 budget;
the toolkit's float64 estimators judged at float32 PASS (their errors are far below the float32 budget).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.examples import numpy_float32 as f32
from verify.impl import DEFAULT, Fixed
from verify.impl.adapters import Batch1
from verify.impl.precision import FLOAT32_LOW, declared_dtype, judged_dtype, roundoff_hint, validate_dtype
from verify.oracles.budget import pair_unit, unit_roundoff
from verify.run.check import _precision_note, run_check
from verify.verdict import CheckResult, Verdict

U32, U64 = 2.0**-24, 2.0**-53


# ----------------------------------------------------------------- the declaration
@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("float32", "float32"), ("float64", "float64"), (torch.float32, "float32"),
     (np.float32, "float32"), (np.dtype("float64"), "float64"), ("double", "float64")],
)  # fmt: skip
def test_validate_dtype_reads_the_spellings(value: object, expected: str | None) -> None:
    assert validate_dtype("dtype", value) == expected


def test_batch1_rejects_an_unjudgeable_precision_naming_it() -> None:
    with pytest.raises(InvalidArgument, match=r"Batch1\(dtype=\.\.\.\).*float16"):
        Batch1(lambda ctx: None, dtype="float16")


def test_declared_dtype_of_every_kind_of_part() -> None:
    class Cls:
        dtype = "float32"

    def factory() -> None: ...

    factory.dtype = torch.float32  # type: ignore[attr-defined]

    class Unrelated:
        dtype = "int8"  # not a precision declaration: ignored

    assert declared_dtype(f32.MyFloat32RTRL) == "float32"
    assert declared_dtype(Fixed(f32.MyFloat32UORO)) == "float32"  # an instance given as a part
    assert declared_dtype(Cls) == "float32" and declared_dtype(factory) == "float32"
    assert declared_dtype(f32.MyFloat32RTRLUndeclared) is None
    assert declared_dtype(Unrelated) is None and declared_dtype(object()) is None


def test_judged_dtype_takes_the_coarsest() -> None:
    assert judged_dtype("float64", [f32.MyFloat32RTRLUndeclared]) == torch.float64
    assert judged_dtype("float64", [f32.MyFloat32RTRL, object()]) == torch.float32
    assert judged_dtype("float32", [object()]) == torch.float32  # --dtype float32


def test_pair_unit_carries_both_sides_rounding() -> None:
    assert pair_unit(torch.float64) == unit_roundoff(torch.float64) == U64  # float64 budgets unchanged
    assert pair_unit(torch.float32) == (U32 + U64) / 2


# ----------------------------------------------------------------- the hint
def test_roundoff_hint_band() -> None:
    hint = roundoff_hint(2.6e-7, 1e-12, "float64")
    assert hint.startswith("error 2.6e-07 ~ float32 round-off: does the implementation compute in float32?")
    assert "declare dtype='float32' or run with --dtype float32" in hint
    upper = 1e-12 * (U32 + U64) / (2 * U64)
    assert f"{upper:.2g}" in hint
    assert roundoff_hint(2.6e-7, 1e-12, "float32") == ""  # already judged at float32
    assert roundoff_hint(FLOAT32_LOW / 2, 1e-12, "float64") == ""  # below any float32 round-off
    assert roundoff_hint(0.3, 1e-12, "float64") == ""  # a wrong formula, not round-off
    assert roundoff_hint(2.6e-7, 0.02, "float64") == ""  # a statistical threshold, not a round-off budget
    assert roundoff_hint(None, 1e-12, "float64") == "" and roundoff_hint(math.nan, 1e-12, "float64") == ""


def test_a_claim_without_a_float32_budget_says_so() -> None:
    claim = all_claims()["rtrl.online-convergence"]
    res = CheckResult(claim.id, Verdict.FAIL, "x", statistic=1e-7, threshold=1e-12, dtype="float64")
    note = _precision_note(claim, RunConfig(dtype="float32"), res, ())
    assert "float32 was asked for (declared, or --dtype float32), but this claim's check judges at float64" in note


# ----------------------------------------------------------------- the claims (fast, in-process)
def _run(claim: str, family: str, part: object, dtype: str = "float64", seed: int = 0) -> CheckResult:
    impls = DEFAULT.with_part(family, family, part)
    return run_check(all_claims()[claim], RunConfig(seed=seed, dtype=dtype, implementations=impls))


RTRL_TABLE = [  # (example, --dtype, verdict, words in the summary)
    ("MyFloat32RTRLUndeclared", "float64", "FAIL", "~ float32 round-off: does the implementation compute in float32?"),
    ("MyFloat32RTRLUndeclared", "float32", "PASS", "judged at float32"),
    ("MyFloat32RTRL", "float64", "PASS", "judged at float32"),
    ("MyFloat32RTRLTanhPrime", "float64", "FAIL", "first leaves its budget at step t = 1"),
    ("MyFloat32RTRLStaleH", "float32", "FAIL", "first leaves its budget at step t = 1"),
]


@pytest.mark.parametrize(("name", "dtype", "verdict", "words"), RTRL_TABLE)
def test_rtrl_exact_verdicts(name: str, dtype: str, verdict: str, words: str) -> None:
    res = _run("rtrl.exact", "rtrl", getattr(f32, name), dtype)
    assert res.verdict.value == verdict, res.summary
    assert words in res.summary
    if verdict == "FAIL" and "round-off" in words:
        assert res.summary.startswith("error "), res.summary  # the hint first: the terminal shows the beginning
        assert res.dtype == "float64"
    else:
        assert res.dtype == "float32"
        assert "float32 round-off" not in res.summary  # bugs are not excused as round-off


@pytest.mark.parametrize(
    "claim",
    [
        "rtrl.exact",  # ~3 s on a quiet machine
        pytest.param("uoro.exact-expectation", marks=pytest.mark.slow),  # every cell, rank 2, UORO-T: ~10 s
        "uoro.algorithm-1-conformance",
    ],
)
def test_float64_code_judged_at_float32_passes_and_says_so(claim: str) -> None:
    """The toolkit's own (float64) estimators with --dtype float32: their errors (~1e-15) are far below the float32
    budget, so they PASS; the result carries dtype float32 (what it certifies), and the controls still come out
    as expected (the float32 budget still tells the mutants apart)."""
    res = run_check(all_claims()[claim], RunConfig(dtype="float32"))
    assert res.verdict is Verdict.PASS, res.summary
    assert res.dtype == "float32" and res.statistic is not None and res.statistic < 1e-12
    assert res.controls and all(c.ok for c in res.controls)


def test_float32_budget_is_the_float64_one_with_the_unit_replaced() -> None:
    res64 = run_check(
        all_claims()["rtrl.exact"],
        RunConfig(implementations=DEFAULT.with_part("rtrl", "rtrl", f32.MyFloat32RTRLUndeclared)),
    )
    res32 = _run("rtrl.exact", "rtrl", f32.MyFloat32RTRL)
    b64 = [r["gradient_budget"] for r in res64.data["comparisons"]]
    b32 = [r["gradient_budget"] for r in res32.data["comparisons"]]
    assert b32 == pytest.approx([b * (U32 + U64) / (2 * U64) for b in b64], rel=1e-12)


UORO_TABLE = [
    ("uoro.exact-expectation", "MyFloat32UOROUndeclared", "float64", "FAIL"),
    ("uoro.exact-expectation", "MyFloat32UOROUndeclared", "float32", "PASS"),
    ("uoro.exact-expectation", "MyFloat32UORO", "float64", "PASS"),
    ("uoro.exact-expectation", "MyFloat32UOROTanhPrime", "float64", "FAIL"),
    ("uoro.exact-expectation", "MyFloat32UORONoRho1", "float64", "FAIL"),
    ("uoro.algorithm-1-conformance", "MyFloat32UOROUndeclared", "float64", "FAIL"),
    ("uoro.algorithm-1-conformance", "MyFloat32UORO", "float64", "PASS"),
    ("uoro.algorithm-1-conformance", "MyFloat32UOROTanhPrime", "float64", "FAIL"),
    ("uoro.algorithm-1-conformance", "MyFloat32UORONoRho1", "float32", "FAIL"),
]


@pytest.mark.parametrize(("claim", "name", "dtype", "verdict"), UORO_TABLE)
def test_uoro_exact_claims_verdicts(claim: str, name: str, dtype: str, verdict: str) -> None:
    res = _run(claim, "uoro", getattr(f32, name), dtype)
    assert res.verdict.value == verdict, res.summary
    undeclared = name.endswith("Undeclared") and dtype == "float64"
    assert ("~ float32 round-off" in res.summary) is undeclared, res.summary
    assert res.dtype == ("float64" if undeclared else "float32")
    if verdict == "FAIL" and not undeclared and claim == "uoro.exact-expectation":
        assert res.summary.startswith("BIASED"), res.summary


def test_float32_draws_get_float32_roundoff_in_the_unbiasedness_test() -> None:
    """The UORO unbiasedness driver hands float32 draws to the test when judged at float32 (the round-off model
    reads u from the draws' dtype)."""
    from verify.estimators.uoro import UORO
    from verify.uoro.cases import problem_case
    from verify.uoro.unbiased import family_sampler

    case = problem_case("elman-tanh", 2, 4, 0, 480)
    s64, _, _ = family_sampler(UORO(), case, (2,))
    s32, _, _ = family_sampler(UORO(), case, (2,), dtype=torch.float32)
    assert {x.dtype for x in s64(8, torch.Generator().manual_seed(0))} == {torch.float64}
    assert {x.dtype for x in s32(8, torch.Generator().manual_seed(0))} == {torch.float32}


# ----------------------------------------------------------------- seeds 0-20 (the tester over many seeds)
SEEDS = range(21)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_seeds_correct_float32_passes_bugs_fail(seed: int) -> None:
    """Seeds 0-20 of the touched exact claims: the correct float32 code PASSes declared, every seeded bug FAILs."""
    for claim, family, good, bugs in (
        ("rtrl.exact", "rtrl", f32.MyFloat32RTRL, (f32.MyFloat32RTRLTanhPrime, f32.MyFloat32RTRLStaleH)),
        ("uoro.exact-expectation", "uoro", f32.MyFloat32UORO, (f32.MyFloat32UOROTanhPrime, f32.MyFloat32UORONoRho1)),
        ("uoro.algorithm-1-conformance", "uoro", f32.MyFloat32UORO, (f32.MyFloat32UOROTanhPrime,)),
    ):
        res = _run(claim, family, good, seed=seed)
        assert res.verdict is Verdict.PASS, f"{claim} seed {seed}: {res.summary}"
        for bug in bugs:
            bad = _run(claim, family, bug, seed=seed)
            assert bad.verdict is Verdict.FAIL, f"{claim} seed {seed} {bug.name}: {bad.summary}"


def test_a_declared_batch1_keeps_its_other_fields() -> None:
    """dtype is one more declared field: replace() keeps it, and it is in the adapter's field list."""
    from verify.impl.adapters import _FIELDS

    assert "dtype" in _FIELDS
    assert replace(f32.MyFloat32UORO, name="x").dtype == "float32"


# ----------------------------------------------------------------- FPP eq. (7) and Lemma 3 at float32
def _float32_part(inner: Any, declared: bool = True) -> Any:
    """A part whose results are ``inner``'s rounded to float32 (a tensor or a tuple of them), declared float32 or not:
    a user's float32 code as the toolkit receives it."""

    def part(*args: Any, **kw: Any) -> Any:
        out = inner(*args, **kw)
        return tuple(g.to(torch.float32) for g in out) if isinstance(out, tuple) else out.to(torch.float32)

    if declared:
        part.dtype = "float32"  # type: ignore[attr-defined]
    return part


def _f32_eq7(bug: bool = False, declared: bool = True) -> Any:
    """eq. (7) whose results are float32 (the toolkit's formula, or the penalty-sign mutant, rounded to float32)."""
    from verify.fpp.objective import eq7_gradients
    from verify.impl.mutants import get as get_mutant

    return _float32_part(get_mutant("fpp.eq7-penalty-sign").impl.eq7_gradients if bug else eq7_gradients, declared)


FPP_TABLE = [  # (claim, bug, declared, --dtype, verdict, words)
    ("fpp.gradient-eq7", False, False, "float64", "FAIL", "~ float32 round-off: does the implementation compute"),
    ("fpp.gradient-eq7", False, True, "float64", "PASS", "(float32: judged at its round-off)"),
    ("fpp.gradient-eq7", False, False, "float32", "PASS", "(float32: judged at its round-off)"),
    ("fpp.gradient-eq7", True, True, "float64", "FAIL", "(float32: judged at its round-off)"),
    ("fpp.lemma3-unbiased", False, True, "float64", "PASS", "(float32: judged at its round-off)"),
    ("fpp.lemma3-unbiased", True, False, "float32", "FAIL", "(float32: judged at its round-off)"),
]


@pytest.mark.parametrize(("claim", "bug", "declared", "dtype", "verdict", "words"), FPP_TABLE)
def test_fpp_exactness_is_judged_at_the_declared_precision(
    claim: str, bug: bool, declared: bool, dtype: str, verdict: str, words: str
) -> None:
    impls = DEFAULT.with_part("fpp", "eq7_gradients", _f32_eq7(bug, declared))
    res = run_check(all_claims()[claim], RunConfig(dtype=dtype, implementations=impls))
    assert res.verdict.value == verdict, res.summary
    assert words in res.summary, res.summary
    assert res.dtype == ("float32" if declared or dtype == "float32" else "float64")


# ----------------------------------------------------------------- reference.* at float32
def _f32_reference(field: str, bug: bool = False, declared: bool = True) -> Any:
    """The toolkit's adjoint (or influence) rounded to float32; ``bug``: the adjoint mutant the claim's control uses
    (a wrong step's Jacobian), or the influence 0.1 % too large (the control's W(1 + 1e-6) moves the influence by
    6e-7, within float32's predicted budget of 6e-6: float32 code cannot be told from it)."""
    from verify.impl.mutants import get as get_mutant
    from verify.oracles.bptt import adjoint_gradient, influence_matrices

    if field == "adjoint":
        inner = get_mutant("adjoint.jacobian-wrong-step").impl.adjoint if bug else adjoint_gradient
    else:
        inner = (lambda *a, **k: 1.001 * influence_matrices(*a, **k)) if bug else influence_matrices
    return _float32_part(inner, declared)


REFERENCE_TABLE = [  # (claim, field, bug, declared, --dtype, verdict, words)
    ("reference.adjoint", "adjoint", False, False, "float64", "FAIL", "~ float32 round-off: does the implementation"),
    ("reference.adjoint", "adjoint", False, True, "float64", "PASS", "(float32: judged at its round-off"),
    ("reference.adjoint", "adjoint", True, True, "float64", "FAIL", "(float32: judged at its round-off"),
    ("reference.influence", "influence", False, False, "float32", "PASS", "(float32: judged at its round-off"),
    ("reference.influence", "influence", True, False, "float32", "FAIL", "(float32: judged at its round-off"),
    ("reference.complex-step", "adjoint", False, True, "float64", "PASS", "(float32: judged at its round-off"),
]


@pytest.mark.parametrize(("claim", "field", "bug", "declared", "dtype", "verdict", "words"), REFERENCE_TABLE)
def test_reference_claims_are_judged_at_the_declared_precision(
    claim: str, field: str, bug: bool, declared: bool, dtype: str, verdict: str, words: str
) -> None:
    impls = DEFAULT.with_part("reference", field, _f32_reference(field, bug, declared))
    res = run_check(all_claims()[claim], RunConfig(dtype=dtype, implementations=impls))
    assert res.verdict.value == verdict, res.summary
    assert words in res.summary, res.summary


# ----------------------------------------------------------------- truncation bounds at float32
def _f32_truncation(field: str, mutant: str | None, declared: bool) -> Any:
    """A truncation part (the toolkit's, or a mutant's) whose results are float32."""
    from verify.impl import TruncationImpl
    from verify.impl.mutants import get as get_mutant

    return _float32_part(getattr(get_mutant(mutant).impl if mutant else TruncationImpl(), field), declared)


TRUNCATION_TABLE = [  # (claim, field, mutant, declared, --dtype, verdict)
    ("truncation.state-bound", "model_states", None, True, "float64", "PASS"),
    ("truncation.state-bound", "model_states", "truncated-model.restart-late", True, "float64", "FAIL"),
    ("truncation.gradient-bound", "model_gradient", None, False, "float32", "PASS"),
    ("truncation.gradient-bound", "model_gradient", "truncated-gradient.restart-early", False, "float32", "FAIL"),
    ("truncation.tbptt-gradient-bound", "tbptt_gradient", None, True, "float64", "PASS"),
    ("truncation.tbptt-gradient-bound", "tbptt_gradient", "tbptt.window-short", True, "float64", "FAIL"),
]


@pytest.mark.parametrize(("claim", "field", "mutant", "declared", "dtype", "verdict"), TRUNCATION_TABLE)
def test_truncation_bounds_are_judged_at_the_declared_precision(
    claim: str, field: str, mutant: str | None, declared: bool, dtype: str, verdict: str
) -> None:
    """Miller & Hardt's bounds hold for exact arithmetic; float32 parts get their round-off on top (the budgets at
    float32's unit), and a wrong restart or window still FAILs."""
    impls = DEFAULT.with_part("truncation", field, _f32_truncation(field, mutant, declared))
    res = run_check(all_claims()[claim], RunConfig(dtype=dtype, implementations=impls))
    assert res.verdict.value == verdict, res.summary
    assert res.dtype == "float32" and "judged at float32" in res.summary, res.summary


@pytest.mark.parametrize(("bug", "verdict"), [(False, "PASS"), (True, "FAIL")])
def test_prop2_multipliers_are_judged_at_the_declared_precision(bug: bool, verdict: str) -> None:
    from verify.fpp.kkt import lemma1_multipliers
    from verify.impl.mutants import get as get_mutant

    inner = get_mutant("fpp.multiplier-full-loss-adjoint").impl.multipliers if bug else lemma1_multipliers
    impls = DEFAULT.with_part("fpp", "multipliers", _float32_part(inner))
    res = run_check(all_claims()["fpp.prop2-kkt-equivalence"], RunConfig(implementations=impls))
    assert res.verdict.value == verdict, res.summary
    assert "(float32: judged at its round-off)" in res.summary
