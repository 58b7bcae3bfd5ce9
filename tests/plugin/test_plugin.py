"""The pytest plugin (entry point ``pytest11``), exercised with pytester.

Inner runs load the plugin with ``-p verify.testing.pytest_plugin`` and entry-point
autoloading off, so they behave the same whether or not the package is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from verify.report.document import parse_document

pytest_plugins = ["pytester"]


USER_TEST = """
import pytest
from verify.oracles.bptt import adjoint_gradient
from verify.testing.pytest_plugin import assert_gradient_close


@pytest.mark.rnn_verify_claim("mylib.adjoint-exact", title="my adjoint = BPTT", paper="my-notes.md", where="eq. (2)")
def test_adjoint(rnn_verify_problem, rnn_verify_impl, rnn_verify_record):
    P, th = rnn_verify_problem.problem, rnn_verify_problem.theta
    impl = rnn_verify_impl("adjoint", adjoint_gradient)
    rel = assert_gradient_close(impl(P, th), P, th)
    rnn_verify_record(statistic=rel, threshold=1e-12)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # the inner runs are subprocesses in a temporary folder: make this checkout importable there too
    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))
    return pytester


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    # a subprocess per inner run: in-process runs drop from sys.modules what they imported when they
    # end, and torch's C extensions and the check registry cannot be imported twice in one process
    # (that made these tests, and whatever ran after them, depend on the order of the test files)
    return p.runpytest_subprocess("-p", "verify.testing.pytest_plugin", "-p", "no:cacheprovider", *args)


def test_marked_test_becomes_a_claim_in_the_report(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TEST)
    out = inner.path / "rep"
    res = _run(inner, "--rnn-verify-report", str(out))
    res.assert_outcomes(passed=5)
    res.stdout.fnmatch_lines(["*rnn-verify claims*", "PASS*mylib.adjoint-exact*5 test(s): 5 passed*"])
    doc = json.loads((out / "results.json").read_text())
    (rec,) = doc["claims"]
    assert rec["id"] == "mylib.adjoint-exact" and rec["verdict"] == "PASS" and rec["source"] == "pytest"
    assert rec["title"] == "my adjoint = BPTT" and rec["paper"] == "my-notes.md" and rec["equation"] == "eq. (2)"
    assert len(rec["data"]["tests"]) == 5 and rec["statistic"] < 1e-12
    assert "test_user.py" in rec["rerun"]
    assert "mylib.adjoint-exact" in (out / "report.html").read_text()
    parse_document(out)  # what `rnn-verify report` reads back agrees with itself (verdicts, counts)


def test_injected_mutant_fails_the_run_and_names_the_claim(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TEST)
    out = inner.path / "rep"
    res = _run(inner, "--rnn-verify-mutant", "adjoint.jacobian-wrong-step", "--rnn-verify-report", str(out))
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.assert_outcomes(failed=5)
    res.stdout.fnmatch_lines(
        [
            "*mutant adjoint.jacobian-wrong-step (target 'reference.adjoint'): injected*",
            "FAIL*mylib.adjoint-exact*mutant adjoint.jacobian-wrong-step injected*",
        ]
    )
    rec = json.loads((out / "results.json").read_text())["claims"][0]
    assert rec["verdict"] == "FAIL" and "relative error" in rec["reason"]
    parse_document(out)  # a FAIL decided by the tests: consistent for `rnn-verify report`


def test_unknown_mutant_is_a_usage_error_with_suggestions(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TEST)
    res = _run(inner, "--rnn-verify-mutant", "adjoint.no-propagaton")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*did you mean adjoint.no-propagation*"])


def test_mutant_that_no_test_uses_does_not_pass_silently(inner: pytest.Pytester) -> None:
    # the user's suite: one test that never asks for the mutant's target (rnn_verify_impl), so it
    # passes -- the run as a whole must still not exit 0, since nothing exercised the mutant
    inner.makepyfile(test_other="def test_unrelated():\n    assert sum([1, 2]) == 3\n")
    res = _run(inner, "--rnn-verify-mutant", "adjoint.no-propagation")
    res.assert_outcomes(passed=1)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stdout.fnmatch_lines(["*mutant adjoint.no-propagation*NOT injected*"])


@pytest.mark.slow  # four inner pytest processes: .ci/run's slow step
def test_profile_option_and_ini_set_fixture_sizes(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_p="""
        def test_profile(rnn_verify_config, rnn_verify_problems, request):
            want = request.config.getoption("--rnn-verify-profile") or request.config.getini("rnn_verify_profile")
            assert rnn_verify_config.profile == want
            assert {c.problem.T for c in rnn_verify_problems} == ({30} if want == "full" else {8})
            assert [c.kind for c in rnn_verify_problems] == ["elman-tanh", "elman-relu", "linear", "lstm", "gru"]
        """
    )
    _run(inner).assert_outcomes(passed=1)
    _run(inner, "--rnn-verify-profile", "full").assert_outcomes(passed=1)
    inner.makeini("[pytest]\nrnn_verify_profile = full\n")
    _run(inner).assert_outcomes(passed=1)


def test_reference_fixture_gives_exact_quantities(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_r="""
        import torch
        from verify.oracles.bptt import bptt_gradient, influence_matrices

        def test_refs(rnn_verify_problems, rnn_verify_reference):
            case = rnn_verify_problems[3]
            ref = rnn_verify_reference(case.problem, case.theta)
            assert ref is rnn_verify_reference(case.problem, case.theta)
            assert torch.equal(ref.gradient, bptt_gradient(case.problem, case.theta))
            assert ref.influence.shape == influence_matrices(case.problem, case.theta).shape
            assert ref.per_step_gradients.sum(0).allclose(ref.gradient)
            assert 0 < ref.gradient_budget < 1e-10
        """
    )
    _run(inner).assert_outcomes(passed=1)


def test_catalog_claims_run_as_test_items(inner: pytest.Pytester) -> None:
    out = inner.path / "rep"
    res = _run(inner, "--rnn-verify-claims", "reference.influence", "--rnn-verify-report", str(out))
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["PASS*reference.influence*"])
    (rec,) = json.loads((out / "results.json").read_text())["claims"]
    assert rec["id"] == "reference.influence" and rec["paper"] and rec["figures"]


def test_catalog_claims_are_collected_like_tests(inner: pytest.Pytester) -> None:
    # counted in "collected N items", node ids rnn-verify::<claim id>, after the test files
    inner.makepyfile(test_other="def test_unrelated():\n    assert sum([1, 2]) == 3\n")
    res = _run(inner, "--collect-only", "-q", "--rnn-verify-claims", "reference.*")
    assert res.ret == pytest.ExitCode.OK
    ids = [line for line in res.stdout.lines if "::" in line]
    assert ids[0] == "test_other.py::test_unrelated"
    assert "rnn-verify::reference.adjoint" in ids and "rnn-verify::reference.influence" in ids
    assert all(i.startswith("rnn-verify::reference.") for i in ids[1:]), ids
    res.stdout.fnmatch_lines([f"{len(ids)} tests collected*"])


def test_k_selects_catalog_claims(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_other="def test_unrelated():\n    assert sum([1, 2]) == 3\n")
    res = _run(inner, "--collect-only", "--rnn-verify-claims", "reference.*", "-k", "influence")
    res.stdout.fnmatch_lines(["collected * items / * deselected / 1 selected", "*<ClaimItem reference.influence>*"])
    res = _run(inner, "-v", "--rnn-verify-claims", "reference.adjoint,reference.influence", "-k", "not influence")
    res.assert_outcomes(passed=2, deselected=1)
    res.stdout.fnmatch_lines(
        ["*collected 3 items / 1 deselected / 2 selected", "rnn-verify::reference.adjoint PASSED*"]
    )


def test_failing_catalog_claim_fails_its_item(inner: pytest.Pytester) -> None:
    inner.makeconftest(
        """
        import verify.run.check as runner
        from verify.verdict import CheckResult, Verdict

        _real = runner.registry

        def pytest_configure(config):
            fake = lambda cfg: CheckResult("reference.adjoint", Verdict.FAIL, "forced failure", reason="forced")
            runner.registry = lambda: {**_real(), "reference.adjoint": fake}

        def pytest_unconfigure(config):
            runner.registry = _real
        """
    )
    res = _run(inner, "--rnn-verify-claims", "reference.adjoint")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*FAIL reference.adjoint: forced failure*"])


def test_unknown_catalog_claim_is_a_usage_error(inner: pytest.Pytester) -> None:
    res = _run(inner, "--rnn-verify-claims", "reference.adjiont")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*did you mean reference.adjoint*"])


def test_bad_claim_id_and_unwritable_report_are_usage_errors(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.rnn_verify_claim("NoFamily")
        def test_x():
            pass
        """
    )
    res = _run(inner)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    blocker = inner.path / "file"
    blocker.write_text("x")
    res = _run(inner, "--rnn-verify-report", str(blocker / "rep"), "-k", "nothing")
    assert res.ret == pytest.ExitCode.USAGE_ERROR


def test_skipped_marked_tests_make_a_skipped_claim(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_s="""
        import pytest

        @pytest.mark.rnn_verify_claim("mylib.gpu-parity")
        def test_gpu():
            pytest.skip("no CUDA here")
        """
    )
    out = inner.path / "rep"
    _run(inner, "--rnn-verify-report", str(out)).assert_outcomes(skipped=1)
    rec = json.loads((out / "results.json").read_text())["claims"][0]
    assert rec["verdict"] == "SKIPPED" and "no CUDA here" in rec["reason"]


def test_entry_point_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[2]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"rnn_verify": "verify.testing.pytest_plugin"}
    from importlib.metadata import entry_points

    installed = [ep for ep in entry_points(group="pytest11") if ep.value == "verify.testing.pytest_plugin"]
    if installed:  # the package is installed (e.g. `pip install -e .`): pytest finds the plugin by itself
        assert installed[0].name == "rnn_verify"


def test_assertion_helpers_are_reexported() -> None:
    import verify.testing.pytest_plugin as plugin

    assert callable(plugin.assert_gradient_close)
    if importlib.util.find_spec("verify.testing.assertions") is not None:
        import verify.testing.assertions as assertions

        names = [n for n in assertions.__all__ if n.startswith("assert_") or n.endswith("_property")]
        assert "assert_unbiased" in names
        for name in names:
            assert getattr(plugin, name) is getattr(assertions, name)
    else:
        with pytest.raises(AttributeError, match=r"verify\.assertions"):
            plugin.assert_unbiased  # noqa: B018


def test_rnn_verify_impl_option_loads_through_the_cli_loader(inner: pytest.Pytester) -> None:
    """``--rnn-verify-impl`` puts the user's code under test: the fixture returns it, catalog claims run on it."""
    inner.makepyfile(test_user=USER_TEST)
    inner.makepyfile(
        my_impl="from verify.impl.mutants.reference import jacobian_from_wrong_step as my_adjoint\n",
    )
    spec = f"reference={inner.path / 'my_impl.py'}:my_adjoint"
    res = _run(inner, "--rnn-verify-impl", spec, "--rnn-verify-claims", "reference.adjoint")
    res.assert_outcomes(failed=6)  # the 5 user tests and the catalog claim reference.adjoint
    res.stdout.fnmatch_lines(["*FAIL reference.adjoint*"])


def test_rnn_verify_impl_with_a_correct_implementation_passes(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TEST)
    res = _run(inner, "--rnn-verify-impl", "reference=verify.oracles.bptt:adjoint_gradient")
    res.assert_outcomes(passed=5)


def test_bad_rnn_verify_impl_is_a_usage_error_naming_it(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_user=USER_TEST)
    res = _run(inner, "--rnn-verify-impl", "uoro=no_such_pkg_xyz:UORO")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--rnn-verify-impl uoro=no_such_pkg_xyz:UORO: no module named*"])
