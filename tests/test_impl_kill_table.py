"""Mutants passed in through ``--impl`` (as a user passes code) are caught by the same claims as internally.

The internal route is ``RunConfig(implementations=mutant.implementations)``
(``replace(default, field=broken)``); the user's route writes a file that exposes the
mutant's broken part and runs ``rnn-verify run --impl family.field=that/file.py:part``.
The two kill tables (mutant x claim -> verdict) must be equal, and every entry FAIL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from theory.catalog import all_claims
from verify.cli import main
from verify.config import RunConfig
from verify.impl.mutants import Mutant, all_mutants
from verify.run.check import run_check

#: one mutant of every part that has mutants, with one (quick) claim it is visible to
SUBSET = {
    "adjoint.no-propagation": "reference.adjoint",
    "influence.perturbed-w": "reference.influence",
    "rtrl.no-immediate-term": "rtrl.exact",
    "tbptt.off-by-one": "rtrl.truncated-bptt",
    "uoro.rho1-constant": "uoro.algorithm-1-conformance",
    "uoro-preact.noise-zero-one": "uoro.preactivation",
    "fpp.eq7-penalty-sign": "fpp.gradient-eq7",
    "fpp.sampler-exclusive-endpoint": "fpp.lemma3-unbiased",
    "truncated-gradient.block-restart": "truncation.figure-1a",
    "certificate.linf-norm": "truncation.assumption-checker",
    "device.float16-silent": "device.float32-standin",
    "reinforce.no-inverse-sigma": "uoro.reinforce-link",
    "uoro.framework-q0-inverted": "uoro.variance-reduction-optimal",
    "snap.transposed-pattern": "rtrl.snap-exactness",
    "rflo.no-leak": "rtrl.rflo-limits",
    "eprop.no-self-connection": "rtrl.eprop-limits",
    "alignment.snap-declared-unbiased": "rtrl.bias-alignment",
    "kfrtrl.new-state-factor": "uoro.kfrtrl-unbiased",
    "ok.truncated-svd": "uoro.ok-unbiased",
}
#: the same for the parts whose quickest claim takes 10-20 s per route (marked slow)
SLOW_SUBSET = {
    "truncated-model.restart-late": "truncation.state-bound",
    "tbptt.window-short": "truncation.tbptt-gradient-bound",
    "fpp.multiplier-unscaled": "fpp.kkt-recovery",
}
_ALL = {**SUBSET, **SLOW_SUBSET}


def _internal(m: Mutant, claims: list[str]) -> dict[str, str]:
    cfg = RunConfig(implementations=m.implementations)
    return {cid: run_check(all_claims()[cid], cfg).verdict.value for cid in claims}


def _via_impl(m: Mutant, claims: list[str], tmp: Path) -> dict[str, str]:
    f = tmp / f"user_{m.name.replace('.', '_').replace('-', '_')}.py"
    f.write_text(f"from verify.impl.mutants import get\n\npart = get({m.name!r}).part\n")
    out = tmp / f"{f.stem}.json"
    code = main(["run", "--impl", f"{m.target}={f}:part", "--claims", *claims, "--no-report", "-q", "--json", str(out)])
    doc = json.loads(out.read_text())
    verdicts = {c["id"]: c["verdict"] for c in doc["claims"]}
    assert code == (1 if "FAIL" in verdicts.values() else 0)
    for c in doc["claims"]:  # the claim names the user's file for the part (or the part derived from it) it used
        assert any(str(f) in v for v in c["implementation"].values()), c["implementation"]
    return verdicts


def test_subset_covers_every_mutated_part() -> None:
    mutants = all_mutants()
    assert {mutants[n].target for n in _ALL} == {m.target for m in mutants.values()}
    assert all(_ALL[n] in mutants[n].visible_to for n in _ALL)


@pytest.mark.parametrize(
    "name", [*sorted(SUBSET), *(pytest.param(n, marks=pytest.mark.slow) for n in sorted(SLOW_SUBSET))]
)
def test_kill_tables_equal_on_one_mutant_per_part(name: str, tmp_path: Path) -> None:
    m = all_mutants()[name]
    claims = [_ALL[name]]
    internal = _internal(m, claims)
    assert internal == {_ALL[name]: "FAIL"}
    assert _via_impl(m, claims, tmp_path) == internal


@pytest.mark.slow
def test_kill_tables_equal_on_the_whole_catalog(tmp_path: Path) -> None:
    internal, user = {}, {}
    for m in all_mutants().values():
        claims = [c for c in m.visible_to if "ci" in all_claims()[c].profiles]
        if claims:
            internal[m.name] = _internal(m, claims)
            user[m.name] = _via_impl(m, claims, tmp_path)
    assert user == internal
    # every entry FAIL, but for the CUDA claim without CUDA (SKIPPED with the reason on both routes)
    missed = {
        (m, c): v
        for m, row in internal.items()
        for c, v in row.items()
        if v != "FAIL" and not (v == "SKIPPED" and "cuda" in all_claims()[c].requires)
    }
    assert not missed, missed


def test_kill_table_runs_every_statistical_claim_a_mutant_is_visible_to() -> None:
    """A check module split off (e.g. uoro_variance_matches) must stay in the kill table, not drop out of it quietly."""
    from verify.checks import registry
    from verify.checks.uoro_mutants import STATISTICAL_MODULES
    from verify.impl.mutants.uoro import MUTANTS

    checks = registry()
    for m in MUTANTS:
        for cid in m.visible_to:
            mod = checks[cid].__module__
            assert mod == "verify.checks.uoro" or mod in STATISTICAL_MODULES, (m.name, cid, mod)
