"""Checks of the ``reference`` family: the exact references agree within predicted budgets.

Each check runs :func:`verify.oracles.selfcheck.reference_self_check` with the implementation
under test (``config.impls.reference``: the adjoint recursion and the influence
matrices, :class:`verify.impl.ReferenceImpl`) over a suite of random problems (every
cell kind, both losses, one batched problem) and reports the worst
measured-error / budget ratio. Its negative control runs the same comparison with a
mutant of :mod:`verify.impl.mutants.reference` (another ``ReferenceImpl``) and must see
FAIL; otherwise the check cannot PASS.
"""

from __future__ import annotations

import time
from functools import lru_cache

import torch

from verify.checks import judged_dtype, precision_name, register, result
from verify.config import RunConfig
from verify.impl.mutants import get as get_mutant
from verify.oracles.reference_suite import (
    ReferenceParts,
    SuiteCase,
    SuiteSetup,
    reference_suite,
    run_family,
    self_check,
)
from verify.oracles.selfcheck import TARGETS
from verify.verdict import CheckResult, Control


@lru_cache(maxsize=2)
def _memos(seed: int, profile: str) -> list[dict[str, object]]:
    """One memo per case of the suite of (``seed``, ``profile``): the four claims (one worker, ``SHARED_WORK``)
    compute each case's conditioning and BPTT gradient once (issue 42). Neither depends on the implementation under
    test; each claim builds its suite afresh (the same problems), so code under test that changes its problem in
    place changes no other claim's."""
    config = RunConfig(profile=profile, seed=seed)
    return [{} for _ in reference_suite(config.generator(salt=11), SuiteSetup(full=config.full))]


def _run_family(claim_id: str, family: str, config: RunConfig, control_mutant: str) -> CheckResult:
    t0 = time.perf_counter()
    parts = ReferenceParts(config.impls.reference.adjoint, config.impls.reference.influence)
    gen = config.generator(salt=12)
    setup = SuiteSetup(full=config.full)
    suite = reference_suite(config.generator(salt=11), setup)
    memos = _memos(config.seed, config.profile)
    dtype = judged_dtype(config, claim_id)  # float32 code: the same budgets at float32's rounding unit
    run = run_family(family, suite, gen, parts, setup, dtype, memos)
    rows, errors, worst, skipped = run.rows, run.errors, run.worst, run.skipped
    assert worst is not None
    # negative control: the same comparison with a broken implementation must FAIL
    first = next(c for c in suite if c.problem.cell.analytic)
    controls = [_control(family, first, control_mutant, gen)] if config.option("controls", True) else []
    max_err = max(errors)
    low = dtype == torch.float32
    summary = (
        f"{len(rows)} comparisons on {len(suite) - len(skipped)} problems; worst error/budget "
        f"{worst.ratio:.2e} ({worst.name}: {worst.error:.2e} vs {worst.budget:.2e}); "
        f"max error {max_err:.2e} vs design target {TARGETS[family]:.0e}"
        + (" (float32: judged at its round-off, the budgets at float32's rounding unit)" if low else "")
    )
    if skipped:
        summary += f"; not applicable (non-analytic): {', '.join(skipped)}"
    return result(
        claim_id,
        config,
        t0,
        all(bool(r["passed"]) for r in rows),
        summary,
        controls=controls,
        statistic=worst.error,
        threshold=worst.budget,
        dtype=precision_name(dtype),
        data={"comparisons": rows, "max_ratio": worst.ratio, "target": TARGETS[family]},
    )


def _control(family: str, case: SuiteCase, mutant_name: str, gen: torch.Generator) -> Control:
    """The same comparison with a mutant of the reference family (``replace(default, field=broken)``): must FAIL."""
    mutant = get_mutant(mutant_name)
    rep = self_check(family, case, gen, ReferenceParts(mutant.impl.adjoint, mutant.impl.influence))
    observed = "PASS" if rep.ok else "FAIL"
    errs = ", ".join(f"{c.error:.1e} (budget {c.budget:.1e})" for c in rep.comparisons)
    return Control(f"mutant {mutant.name}", "FAIL", observed, f"errors {errs}")


@register("reference.adjoint", uses=("reference.adjoint",))
def check_adjoint(config: RunConfig) -> CheckResult:
    """Explicit adjoint recursion = autograd BPTT (total and per-step), every cell.

    UORO (uoro-tallec-ollivier.md) §1: backpropagation as a row vector times the step Jacobians;
    DESIGN.md 'Reference' (two independent reverse-mode computations must agree).
    """
    return _run_family("reference.adjoint", "adjoint", config, "adjoint.jacobian-wrong-step")


@register("reference.influence", uses=("reference.influence",))
def check_influence(config: RunConfig) -> CheckResult:
    """Reverse-mode influence matrices ∂s_t/∂θ (UORO eq. (4)) = forward-mode ``jacfwd``."""
    return _run_family("reference.influence", "influence", config, "influence.perturbed-w")


@register("reference.complex-step", uses=("reference.adjoint",))
def check_complex_step(config: RunConfig) -> CheckResult:
    """Complex-step derivatives (UORO eq. (1) by Im f(θ+ihv)/h) = reverse mode, analytic cells."""
    return _run_family("reference.complex-step", "complex-step", config, "adjoint.drop-readout-gradient")


@register("reference.finite-difference", uses=("reference.adjoint",))
def check_finite_difference(config: RunConfig) -> CheckResult:
    """Richardson-extrapolated central differences (UORO eq. (1)) = reverse mode within their error estimate."""
    return _run_family("reference.finite-difference", "finite-difference", config, "adjoint.input-off-by-one")
