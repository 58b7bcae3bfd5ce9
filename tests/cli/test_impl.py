"""``rnn-verify run --impl FAMILY=SPEC``: loading, bad specs (exit 2, named), provenance in the report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import verify.cli as cli_mod
import verify.run.catalog as catalog_mod
from verify.cli import main
from verify.errors import ImplementationError, InvalidArgument
from verify.impl import DEFAULT
from verify.impl.loader import load_implementations, parse_impl_arg
from verify.oracles.bptt import adjoint_gradient


def _err(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("uoro=no_such_module_xyz:UORO", "no module named 'no_such_module_xyz'"),
        ("uoro=verify.estimators.uoro:NoSuchThing", "has no attribute 'NoSuchThing'"),
        ("rtrl=does/not/exist.py:f", "no such file 'does/not/exist.py'"),
        ("uoro=verify.estimators.uoro", "expected module.path:Name"),
        ("nofamily=verify.estimators:UORO", "FAMILY must be one of"),
        ("uoro.nofield=verify.estimators:UORO", "uoro has the fields"),
        ("uoro", "expected FAMILY=module.path:Name"),
    ],
)
def test_bad_spec_is_exit_2_naming_it(capsys: pytest.CaptureFixture[str], arg: str, expected: str) -> None:
    err = _err(capsys, ["run", "--impl", arg, "--claims", "reference.adjoint", "--no-report"])
    assert expected in err
    assert arg.partition("=")[2] in err or arg in err  # the spec (or the whole argument) is named
    assert "Traceback" not in err


def test_wrong_signature_and_contract_violation_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "mine.py"
    f.write_text(
        "import torch\n"
        "def one_arg(problem):\n    return None\n"
        "def wrong_shape(problem, theta, per_step=False):\n    return torch.zeros(3)\n"
        "class Float32RTRL:\n"
        "    name = 'f32'\n"
        "    def init(self, problem, theta, rng, *, samples=1):\n"
        "        return ()\n"
        "    def step(self, problem, theta, state, t, rng):\n"
        "        return state, torch.zeros(1, problem.p, dtype=torch.float32)\n"
        "raise_on_import = None\n"
    )
    err = _err(capsys, ["run", "--impl", f"reference={f}:one_arg", "--no-report"])
    assert f"--impl reference={f}:one_arg: (the part reference.adjoint)" in err
    assert "expected a function adjoint(problem, theta" in err
    err = _err(capsys, ["run", "--impl", f"reference={f}:wrong_shape", "--no-report"])
    assert "returned (3,), expected a tensor of shape (p,)" in err
    err = _err(capsys, ["run", "--impl", f"rtrl={f}:Float32RTRL", "--no-report"])
    assert f"--impl rtrl={f}:Float32RTRL" in err and "violates the online-estimator contract" in err
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('boom at import')\n")
    err = _err(capsys, ["run", "--impl", f"rtrl={bad}:X", "--no-report"])
    assert "raised RuntimeError: boom at import" in err


def test_impl_only_needs_an_impl(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--impl-only" in _err(capsys, ["run", "--impl-only", "--no-report"])


def test_duplicate_and_alias() -> None:
    assert parse_impl_arg("tbptt=a.b:C") == ("truncation.tbptt", "a.b:C")
    assert parse_impl_arg("truncation=a.b:C") == ("truncation.tbptt", "a.b:C")
    assert parse_impl_arg("fpp.sampler=a.b:C") == ("fpp.sampler", "a.b:C")
    with pytest.raises(InvalidArgument, match="already given"):
        load_implementations(["reference=verify.oracles.bptt:adjoint_gradient"] * 2)
    with pytest.raises(ImplementationError, match="no module named"):
        load_implementations(["uoro=nope_nope:X"], option="--rnn-verify-impl")


@pytest.mark.parametrize(
    ("typed", "target", "spec"),
    [
        ("kfrtrl", "uoro.kfrtrl", "verify.estimators.kfrtrl:KFRTRL"),
        ("uoro.kfrtrl", "uoro.kfrtrl", "verify.estimators.kfrtrl:KFRTRL"),
        ("ok", "uoro.ok", "verify.estimators.ok:OK"),
        ("uoro.ok", "uoro.ok", "verify.estimators.ok:OK"),
        ("snap", "rtrl.snap", "verify.estimators.snap:SnAp"),
        ("rtrl.snap", "rtrl.snap", "verify.estimators.snap:SnAp"),
        ("rflo", "rtrl.rflo", "verify.estimators.local:RFLO"),
        ("eprop", "rtrl.eprop", "verify.estimators.local:EProp"),
    ],
)
def test_issue26_parts_reachable_by_impl(typed: str, target: str, spec: str) -> None:
    """KF-RTRL, SnAp-n, RFLO and e-prop are Impl fields --impl reaches (short names too), contract-checked on load."""
    assert parse_impl_arg(f"{typed}={spec}") == (target, spec)
    impls = load_implementations([f"{typed}={spec}"])
    assert impls.user_parts() == (target,) and impls.source(target) is not None


def test_issue26_part_violating_the_contract_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "bad_snap.py"
    f.write_text("class BadSnAp:\n    def __init__(self, order=1):\n        pass\n")
    with pytest.raises(ImplementationError, match="snap"):
        load_implementations([f"snap={f}:BadSnAp"])


def test_ok_part_violating_the_contract_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "bad_ok.py"
    f.write_text("class BadOK:\n    def __init__(self, rank=1):\n        pass\n")
    with pytest.raises(ImplementationError, match=r"uoro\.ok"):
        load_implementations([f"ok={f}:BadOK"])


def test_loaded_part_carries_file_and_sha256(tmp_path: Path) -> None:
    f = tmp_path / "adj.py"
    f.write_text("from verify.oracles.bptt import adjoint_gradient as mine\n")
    impls = load_implementations([f"reference={f}:mine"])
    src = impls.source("reference.adjoint")
    assert src is not None and impls.reference.adjoint is adjoint_gradient
    # the object is defined in verify/oracles/bptt.py: that is the file whose hash is reported
    ref_file = Path(adjoint_gradient.__code__.co_filename)
    assert Path(src.file) == ref_file.resolve()
    assert src.sha256 == hashlib.sha256(ref_file.read_bytes()).hexdigest()
    assert impls.user_parts() == ("reference.adjoint",) and DEFAULT.user_parts() == ()


def test_results_and_report_name_the_implementation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "my_adjoint.py"
    f.write_text(
        "from verify.oracles.bptt import adjoint_gradient\n"
        "def my_adjoint(problem, theta, per_step=False):\n"
        "    return adjoint_gradient(problem, theta, per_step=per_step)\n"
    )
    sha = hashlib.sha256(f.read_bytes()).hexdigest()
    out = tmp_path / "rep"
    argv = ["run", "--impl", f"reference={f}:my_adjoint", "--impl-only", "--claims", "reference.*", "--out", str(out)]
    assert main(argv) == 0
    doc = json.loads((out / "results.json").read_text())
    (src,) = doc["run"]["implementations"]
    assert src["name"] == "reference.adjoint" and src["sha256"] == sha and Path(src["file"]) == f.resolve()
    by_id = {c["id"]: c for c in doc["claims"]}
    assert by_id["reference.adjoint"]["verdict"] == "PASS"
    assert sha in by_id["reference.adjoint"]["implementation"]["reference.adjoint"]
    assert f"--impl reference={f}:my_adjoint" in by_id["reference.adjoint"]["rerun"]
    # reference.influence exercises only the influence: left out under --impl-only, and the run says so
    assert "reference.influence" not in by_id and doc["run"]["impl_only_left_out"] == ["reference.influence"]
    assert "--impl-only: 1 claims" in capsys.readouterr().err
    md = (out / "report.md").read_text()
    assert "implementation under test (reference.adjoint)" in md and sha in md
    assert main(["report", str(out)]) == 0  # the new fields pass the results.json validation


def test_broken_user_adjoint_fails_the_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "broken_adjoint.py"
    f.write_text("from verify.impl.mutants.reference import no_adjoint_propagation as broken\n")
    argv = ["run", "--impl", f"reference={f}:broken", "--claims", "reference.adjoint", "--no-report"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "reference.adjoint" in out


def test_derived_parts_carry_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impls = load_implementations(["tbptt=verify.examples.tbptt:MyTBPTT"])
    # the truncation bounds judge the last-step estimate of the user's TBPTT: named with the same source
    assert set(impls.user_parts()) == {"truncation.tbptt", "truncation.tbptt_gradient"}
    src = impls.source("truncation.tbptt_gradient")
    assert src is not None and src.spec == "verify.examples.tbptt:MyTBPTT" and len(src.sha256) == 64
    out = tmp_path / "r.json"
    argv = ["run", "--impl", "tbptt=verify.examples.tbptt:MyTBPTT", "--claims", "rtrl.truncated-bptt", "--workers"]
    assert main([*argv, "1", "--no-report", "-q", "--json", str(out)]) == 0
    (rec,) = json.loads(out.read_text())["claims"]
    assert rec["implementation"]["truncation.truncated_model"].startswith("toolkit default")
    assert "verify.examples.tbptt:MyTBPTT" in rec["implementation"]["truncation.tbptt"]


@pytest.mark.parametrize("code", [0, 3, None])
def test_sys_exit_at_import_is_the_users_error_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: int | None
) -> None:
    """Issue 23/27: `sys.exit(0)` in an --impl module must not turn the gate green (it exited 0 with no report)."""
    f = tmp_path / f"exits_{code}.py"
    f.write_text(f"import sys\nsys.exit({code!r})\n")
    err = _err(capsys, ["run", "--impl", f"reference={f}:adjoint", "--no-report"])
    assert "SystemExit" in err and "sys.exit()" in err


def test_sys_exit_inside_a_claim_is_a_fail_not_the_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An adjoint that passes the load probe, then calls sys.exit(0) on the claim's problems: FAIL, exit 1."""
    f = tmp_path / "late_exit.py"
    f.write_text(
        "import sys\n"
        "from verify.oracles.bptt import adjoint_gradient\n"
        "calls = []\n"
        "def adjoint(problem, theta, per_step=False):\n"
        "    calls.append(1)\n"
        "    if len(calls) > 2:  # the load probe (per_step False, True) passes; the claim's first problem exits\n"
        "        sys.exit(0)\n"
        "    return adjoint_gradient(problem, theta, per_step=per_step)\n"
    )
    argv = ["run", "--impl", f"reference={f}:adjoint", "--claims", "reference.adjoint", "--no-report"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "SystemExit(0)" in out


_PROBE_ONLY = (
    "from verify.errors import NotApplicable\n"
    "from verify.oracles.bptt import adjoint_gradient\n"
    "calls = []\n"
    "def adjoint(problem, theta, per_step=False):\n"
    "    calls.append(1)\n"
    "    if len(calls) > 2:  # the load probe (2 calls) passes; every problem of the claim is 'not supported'\n"
    "        raise NotApplicable('adjoint', 'this adjoint supports the probe problem only')\n"
    "    return adjoint_gradient(problem, theta, per_step=per_step)\n"
)


@pytest.mark.parametrize("only", [True, False])
def test_a_run_that_checked_nothing_of_the_users_code_is_not_green(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], only: bool
) -> None:
    """Issue 21: every claim exercising the user's part SKIPPED -> exit 1 with the reason, never a green gate."""
    f = tmp_path / f"probe_only_{only}.py"  # a module name of its own: the loader caches modules by name
    f.write_text(_PROBE_ONLY)
    argv = ["run", "--impl", f"reference={f}:adjoint", "--claims", "reference.*", "--no-report", "-q"]
    assert main([*argv, *(["--impl-only"] if only else [])]) == 1
    err = capsys.readouterr().err
    assert "nothing of the implementation under test (reference.adjoint) was checked" in err
    assert "reference.adjoint: " in err and "supports the probe problem only" in err


def test_a_run_that_checked_the_users_code_stays_green(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "fine.py"
    f.write_text("from verify.oracles.bptt import adjoint_gradient as adjoint\n")
    assert main(["run", "--impl", f"reference={f}:adjoint", "--claims", "reference.adjoint", "--no-report", "-q"]) == 0
    assert "was checked" not in capsys.readouterr().err


def test_an_error_in_the_users_code_is_shown_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21: a bare `assert` failing in user code was "check raised AssertionError: " with the stored
    traceback cut before the user's frame; now the summary names the exception, that it has no message and
    where the user's code raised it, and the reason keeps the innermost frames."""
    f = tmp_path / "asserts_later.py"
    f.write_text(
        "from verify.oracles.bptt import adjoint_gradient\n"
        "calls = []\n"
        "def adjoint(problem, theta, per_step=False):\n"
        "    calls.append(1)\n"
        "    assert len(calls) < 3  # the load probe (2 calls) passes; the claim's first problem trips it\n"
        "    return adjoint_gradient(problem, theta, per_step=per_step)\n"
    )
    out = tmp_path / "r.json"
    argv = ["run", "--impl", f"reference={f}:adjoint", "--claims", "reference.adjoint", "--no-report", "-q"]
    assert main([*argv, "--json", str(out)]) == 1
    (rec,) = json.loads(out.read_text())["claims"]
    assert rec["verdict"] == "FAIL"
    assert f"AssertionError: (no message) [raised at {f}:5 in adjoint]" in rec["summary"]
    assert str(f) in rec["reason"] and "assert len(calls) < 3" in rec["reason"]


def test_a_factory_forwarding_kwargs_it_cannot_take_is_not_applicable() -> None:
    """Issue 21: a class forwarding **kwargs FAILed with a TypeError; a claim needing rank-r is SKIPPED naming it."""
    from verify.errors import NotApplicable
    from verify.examples.uoro import MyUORO
    from verify.impl import build

    def forwarding(**kw: object) -> object:
        return MyUORO(**kw)  # type: ignore[arg-type]

    assert isinstance(build(forwarding, "uoro.unbiased"), MyUORO)
    with pytest.raises(NotApplicable, match=r"forwards \(rank=2\) to code that does not take it.*'rank'"):
        build(forwarding, "uoro.rank-unbiased (rank-r UORO)", rank=2)


_USER_RTRL = "from verify.examples.rtrl import MyRTRL\n\n\nclass FileRTRL(MyRTRL):\n    name = 'file-rtrl'\n"
_RTRL_CLAIMS = ["--claims", "rtrl.exact", "rtrl.influence-balancing"]


def _two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two worker processes even on a one-CPU machine (the run caps --workers at the CPUs)."""
    monkeypatch.setattr(cli_mod, "available_cpus", lambda: 2)
    monkeypatch.setattr(catalog_mod, "_cpus", lambda: 2)


@pytest.mark.slow  # two runs, one with two worker processes: .ci/run's slow step (tests/cli)
def test_workers_load_the_users_file_and_give_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: --impl with --workers 2 runs the user's file in both worker processes (loaded again there from
    the relative spec), with the verdicts, statistics and provenance of the one-process run."""
    _two_cpus(monkeypatch)
    monkeypatch.chdir(tmp_path)
    Path("my_rtrl.py").write_text(_USER_RTRL)
    docs = {}
    for n in ("1", "2"):
        argv = ["run", "--impl", "rtrl=my_rtrl.py:FileRTRL", *_RTRL_CLAIMS, "--workers", n, "--no-report", "-q"]
        assert main([*argv, "--json", f"r{n}.json"]) == 0
        docs[n] = json.loads(Path(f"r{n}.json").read_text())
    # a user's code runs in isolated workers whatever N (issue 36): one process for --workers 1, two for 2
    assert docs["1"]["run"]["executor"].startswith("isolated (1 worker process,")
    assert docs["2"]["run"]["executor"].startswith("isolated (2 worker processes,")
    assert docs["1"]["run"]["implementations"] == docs["2"]["run"]["implementations"]
    (src,) = docs["2"]["run"]["implementations"]
    assert Path(src["file"]) == (tmp_path / "my_rtrl.py").resolve() and len(src["sha256"]) == 64
    keys = ("id", "verdict", "summary", "statistic", "threshold", "samples_used", "implementation", "controls")
    for one, two in zip(docs["1"]["claims"], docs["2"]["claims"], strict=True):
        assert {k: one[k] for k in keys} == {k: two[k] for k in keys}
    assert docs["2"]["claims"][0]["verdict"] == "PASS" and "file-rtrl" not in capsys.readouterr().err


def test_a_spec_that_does_not_load_in_a_worker_is_a_clear_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Loaded and probed by the load check, but a claim's worker cannot load it again: every claim it ran FAILs
    naming the spec and why (the supervisor never loads it: issue 36)."""
    _two_cpus(monkeypatch)
    f = tmp_path / "main_only.py"
    mark = tmp_path / "loaded-once"
    f.write_text(
        f"import os\nif os.path.exists({str(mark)!r}):\n"
        "    raise RuntimeError('this module loads in the main process only')\n"
        f"open({str(mark)!r}, 'w').close()\n" + _USER_RTRL
    )
    out = tmp_path / "r.json"
    argv = ["run", "--impl", f"rtrl={f}:FileRTRL", *_RTRL_CLAIMS, "--workers", "2", "--no-report", "-q"]
    assert main([*argv, "--json", str(out)]) == 1
    recs = json.loads(out.read_text())["claims"]
    failed = [rec for rec in recs if rec["verdict"] == "FAIL"]
    assert failed and all(rec["verdict"] in ("FAIL", "PASS") for rec in recs)  # PASS: the load check's own worker
    for rec in failed:
        assert f"--impl rtrl={f}:FileRTRL: cannot be loaded in worker process" in rec["summary"]
        assert "this module loads in the main process only" in rec["summary"]


def test_implementations_sent_to_a_worker_must_load_as_validated(tmp_path: Path) -> None:
    """The worker side: a file whose SHA-256 changed since the run's process loaded it is named, not run; values
    built in code (a mutant) cannot be sent at all."""
    from dataclasses import replace as dc_replace

    from theory.catalog import all_claims
    from verify.config import RunConfig
    from verify.impl.mutants import get
    from verify.run.check import claim_params, implementations_from_params

    f = tmp_path / "changing.py"
    f.write_text(_USER_RTRL)
    spec = f"rtrl={f}:FileRTRL"
    config = RunConfig(implementations=load_implementations([spec]), impl_specs=(spec,))
    claim = all_claims()["rtrl.exact"]
    block = claim_params(claim, config)["impls"]
    assert implementations_from_params(block).source("rtrl.rtrl") == config.impls.source("rtrl.rtrl")
    block["sources"][0]["sha256"] = "0" * 64  # as if the file had changed after the run's process loaded it
    with pytest.raises(ImplementationError, match=r"but the run's process validated file .* sha256 0000"):
        implementations_from_params(block)
    mutant = get("uoro.theta-tilde-scaled").implementations
    with pytest.raises(InvalidArgument, match="cannot be sent to a worker process"):
        claim_params(claim, dc_replace(config, implementations=mutant, impl_specs=()))
