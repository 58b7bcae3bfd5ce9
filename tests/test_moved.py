"""The deprecation shims of the modules moved in the house rebuild (issue 41): code written against the API as
documented before it still imports, every public name is the new home's object, and the import warns with a
``DeprecationWarning`` that names the new home (``filterwarnings = error``: an unexpected one fails any test)."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from verify._moved import REMOVED_IN

#: the moved modules that re-export one new home whole (its ``__all__``)
MOVED = {
    "verify.assertions": "verify.testing.assertions",
    "verify.strategies": "verify.testing.strategies",
    "verify.reference": "verify.oracles.bptt",
    "verify.assumptions": "verify.oracles.contraction",
    "verify.budget": "verify.oracles.budget",
    "verify.cells": "verify.model.cells",
    "verify.device": "verify.hardware",
    "verify.finite_diff": "verify.oracles.finite_diff",
    "verify.float32_sampling": "verify.gpu.float32_sampling",
    "verify.golden": "verify.oracles.golden",
    "verify.impl_loader": "verify.impl.loader",
    "verify.losses": "verify.model.losses",
    "verify.mutants": "verify.impl.mutants",
    "verify.mutants.fpp": "verify.impl.mutants.fpp",
    "verify.parity": "verify.gpu.parity",
    "verify.problem": "verify.model.problem",
    "verify.selfcheck": "verify.oracles.selfcheck",
    "verify.sweep": "verify.run.sweep",
}

#: the moved modules whose names went to several homes (or were renamed): name -> (home, name there)
SPLIT: dict[str, dict[str, tuple[str, str]]] = {
    "verify.params": {n: ("verify.model.params", n) for n in ("ParamEntry", "ParamLayout")},
    "verify.results": {
        **{n: ("verify.verdict", n) for n in ("CheckResult", "Control", "Verdict", "to_jsonable")},
        "RunConfig": ("verify.config", "RunConfig"),
    },
    "verify.runner": {
        "run_check": ("verify.run.check", "run_check"),
        "select_claims": ("verify.run.check", "select_claims"),
        "run_claims": ("verify.run.catalog", "run_claims"),
        "stop_processes": ("verify.run.sweep.executors", "stop_processes"),
    },
    "verify.mutants.fpp": {
        n: ("verify.fpp.broken_learners", n)
        for n in ("LEARNER_MUTANTS", "frozen_learner", "learner_mutant", "sign_flipped_learner")
    },
    "verify.sweep": {"Cell": ("verify.run.sweep.cells", "SweepCell")},
}

#: submodules of moved packages that are the new home's module objects under their old names
ALIASED = {
    "verify.mutants": ("verify.impl.mutants", ("device", "estimators", "reference", "truncation", "uoro")),
    "verify.sweep": ("verify.run.sweep", ("cache", "cells", "definitions", "driver", "executors", "tasks")),
}

#: the names the README imported from each module before the rebuild (README.md of commit 55eec50^)
DOCUMENTED = {
    "verify.assertions": ["assert_unbiased", "unbiasedness_property"],
    "verify.strategies": ["random_problem", "problems", "contractive_problems"],
    "verify.reference": ["bptt_gradient", "per_step_gradients", "influence_matrices", "adjoint_gradient"],
    "verify.selfcheck": ["reference_self_check"],
    "verify.assumptions": ["contraction_certificate", "truncation_constants"],
    "verify.parity": ["compare", "parity_reference"],
    "verify.device": ["matmul_tf32"],
    "verify.impl_loader": ["load_implementations"],
    "verify.results": ["RunConfig"],
    "verify.runner": ["run_check"],
    "verify.mutants.estimators": ["MUTANTS"],
    "verify.mutants.truncation": ["MUTANTS"],
}

#: every module's ``__all__`` before the rebuild (``git show 55eec50^:verify/<module>.py``; for the two without one,
#: verify/params.py and verify/mutants/reference.py, their public functions and classes). Left out:
#: ``verify.sweep.cells.Cell``, renamed ``SweepCell`` (the aliased module is the new one; ``verify.sweep.Cell`` stays)
OLD_ALL = {
    "verify.assumptions": [
        "ContractionCertificate",
        "contraction_certificate",
        "require_bound_setting",
        "require_contraction",
        "require_smooth",
        "truncation_constants",
    ],
    "verify.budget": [
        "CALIBRATED_MAX_RATIO",
        "CALIBRATION_MARGIN",
        "C_PARITY",
        "U_TF32",
        "Conditioning",
        "ParityBudget",
        "Trajectory",
        "Window",
        "accumulation_length",
        "backward_magnitudes",
        "bptt_magnitude",
        "conditioning",
        "effective_memory",
        "loss_magnitudes",
        "preactivation_uoro_magnitudes",
        "projected_gd_roundoff",
        "rounding_unit",
        "roundoff_budget",
        "rtrl_magnitudes",
        "step_jacobians",
        "tbptt_magnitudes",
        "trajectory",
        "truncated_model_magnitudes",
        "unit_roundoff",
        "uoro_magnitudes",
        "window",
    ],
    "verify.cells": ["Cell", "ElmanCell", "GRUCell", "InfluenceBalancingCell", "LSTMCell", "LinearCell", "sigmoid"],
    "verify.device": [
        "NO_CUDA_REASON",
        "cuda_available",
        "describe_device",
        "device_record",
        "matmul_tf32",
        "parity_device",
        "require_dtype_supported",
        "require_same_device",
        "resolve_device",
        "tf32_settings",
    ],
    "verify.finite_diff": [
        "FDEstimate",
        "complex_problem",
        "complex_step_directional",
        "jacobian_fd",
        "richardson_directional",
    ],
    "verify.float32_sampling": [
        "MARGIN",
        "MAX_SHARE",
        "PRECISIONS",
        "Float32Outcome",
        "RoundingAllowance",
        "parity_factor",
        "rounded",
        "rounding_allowance",
        "run_with_precision",
        "sequential_test_with_precision",
    ],
    "verify.golden": [
        "DEFAULT_KS",
        "FORMAT",
        "FORMAT_VERSION",
        "PROVIDER_MODULES",
        "GoldenCheck",
        "build_problem",
        "check_golden",
        "compute_quantities",
        "export_golden",
        "golden_cases",
        "golden_pair",
        "load_golden",
    ],
    "verify.impl_loader": [
        "ALIASES",
        "ESTIMATORS",
        "load_implementations",
        "load_object",
        "parse_impl_arg",
        "resolve_target",
        "validate_part",
    ],
    "verify.losses": ["LinearReadout", "Loss", "Readout", "SelectReadout", "SoftmaxCrossEntropy", "SquaredError"],
    "verify.params": ["ParamEntry", "ParamLayout"],
    "verify.parity": [
        "ALGORITHMS",
        "CI_ALGORITHMS",
        "Arithmetic",
        "BPTTParity",
        "FPPParity",
        "Magnitudes",
        "ParityAlgorithm",
        "ParityComparison",
        "ParityInputs",
        "ParityReference",
        "Permutation",
        "PreactivationUOROParity",
        "RTRLParity",
        "Runner",
        "TBPTTParity",
        "TruncatedModelParity",
        "UOROParity",
        "algorithm_by_name",
        "applicable_algorithms",
        "compare",
        "default_runner",
        "hidden_permutation",
        "parity_reference",
    ],
    "verify.problem": ["Problem"],
    "verify.results": ["CheckResult", "Control", "RunConfig", "Verdict", "to_jsonable"],
    "verify.runner": ["run_check", "run_claims", "select_claims", "stop_processes"],
    "verify.selfcheck": ["TARGETS", "Comparison", "SelfCheckReport", "reference_self_check"],
    "verify.mutants": ["Mutant", "all_mutants", "get"],
    "verify.mutants.device": ["MUTANTS", "fresh_noise", "get", "silent_bfloat16", "silent_float16", "silent_half"],
    "verify.mutants.estimators": [
        "MUTANTS",
        "Gaussian",
        "RTRLWithoutImmediateTerm",
        "Reused",
        "TBPTTOffByOne",
        "ZeroOne",
        "rho0_inverted",
        "rho0_previous_step",
        "rho1_asymmetric",
        "rho1_constant",
    ],
    "verify.mutants.fpp": [
        "LEARNER_MUTANTS",
        "MUTANTS",
        "eq7_penalty_sign",
        "exclusive_endpoint_distribution",
        "exclusive_endpoint_indices",
        "frozen_learner",
        "full_loss_multipliers",
        "learner_mutant",
        "sign_flipped_learner",
        "unscaled_multipliers",
    ],
    "verify.mutants.reference": [
        "drop_readout_gradient",
        "drop_readout_jacobian",
        "jacobian_from_wrong_step",
        "input_off_by_one",
        "no_adjoint_propagation",
        "influence_perturbed_w",
    ],
    "verify.mutants.truncation": [
        "BOUND_MUTANTS",
        "MUTANTS",
        "model_gradient_with_start",
        "model_states_with_start",
        "tbptt_gradient_with_window",
    ],
    "verify.mutants.uoro": [
        "CONFORMANCE",
        "MUST_NOT_FAIL",
        "MUTANTS",
        "PREACTIVATION",
        "RANK_UNBIASED",
        "RANK_VARIANCE",
        "REINFORCE",
        "UNBIASED",
        "VARIANCE",
        "BiasedCoin",
        "SharedAcrossPairs",
        "SharedAcrossSamples",
        "UniformNoise",
        "get",
        "rho1_no_sqrt",
    ],
    "verify.sweep": [
        "Cell",
        "CellCache",
        "CellOutcome",
        "DaskExecutor",
        "Executor",
        "ProcessExecutor",
        "SerialExecutor",
        "SweepDefinition",
        "SweepOptions",
        "SweepPlan",
        "SweepProgress",
        "SweepRun",
        "cell_key",
        "code_version",
        "dask_available",
        "definitions",
        "execute_cell",
        "get_definition",
        "make_executor",
        "parse_executor",
        "run_plan",
        "task",
        "tasks",
    ],
    "verify.sweep.cache": ["CACHE_MARKER", "CachedValue", "CellCache", "canonical_json", "cell_key", "code_version"],
    "verify.sweep.cells": ["TaskFn", "execute_cell", "task", "tasks"],
    "verify.sweep.definitions": [
        "GATE_RECORD",
        "SweepDefinition",
        "SweepOptions",
        "calibration_result",
        "definitions",
        "family_wise_result",
        "gate_result",
        "get_definition",
    ],
    "verify.sweep.driver": ["CellOutcome", "SweepPlan", "SweepRun", "run_plan"],
    "verify.sweep.executors": [
        "EXECUTOR_KINDS",
        "DaskExecutor",
        "Executor",
        "ProcessExecutor",
        "SerialExecutor",
        "available_cpus",
        "dask_available",
        "make_executor",
        "parse_executor",
    ],
    "verify.sweep.tasks": ["claim_task", "fpp_online_block", "selftest"],
}


OLD_NAMES = sorted(set(MOVED) | set(SPLIT))


def _fresh_import(old: str) -> object:
    _forget(old)
    return importlib.import_module(old)


def _forget(old: str) -> None:
    """Drop ``old`` and its submodules from sys.modules and its parent package, so that importing it runs it again."""
    for key in [k for k in sys.modules if k == old or k.startswith(f"{old}.")]:
        del sys.modules[key]
    parent, _, leaf = old.rpartition(".")
    if hasattr(sys.modules.get(parent), leaf):
        delattr(sys.modules[parent], leaf)


def _homes(old: str) -> list[str]:
    """The homes the warning must name: the one new home, or each home of a split module."""
    return [MOVED[old]] if old in MOVED else sorted({home for home, _ in SPLIT[old].values()})


@pytest.mark.parametrize("old", OLD_NAMES)
def test_shim_warns_naming_the_new_home_and_reexports_it(old: str) -> None:
    homes = _homes(old)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to .*removed in {REMOVED_IN}") as rec:
        mod = _fresh_import(old)
    text = " ".join(str(w.message) for w in rec if f"{old} moved" in str(w.message))
    for home in homes:
        assert home in text, (home, text)
    if old in MOVED:
        new = importlib.import_module(MOVED[old])
        for name in new.__all__:
            assert name in mod.__all__, name  # type: ignore[attr-defined]
            assert getattr(mod, name) is getattr(new, name), name
    for name, (home, there) in SPLIT.get(old, {}).items():
        assert name in mod.__all__, name  # type: ignore[attr-defined]
        assert getattr(mod, name) is getattr(importlib.import_module(home), there), name


@pytest.mark.parametrize("old", sorted(OLD_ALL))
def test_every_name_the_old_module_exported_still_imports(old: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module(old)
    missing = [n for n in OLD_ALL[old] if not hasattr(mod, n)]
    assert not missing, missing
    for name in DOCUMENTED.get(old, []):
        assert name in OLD_ALL[old] and name in mod.__all__, name  # type: ignore[attr-defined]


@pytest.mark.parametrize("old", sorted(ALIASED))
def test_submodules_of_moved_packages_are_the_new_modules(old: str) -> None:
    new, subs = ALIASED[old]
    for sub in subs:
        _forget(old)  # the parent package too: importing the submodule imports it first
        with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}\b"):
            mod = importlib.import_module(f"{old}.{sub}")
        assert mod is importlib.import_module(f"{new}.{sub}"), sub  # one module, one copy of its state
        # the package's attribute is the new package's: the module, or the function of that name it exports
        assert getattr(sys.modules[old], sub) is getattr(importlib.import_module(new), sub), sub
