"""Issue 38: the gallery's vanilla-rtrl adapters (:mod:`verify.gallery.vanilla_rtrl`) against a stand-in.

CI has no checkout of github.com/omarschall/vanilla-rtrl: each adapter runs here against
``tests/gallery/standins/vanilla_rtrl`` (our stand-in: the library's module paths, class names and call signatures,
our maths), through one claim of the catalog via the CLI, and a seeded bug of the stand-in (``VANILLA_STANDIN_BUG``)
FAILs. The real runs are recorded in ``reports/gallery-notes/notes-vanilla_rtrl.md``.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from verify.cli import main
from verify.errors import InvalidArgument
from verify.gallery import env_var, glue_lines, repository
from verify.gallery import vanilla_rtrl as vr

STANDIN = Path(__file__).parent / "standins" / "vanilla_rtrl"
ENV = env_var(vr.REPO.name)
_LIBRARY = ("core", "functions", "learning_algorithms")


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The stand-in as the checkout; its top-level packages are removed from this process afterwards (the library
    imports them by generic names: ``core``, ``functions``)."""
    monkeypatch.setenv(ENV, str(STANDIN))
    monkeypatch.delenv("VANILLA_STANDIN_BUG", raising=False)
    path = list(sys.path)
    yield STANDIN
    for name in [m for m in sys.modules if m.split(".")[0] in _LIBRARY]:
        del sys.modules[name]
    sys.path[:] = path


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, adapter: str, claim: str) -> dict:
    out = tmp_path / "results.json"
    impl = f"{target}=verify.gallery.vanilla_rtrl:{adapter}"
    argv = ["run", "--impl", impl, "--impl-only", "--claims", claim, "--no-report", "-q", "--workers", "1"]
    code = main([*argv, "--json", str(out)])
    capsys.readouterr()
    result: dict = {c["id"]: c for c in json.loads(out.read_text())["claims"]}[claim]
    # a run whose only claim SKIPs checked nothing of the implementation: exit 1, "a gate must not pass on nothing"
    assert code == {"PASS": 0, "SKIPPED": 1, "FAIL": 1}[result["verdict"]], result["summary"]
    return result


# ------------------------------------------------------------------ the declarations
def test_every_entry_names_an_adapter_or_a_reason_and_fits_the_glue_budget() -> None:
    repo = repository("vanilla_rtrl")
    assert repo.module == "vanilla_rtrl" and repo.license.startswith("none")
    for entry in repo.entries:
        if entry.skip:
            assert len(entry.skip) > 40 and not entry.claims, entry
            continue
        assert callable(getattr(vr, entry.adapter)), entry
        assert glue_lines(repo, entry) <= 30, (entry.adapter, glue_lines(repo, entry))
    algorithms = {e.algorithm.split(" ")[0] for e in repo.entries}
    assert {"RTRL", "UORO", "KF_RTRL", "Reverse_KF_RTRL", "RFLO", "KeRNL", "DNI", "REINFORCE"} <= algorithms


def test_an_unset_checkout_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(InvalidArgument, match=ENV):
        vr.rtrl()


def test_a_second_checkout_in_one_process_is_refused(
    standin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vr.rtrl()  # imports the stand-in's core and functions
    other = tmp_path / "other"
    shutil.copytree(STANDIN, other)
    monkeypatch.setenv(ENV, str(other))
    with pytest.raises(InvalidArgument, match="one came from elsewhere"):
        vr.rflo()


# ------------------------------------------------------------------ each adapter through a claim
def test_rtrl_passes_rtrl_exact_with_its_influence(
    standin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = _run(tmp_path, capsys, "rtrl", "rtrl", "rtrl.exact")
    assert r["verdict"] == "PASS" and "influence" in r["summary"], r["summary"]
    assert set(r["data"]["coverage"]["covered"]) == {"elman-tanh/squared-error/0", "elman-relu/squared-error/0"}


def test_rtrl_with_a_seeded_bug_fails_rtrl_exact(
    standin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VANILLA_STANDIN_BUG", "rtrl-no-immediate")
    assert _run(tmp_path, capsys, "rtrl", "rtrl", "rtrl.exact")["verdict"] == "FAIL"


@pytest.mark.slow  # about 15 s: six leaky and Elman problems, and the toolkit's three RFLO mutants
@pytest.mark.parametrize(("bug", "verdict"), [("", "PASS"), ("rflo-no-leak", "FAIL")])
def test_rflo_limits_on_the_leaky_units(
    bug: str,
    verdict: str,
    standin: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VANILLA_STANDIN_BUG", bug)
    r = _run(tmp_path, capsys, "rflo", "rflo", "rtrl.rflo-limits")
    assert r["verdict"] == verdict, r["summary"]


@pytest.mark.parametrize("adapter", ["uoro", "kf_rtrl", "reverse_kf_rtrl"])
def test_a_random_start_is_declared_and_the_tabulated_claim_skips(
    adapter: str, standin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A start drawn per sample: under tabulated ν the results are not determined by the table, so the exact
    enumeration refuses it with the reason (its unbiasedness over the start is for the statistical claims)."""
    est = getattr(vr, adapter)()
    assert est.random_start and est.noise_hook
    r = _run(tmp_path, capsys, "uoro", adapter, "uoro.exact-expectation")
    assert r["verdict"] == "SKIPPED" and "random_start" in r["summary"], r["summary"]


@pytest.mark.slow  # about 20 s: 256 sign patterns on two problems, and the toolkit's mutants
@pytest.mark.parametrize(
    ("target", "adapter", "claim"),
    [("uoro", "uoro_fixed_start", "uoro.exact-expectation"), ("kfrtrl", "kf_rtrl_fixed_start", "uoro.kfrtrl-unbiased")],
)
def test_a_fixed_start_is_biased_given_the_start(
    target: str, adapter: str, claim: str, standin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding's mechanism on the stand-in (which starts like the library): one start shared by every sample,
    the exact expectation over the signs carries the propagated start term."""
    r = _run(tmp_path, capsys, target, adapter, claim)
    assert r["verdict"] == "FAIL" and "elman-tanh" in r["summary"], r["summary"]
