"""Every verdict's words agree with its numbers (issue 21 item 4).

A summary is read by people who do not open ``data``: when it says "VIOLATED", "holds",
"= closed form", "check raised ..." or quotes "error A vs budget B", the result's numbers must
say the same. :data:`RULES` is the table of those agreements, one row per wording: a regular
expression over the summary and a predicate on the :class:`~verify.verdict.CheckResult` (and
the match) that must hold wherever the pattern occurs. Each rule is shown able to fail on a
doctored result (:data:`CASES`); the table is then applied to the results of every claim of
the catalog (ci profile, seed 0, the toolkit's own implementations) and of every mutant of the
mutant catalog on the claims it is visible to (:mod:`verify.impl.mutants`).

The whole run takes ~60 s on two workers and is marked ``slow``; the default run checks a
representative subset (:data:`FAST`): the truncation bounds with their window and restart
mutants, a mutant refused by the toolkit's validation (``tbptt.off-by-one``), the FPP rate and
bound wordings, the device parity summary with a broken candidate and the certificate checker.
Results are computed once per session (:func:`results`) and shared by both.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import re
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.impl.mutants import all_mutants, get
from verify.run.check import run_check
from verify.verdict import CheckResult, Verdict

NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan)"


# ------------------------------------------------------------------------------------------ reading numbers
def quoted(text: str) -> float:
    return float(text)


def same(text: str, value: float | None) -> bool:
    """``value`` printed at the precision of ``text`` reads ``text`` (the half unit in its last place)."""
    if value is None:
        return False
    q = float(text)
    if math.isnan(q) or math.isnan(value):
        return math.isnan(q) and math.isnan(value)
    if math.isinf(q) or math.isinf(value) or q == 0.0:
        return q == value
    mantissa = text.lower().lstrip("+-").split("e")[0]
    digits = len(mantissa.replace(".", "").lstrip("0")) or 1
    ulp = 10.0 ** (math.floor(math.log10(abs(q))) - digits + 1)
    return abs(q - value) <= 0.51 * ulp


def at_most(a: str, b: str) -> bool:
    """The quoted ``a`` <= the quoted ``b`` (both as printed)."""
    x, y = quoted(a), quoted(b)
    return not (math.isnan(x) or math.isnan(y)) and x <= y


def within(r: CheckResult) -> bool | None:
    """Is the statistic on the right side of the threshold for ``comparison``? None where that is not numeric."""
    s, t, c = r.statistic, r.threshold, r.comparison
    if c == "CI contains":
        m = re.search(rf"CI \[({NUM}), ({NUM})\]", r.summary)
        if m is None or t is None:
            return None
        return (quoted(m[1]) <= t or same(m[1], t)) and (t <= quoted(m[2]) or same(m[2], t))
    if s is None or t is None or math.isnan(s) or math.isnan(t):
        return None
    ops: dict[str, Callable[[float, float], bool]] = {
        "<=": lambda a, b: a <= b,
        "<": lambda a, b: a < b,
        ">=": lambda a, b: a >= b,
        ">": lambda a, b: a > b,
        "|z| <=": lambda a, b: abs(a) <= b,
    }
    return ops[c](s, t) if c in ops else None


FAILURE_WORDS = re.compile(
    r"\b(FAIL|FAILED|VIOLATED|REJECTED|NOT|NO|ANOMALY|SLOWER)\b|: False\b|\bdiffers?\b|\bbroke\b|\bover budget\b"
    r"|\boutside\b|\bexceeds?\b|\braised\b|not as expected"
)


def _failing_rows(r: CheckResult) -> bool:
    """The result's instance rows record a bound that does not hold (``<bound>_holds`` False)."""
    rows = r.data.get("instances") or []
    return any(v is False for row in rows if isinstance(row, dict) for k, v in row.items() if k.endswith("_holds"))


def _data_violation(r: CheckResult) -> bool:
    """The data shows a violated bound: a failing instance row or an extremal fixture whose bound does not hold."""
    extremal = r.data.get("extremal") or {}
    return _failing_rows(r) or any(isinstance(f, dict) and f.get("holds") is False for f in extremal.values())


# ------------------------------------------------------------------------------------------ the rules
@dataclass(frozen=True)
class Rule:
    """Wherever ``pattern`` matches a summary (every result when it is None), ``agrees(result, match)`` holds."""

    name: str
    pattern: str | None
    agrees: Callable[[CheckResult, re.Match[str] | None], bool]
    why: str


def _stated(r: CheckResult, m: re.Match[str] | None) -> bool:
    assert m is not None
    if m["lead"] is not None:  # "SKIPPED: ..." at the start is the verdict itself
        return m["lead"] == r.verdict.value
    if m["word"] == "PASS":
        return r.verdict is Verdict.PASS or re.search(r":\s*FAIL\b|FAILED|VIOLATED|REJECTED", r.summary) is not None
    return r.verdict is not Verdict.PASS


def _holds_or_violated(r: CheckResult, m: re.Match[str] | None) -> bool:
    assert m is not None
    fine = at_most(m["worst"], "1") and not _failing_rows(r)
    return fine if m["word"] == "holds" else not fine


def _pair(r: CheckResult, m: re.Match[str] | None) -> bool:
    assert m is not None
    a, b = m["a"] or m["a2"], m["b"] or m["b2"]
    if not (quoted(b) > 0 and math.isfinite(quoted(b))):
        return False  # a budget of nan, inf or 0 says nothing
    if r.verdict is Verdict.PASS and not at_most(a, b):
        return False
    if r.statistic is not None and r.threshold is not None and same(a, r.statistic) and r.statistic != r.threshold:
        return same(b, r.threshold)
    return True


def _ratio(r: CheckResult, m: re.Match[str] | None) -> bool:
    assert m is not None
    s, t = r.statistic, r.threshold
    if s is None or t is None or t == 0 or math.isnan(t):
        return True
    return same(m[1], s / t)


def _intervals_reach(r: CheckResult, m: re.Match[str] | None) -> bool:
    assert m is not None
    los = [quoted(x) for x in re.findall(rf"slope {NUM} \[({NUM}), {NUM}\]", r.summary[: m.start()])]
    return bool(los) and all(lo <= quoted(m[1]) for lo in los)


RULES: tuple[Rule, ...] = (
    Rule(
        "pass-within-threshold",
        None,
        lambda r, m: r.verdict is not Verdict.PASS or within(r) is not False,
        "a PASS reports a statistic on the passing side of its threshold (the threshold it applied)",
    ),
    Rule(
        "fail-names-what-failed",
        None,
        lambda r, m: (
            r.verdict is not Verdict.FAIL or within(r) is not True or FAILURE_WORDS.search(r.summary) is not None
        ),
        "a FAIL whose statistic is within its threshold says in words what failed",
    ),
    Rule(
        "stated-outcome",
        r"^(?P<lead>PASS|FAIL|INCONCLUSIVE|SKIPPED)\b|:\s*(?P<word>PASS|FAIL)\b",
        _stated,
        "a verdict word in the summary agrees with the verdict (a sub-test's PASS only next to the FAIL)",
    ),
    Rule(
        "violated-past-threshold",
        r"\bVIOLATED\b",
        lambda r, m: within(r) is not True or _data_violation(r),
        "'VIOLATED' only where the statistic is past the threshold or the data shows the violation",
    ),
    Rule(
        "holds-or-violated-on-the-suite",
        rf"\b(?P<word>holds|VIOLATED)\b[^;]*?random instances; tightness[^;]*?worst (?P<worst>{NUM})",
        _holds_or_violated,
        "'holds'/'VIOLATED' on the random instances agrees with their worst tightness and their rows",
    ),
    Rule(
        "equals-closed-form",
        r"= closed form|equals? the closed form",
        lambda r, m: all(rec.get("closed_form_ok", True) for rec in (r.data.get("extremal") or {}).values()),
        "'= closed form' only where every closed-form comparison conforms",
    ),
    Rule(
        "not-a-crash",
        r"\bcheck raised (\w+)",
        lambda r, m: m is not None and m[1] not in ("InvalidArgument", "ContractViolation", "ImplementationError"),
        "a value the toolkit's validation refused is what the implementation did wrong, not a crash of the check",
    ),
    Rule(
        "not-bias",
        r"\bnot bias",
        lambda r, m: r.data.get("mean_matches") is True,
        "'not bias' only where the result's data records a mean comparison that found none",
    ),
    Rule(
        "ratio-is-statistic-over-threshold",
        rf"^[^;]*?worst (?:error|measured)/budget ({NUM})",
        _ratio,
        "the worst error/budget quoted first is statistic / threshold",
    ),
    Rule(
        "error-vs-budget",
        rf"\berror (?P<a>{NUM}) (?:\([^()]*\) )?vs (?:budget |threshold )?(?P<b>{NUM})"
        rf"|\|error\| (?P<a2>{NUM}) \((?:[^()]*?, )?(?:budget|tolerance) (?P<b2>{NUM})\)",
        _pair,
        "a quoted 'error A vs budget B' has a finite budget, A <= B in a PASS, and B = threshold where A = statistic",
    ),
    Rule(
        "bound-tightness",
        rf"<= [^;()]*?bound \(tightness (?P<t>{NUM})\)",
        lambda r, m: m is not None and at_most(m["t"], "1"),
        "'<= bound (tightness t)' only with t <= 1",
    ),
    Rule(
        "intervals-reach",
        rf"\(each interval reaches ({NUM}) or below",
        _intervals_reach,
        "'each interval reaches x or below' only where every quoted slope interval does",
    ),
    Rule(
        "exceeds-by",
        rf"\bexceed(?:s|ed)? [^;]*?(?:by a factor |\()(?P<x>{NUM})",
        lambda r, m: m is not None and quoted(m["x"]) > 1,
        "'exceeds ... by a factor x' / 'exceeds ... (x)' only with x > 1",
    ),
    Rule(
        "ci-above-below",
        rf"CI \[(?P<lo>{NUM}), (?P<hi>{NUM})\], (?P<way>above|below)\)",
        lambda r, m: m is not None and (quoted(m["lo"]) > 1 if m["way"] == "above" else quoted(m["hi"]) < 1),
        "a ratio's interval called 'above'/'below' 1 lies there",
    ),
    Rule(
        "witnesses-attain",
        rf"witnesses attain lam \(ratio (?P<x>{NUM})\)",
        lambda r, m: m is not None and math.isfinite(quoted(m["x"])) and quoted(m["x"]) >= 0.999,
        "'witnesses attain lam' only with a witness/lam ratio of ~1",
    ),
    Rule(
        "parenthesised-bound",
        rf"(?P<a>{NUM}) \(<= (?P<b>{NUM})\)",
        lambda r, m: m is not None and at_most(m["a"], m["b"]),
        "'A (<= B)' only where A <= B (a FAIL says '(> B allowed)', never a false inequality)",
    ),
    Rule(
        "no-python-repr",
        r"(?<![\w\]])[\[{]'",
        lambda r, m: False,
        "no Python list or dict repr in a summary",
    ),
)


def disagreements(r: CheckResult, rules: Iterable[Rule] = RULES) -> list[str]:
    """Every rule that ``r`` breaks, with the words it broke it on."""
    out = []
    for rule in rules:
        matches: list[re.Match[str] | None] = (
            [None] if rule.pattern is None else list(re.finditer(rule.pattern, r.summary))
        )
        for m in matches:
            if not rule.agrees(r, m):
                words = m[0] if m is not None else f"{r.verdict} stat={r.statistic} thr={r.threshold}"
                out.append(f"{rule.name}: {words!r} -- {rule.why}")
                break
    return out


# ------------------------------------------------------------------------------------------ each rule can fail
def _r(summary: str, verdict: Verdict = Verdict.FAIL, **kw: Any) -> CheckResult:
    kw.setdefault("reason", "why" if verdict in (Verdict.SKIPPED, Verdict.INCONCLUSIVE) else None)
    return CheckResult("x.y", verdict, summary, **kw)


P, F = Verdict.PASS, Verdict.FAIL
#: rule -> (a result that agrees, a doctored result that does not)
CASES: dict[str, tuple[CheckResult, CheckResult]] = {
    "pass-within-threshold": (
        _r("bound holds", P, statistic=0.9, threshold=1.0),
        _r("bound holds", P, statistic=1.0000008, threshold=1.0),
    ),
    "fail-names-what-failed": (
        _r("error 1e-16 vs budget 1e-12; sampler: NOT uniform", statistic=1e-16, threshold=1e-12),
        _r("error 1e-16 vs budget 1e-12", statistic=1e-16, threshold=1e-12),
    ),
    "stated-outcome": (
        _r("UORO on lstm: PASS; on gru: FAIL", F),
        _r("UORO on lstm: PASS", F),
    ),
    "violated-past-threshold": (
        _r("bound VIOLATED on the extremal system", statistic=3.3, threshold=1.0),
        _r("bound VIOLATED at every k", statistic=0.9, threshold=1.0),
    ),
    "holds-or-violated-on-the-suite": (
        _r("bound holds at every k on 6 random instances; tightness median 1e-2 worst 2.42e-01", statistic=3.3),
        _r("bound VIOLATED at every k on 6 random instances; tightness median 1e-2 worst 2.42e-01", statistic=3.3),
    ),
    "equals-closed-form": (
        _r("truncated states = closed form", P, data={"extremal": {"0.3": {"closed_form_ok": True}}}),
        _r("truncated states = closed form", data={"extremal": {"0.3": {"closed_form_ok": False}}}),
    ),
    "not-a-crash": (
        _r("check raised ZeroDivisionError: division by zero [raised at user.py:3 in step]"),
        _r("check raised InvalidArgument: invalid argument window_start(t)=1: must lie in [t-k, t-1] = [0, 0]"),
    ),
    "not-bias": (
        _r("VARIANCE ANOMALY (not bias: the means agree)", data={"mean_matches": True}),
        _r("VARIANCE ANOMALY (not bias: unbiasedness is invariant to the normalizers)"),
    ),
    "ratio-is-statistic-over-threshold": (
        _r("worst error/budget 7.46e-03 (x)", P, statistic=2.31e-16, threshold=3.097e-14),
        _r("worst error/budget 7.46e-01 (x)", P, statistic=2.31e-16, threshold=3.097e-14),
    ),
    "error-vs-budget": (
        _r("worst relative error 3.2e-05 vs budget 1e-11", statistic=3.2e-05, threshold=1e-11),
        _r("worst relative error 3.2e-05 vs budget 1e-09", statistic=3.2e-05, threshold=1e-11),
    ),
    "bound-tightness": (
        _r("E||G||^2 <= 1/N bound (tightness 0.37)", P),
        _r("E||G||^2 <= 1/N bound (tightness 4.30)"),
    ),
    "intervals-reach": (
        _r("slope -1.000 [-1.000, -1.000], slope -0.950 [-0.990, -0.910] (each interval reaches -0.9 or below", P),
        _r("slope -1.000 [-1.000, -1.000], slope -0.000 [-0.000, 0.000] (each interval reaches -0.9 or below"),
    ),
    "exceeds-by": (
        _r("ERRATUM: the printed exponent is exceeded by a factor 3.18 there", P),
        _r("ERRATUM: the printed exponent is exceeded by a factor 0.92 there", P),
    ),
    "ci-above-below": (
        _r("g~_T: E q 1.99x Algorithm 1's (CI [1.9, 2.08], above)"),
        _r("g~_T: E q 1.02x Algorithm 1's (CI [0.963, 1.07], above)"),
    ),
    "witnesses-attain": (
        _r("linear witnesses attain lam (ratio 1.000000)", P),
        _r("linear witnesses attain lam (ratio 0.521930)"),
    ),
    "parenthesised-bound": (
        _r("largest relative error 3.1e-03 (> 1e-12 allowed)"),
        _r("largest relative error 3.1e-03 (<= 1e-12)"),
    ),
    "no-python-repr": (
        _r("FAILED: multiplier-error slope -0.000 does not reach -0.9"),
        _r("FAILED: ['multiplier_slope']"),
    ),
}


def test_every_rule_has_a_case() -> None:
    assert sorted(CASES) == sorted(r.name for r in RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_rule_accepts_agreeing_words_and_refuses_doctored_ones(rule: Rule) -> None:
    good, bad = CASES[rule.name]
    assert disagreements(good, [rule]) == []
    assert disagreements(bad, [rule]) != [], f"{rule.name} cannot fail on {bad.summary!r}"


# ------------------------------------------------------------------------------------------ the catalogs
Key = tuple[str | None, str]  # (mutant name or None for the toolkit's own, claim id)


def _run_one(key: Key) -> dict[str, Any]:
    """One claim's result as a dict (in a worker process: one torch thread, float64 as in conftest)."""
    import torch

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    mutant, cid = key
    cfg = RunConfig() if mutant is None else RunConfig(implementations=get(mutant).implementations)
    return run_check(all_claims()[cid], cfg).to_dict()


def catalog_keys() -> list[Key]:
    claims = all_claims()
    keys: list[Key] = [(None, cid) for cid, c in claims.items() if "ci" in c.profiles]
    for m in all_mutants().values():
        keys += [(m.name, cid) for cid in m.visible_to if "ci" in claims[cid].profiles]
    return keys


#: the default run's subset: wordings that went wrong before, and quick representatives of each family
FAST: tuple[Key, ...] = (
    (None, "truncation.tbptt-gradient-bound"),
    (None, "truncation.assumption-checker"),
    (None, "fpp.kkt-recovery"),
    (None, "rtrl.truncated-bptt"),
    ("tbptt.off-by-one", "truncation.tbptt-gradient-bound"),
    ("tbptt.off-by-one", "rtrl.truncated-bptt"),
    ("tbptt.window-long", "truncation.tbptt-gradient-bound"),
    ("fpp.multiplier-unscaled", "fpp.kkt-recovery"),
    ("fpp.sampler-exclusive-endpoint", "fpp.lemma3-unbiased"),
    ("device.float16-silent", "device.float32-standin"),
    ("certificate.linf-norm", "truncation.assumption-checker"),
    ("certificate.spectral-radius", "truncation.assumption-checker"),
    ("uoro.rho1-constant", "uoro.variance-matches-algorithm-1"),
    ("uoro.rank-shared-noise", "uoro.rank-variance"),
)


class Results:
    """Results by (mutant, claim), computed at most once per test session."""

    def __init__(self) -> None:
        self.cache: dict[Key, CheckResult] = {}

    def get(self, keys: Iterable[Key], workers: int = 1) -> dict[Key, CheckResult]:
        todo = [k for k in keys if k not in self.cache]
        if workers > 1 and len(todo) > 1:
            with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
                done = list(ex.map(_run_one, todo))
        else:
            done = [_run_one(k) for k in todo]
        for k, d in zip(todo, done, strict=True):
            self.cache[k] = CheckResult.from_dict(d)
        return {k: self.cache[k] for k in keys}


@pytest.fixture(scope="session")
def results() -> Results:
    return Results()


def _report(found: dict[Key, CheckResult]) -> dict[str, list[str]]:
    bad = {}
    for (mutant, cid), r in found.items():
        d = disagreements(r)
        if d:
            bad[f"{mutant or 'default'} on {cid}: {r.summary[:300]}"] = d
    return bad


def test_fast_subset_is_in_the_catalogs() -> None:
    assert set(FAST) <= set(catalog_keys())


def test_words_agree_with_numbers_on_a_representative_subset(results: Results) -> None:
    assert _report(results.get(FAST)) == {}


@pytest.mark.slow
def test_words_agree_with_numbers_on_the_catalog_and_the_mutant_catalog(results: Results) -> None:
    assert _report(results.get(catalog_keys(), workers=2)) == {}
