"""The gate sweep (issue 27): every claim over seeds, FAIL rates against the stated alpha, controls caught in
every seed, and the family-wise record."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from theory.catalog import get_claim
from theory.gate import planned_alpha
from verify.run.catalog import EXPECTED_SECONDS, SHARED_WORK, longest_first
from verify.run.check import select_claims, torch_threads
from verify.run.sweep import SerialExecutor, SweepOptions, get_definition, run_plan
from verify.run.sweep.definitions import GATE_RECORD, family_wise_result, gate_result
from verify.verdict import CheckResult, Control, Verdict


def _claim(alpha: float | None) -> SimpleNamespace:
    return SimpleNamespace(id="x.y", alpha=alpha, control_beta=0.0)


def _res(seed: int, verdict: Verdict = Verdict.PASS, caught: bool = True) -> CheckResult:
    ctrl = (Control("mutant m", "FAIL", "FAIL" if caught else "PASS"),)
    why = None if verdict is Verdict.PASS else "why"
    return CheckResult("x.y", verdict, "s", seed=seed, controls=ctrl, reason=why)


def test_gate_result_passes_clean_seeds_and_counts_controls() -> None:
    res = gate_result(_claim(1e-3), [_res(s) for s in range(10)], list(range(10)), "ci")
    assert res.verdict is Verdict.PASS
    assert res.data["controls"] == {"mutant m": {"caught": 10, "runs": 10}}
    assert "caught 10/10" in res.summary


def test_gate_result_fails_a_missed_control_whatever_the_claims_rate() -> None:
    """A missed control FAILs the check (a check cannot PASS then); the gate names the control, even where one
    FAIL in 10 seeds would be within a (large) stated rate."""
    res = [_res(s, Verdict.FAIL if s == 3 else Verdict.PASS, caught=s != 3) for s in range(10)]
    out = gate_result(_claim(0.5), res, list(range(10)), "ci")
    assert out.verdict is Verdict.FAIL and "mutant m 1/10" in (out.reason or "")


def test_gate_result_fails_a_deterministic_claim_that_failed_once() -> None:
    res = gate_result(_claim(None), [_res(s, Verdict.FAIL if s == 4 else Verdict.PASS) for s in range(10)],
                      list(range(10)), "ci")  # fmt: skip
    assert res.verdict is Verdict.FAIL and res.data["fail_seeds"] == [4]


def test_gate_result_fails_a_rate_significantly_above_alpha() -> None:
    res = gate_result(_claim(1e-3), [_res(s, Verdict.FAIL if s < 3 else Verdict.PASS) for s in range(20)],
                      list(range(20)), "ci")  # fmt: skip
    assert res.verdict is Verdict.FAIL and "above alpha" in (res.reason or "")


def test_family_wise_record_counts_seeds_with_any_fail() -> None:
    per = {"a.b": [_res(0), _res(1, Verdict.FAIL)], "c.d": [_res(0, Verdict.INCONCLUSIVE), _res(1, Verdict.FAIL)]}
    res = family_wise_result(per, [0, 1], "ci")
    assert res.claim_id == GATE_RECORD
    assert res.data["fail_seeds"] == [1] and res.data["inconclusive_seeds"] == [0]
    assert res.data["stated_family_wise"] <= res.data["budget"]


def test_gate_sweep_runs_claims_over_seeds_end_to_end() -> None:
    plan = get_definition("gate").build(
        SweepOptions(seeds=2, claims=("rtrl.exact", "truncation.assumption-checker"), profile="ci")
    )
    assert len(plan.cells) == 4
    run = run_plan(plan, SerialExecutor())
    by_id = {r.claim_id: r for r in run.results}
    assert set(by_id) == {"rtrl.exact", "truncation.assumption-checker", GATE_RECORD}
    assert all(r.verdict is Verdict.PASS for r in run.results), [r.summary for r in run.results]
    assert by_id["rtrl.exact"].data["controls"]


def test_longest_claims_start_first_and_threads_are_restored() -> None:
    claims = select_claims(None, profile="ci")
    ordered = longest_first(claims)
    assert ordered[0].id == max(EXPECTED_SECONDS, key=EXPECTED_SECONDS.__getitem__)
    assert sorted(c.id for c in ordered) == sorted(c.id for c in claims)
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_claims_sharing_work_are_scheduled_together() -> None:
    """Issue 42: the claims over one cached computation stay adjacent in the schedule (one worker runs them)."""
    ordered = [c.id for c in longest_first(select_claims(None, profile="ci"))]
    for name in set(SHARED_WORK.values()):
        at = [i for i, cid in enumerate(ordered) if SHARED_WORK.get(cid) == name]
        assert len(at) >= 2 and at == list(range(at[0], at[0] + len(at))), (name, at)


def test_a_cell_goes_to_the_worker_holding_its_shared_work() -> None:
    """The pool's choice of the next cell (no processes): a cell whose shared work another live worker holds is
    passed over for the next one; taken where nothing else waits, or once that worker is gone."""
    from collections import deque

    from verify.run.pool import IsolatedPool

    cell = {n: SimpleNamespace(params={"claim": n}) for n in ("a1", "b", "a2", "a3")}
    w1, w2 = SimpleNamespace(pid=1), SimpleNamespace(pid=2)
    pool = SimpleNamespace(
        _workers=[w1, w2], _home={}, affinity_for=lambda c: "A" if c.params["claim"][0] == "a" else None
    )
    pending = deque(cell[n] for n in ("a1", "b", "a2", "a3"))
    take = IsolatedPool._next_cell
    assert take(pool, pending, w1) is cell["a1"] and pool._home == {"A": 1}  # type: ignore[arg-type]
    assert take(pool, pending, w2) is cell["b"]  # type: ignore[arg-type]  # a2 waits for worker 1
    assert take(pool, pending, w1) is cell["a2"]  # type: ignore[arg-type]
    assert take(pool, pending, w2) is cell["a3"] and not pending  # type: ignore[arg-type]  # nothing else waits
    pending = deque([cell["a1"], cell["b"]])
    pool._workers = [w2]  # worker 1 is gone: its shared work with it
    assert take(pool, pending, w2) is cell["a1"] and pool._home == {"A": 2}  # type: ignore[arg-type]


@pytest.mark.slow
def test_gate_is_seed_independent_over_20_seeds() -> None:
    """Issue 27's slow guard: the whole ci profile on 20 fresh seeds (1000..1019), two worker processes: no claim
    FAILs correct code and every negative control is caught in every seed (the published 200-seed run is in
    reports/gate-calibration)."""
    from verify.run.sweep import ProcessExecutor

    plan = get_definition("gate").build(SweepOptions(seed=1000, seeds=20, profile="ci"))
    with ProcessExecutor(2, 1) as ex:
        run = run_plan(plan, ex)
    bad = [f"{r.claim_id}: {r.summary} {r.reason or ''}" for r in run.results if r.verdict is not Verdict.PASS]
    assert not bad, bad


def test_kill_table_rows_count_as_controls_and_the_budget_is_the_selections() -> None:
    rows = [{"mutant": "uoro.a", "killed": True, "clean": True}, {"mutant": "uoro.b", "killed": False, "clean": True}]
    res = [CheckResult("x.y", Verdict.FAIL, "s", seed=0, reason="why", data={"kill_table": rows})]
    out = gate_result(_claim(1e-3), res, [0], "ci")
    assert out.verdict is Verdict.FAIL and "kill table: uoro.b 1/1" in (out.reason or "")
    fw = family_wise_result({"uoro.variance-matches-algorithm-1": []}, [0], "ci")
    claim = get_claim("uoro.variance-matches-algorithm-1")
    assert fw.data["stated_family_wise"] == pytest.approx(planned_alpha(claim.id) + claim.control_beta)
