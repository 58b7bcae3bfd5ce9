"""pytest plugin of rnn-verify (entry point ``pytest11``: ``rnn_verify``).

Installed with the package, so ``pip install rnn-verify`` makes it available in any
pytest run (disable with ``-p no:rnn_verify``; load explicitly with
``-p verify.testing.pytest_plugin`` when the package is only on ``PYTHONPATH``).

Options
-------
``--rnn-verify-profile {ci,full}``
    sizes of the fixtures and of catalog claims (ini: ``rnn_verify_profile``; default ``ci``).
``--rnn-verify-seed N``
    base seed of the fixtures and claims, 0 .. 18446688733642 (default 0).
``--rnn-verify-claims PATTERN``
    also run catalog claims (ids or globs, repeatable) as test items: PASS passes, FAIL fails,
    SKIPPED skips, INCONCLUSIVE fails. They are collected after the test files, under the node
    ``rnn-verify`` (node ids ``rnn-verify::rtrl.exact``; see :class:`CatalogCollector`), so they
    count in "collected N items" and ``-k`` / ``--collect-only`` apply to them.
``--rnn-verify-impl FAMILY=SPEC``
    the implementation under test (repeatable), loaded and checked by :mod:`verify.impl.loader`
    exactly as ``rnn-verify run --impl`` does (``uoro=mypkg.mod:MyUORO``,
    ``rtrl=path/to/file.py:my_rtrl``; a bad spec is a usage error naming it): catalog claims
    (``--rnn-verify-claims``) run against it, and :func:`rnn_verify_impl` returns it for its part.
``--rnn-verify-mutant NAME``
    the mutant ``NAME`` of the mutant catalog (:mod:`verify.impl.mutants`) as the implementation
    under test: a name for the value ``replace(default, field=broken)``, used wherever a test asks
    :func:`rnn_verify_impl` for its part (e.g. ``adjoint``) and by the catalog claims that exercise
    it: a suite that is any good must then FAIL.
``--rnn-verify-report DIR``
    write a report (results.json, report.md/html, junit.xml, figures) of every claim seen in the
    session into DIR.

Marker
------
``@pytest.mark.rnn_verify_claim("mylib.adjoint-exact", title=..., paper=..., where=...,
statement=...)`` turns a test into a claim of the report: the claim PASSes when every
test carrying it passes, FAILs when one fails, is SKIPPED when all are skipped. A
catalog id (``rnn-verify list``) takes its paper/equation from the catalog.
Tests can attach the measured statistic and figure data with :func:`rnn_verify_record`.

Fixtures
--------
``rnn_verify_config``
    the :class:`~verify.config.RunConfig` of the session;
``rnn_verify_problem``
    one :class:`~verify.testing.strategies.ProblemCase` per cell kind (parametrized: the test runs
    once per kind);
``rnn_verify_problems``
    the list of those cases;
``rnn_verify_reference``
    ``rnn_verify_reference(problem, theta)`` -> :class:`References` (exact float64 gradient,
    per-step gradients, influence matrices, truncated gradients, round-off budget; cached);
``rnn_verify_impl``
    ``rnn_verify_impl(target, default)`` -> the implementation to test: a view of the session's
    implementations under test (``--rnn-verify-impl`` / ``--rnn-verify-mutant``; ``default`` where
    the part ``target`` was not given);
``rnn_verify_record``
    ``rnn_verify_record(statistic=..., threshold=..., data=...)``.

Assertion helpers
-----------------
:func:`assert_gradient_close` (here: deterministic quantities within the round-off
budget) and, re-exported from :mod:`verify.testing.assertions`, the statistical helpers
``assert_unbiased`` and ``unbiasedness_property``::

    from verify.testing.pytest_plugin import assert_gradient_close, assert_unbiased

Imports
-------
pytest loads this plugin in every test session of every project where rnn-verify is
installed, also those that never use it; so the module imports only the standard
library and pytest at load time, and the toolkit (torch, the catalog, the checks)
inside the hooks and fixtures that need it. These are the only imports inside functions
of the package besides optional third-party ones (matplotlib, dask) and those that keep
the start paths at torch's cost (issue 42: the sympy derivations of ``theory``, torch's
forward-mode set-up); none dodges an import cycle (``python -m verify.bench.house --list``).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import math
import pkgutil
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import torch

    from verify.config import RunConfig
    from verify.impl import Implementations
    from verify.impl.mutants import Mutant
    from verify.model.problem import Problem
    from verify.testing.strategies import ProblemCase
    from verify.verdict import CheckResult

__all__ = [
    "References",
    "assert_gradient_close",
    "rnn_verify_config",
    "rnn_verify_impl",
    "rnn_verify_problem",
    "rnn_verify_problems",
    "rnn_verify_record",
    "rnn_verify_reference",
]

MARKER = "rnn_verify_claim"
_CELL_KINDS = ("elman-tanh", "elman-relu", "linear", "lstm", "gru")


# ------------------------------------------------------------------ assertions
def assert_gradient_close(
    actual: torch.Tensor,
    problem: Problem,
    theta: torch.Tensor,
    *,
    quantity: str = "gradient",
    expected: torch.Tensor | None = None,
    budget: float | None = None,
) -> float:
    """Assert ``actual`` equals the exact float64 ``quantity`` within the predicted round-off budget.

    ``quantity``: ``"gradient"`` (∇L, BPTT), ``"per_step_gradients"`` (∂ℓ_t/∂θ, (T, p))
    or ``"influence"`` (∂s_t/∂θ, UORO eq. (4)). The relative error
    ‖actual − expected‖ / ‖expected‖ must not exceed ``budget`` (default: the
    budget model of :mod:`verify.oracles.budget`, C·u·m·T·κ, for this instance). Returns
    the relative error.
    """
    import torch

    refs = References(problem, theta)
    exp = expected if expected is not None else refs.get(quantity)
    if budget is None:
        budget = refs.influence_budget if quantity == "influence" else refs.gradient_budget
    act = torch.as_tensor(actual).detach().to(device="cpu", dtype=torch.float64)
    if tuple(act.shape) != tuple(exp.shape):
        raise AssertionError(f"{quantity}: shape {tuple(act.shape)} != expected {tuple(exp.shape)}")
    den = float(torch.linalg.vector_norm(exp))
    num = float(torch.linalg.vector_norm(act - exp))
    rel = num / den if den > 0 else num
    if not (math.isfinite(rel) and rel <= budget):
        raise AssertionError(
            f"{quantity} differs from the exact float64 reference: relative error {rel:.3e} > "
            f"budget {budget:.3e} on {problem.describe()}"
        )
    return rel


class References:
    """Exact float64 references of one problem at θ, computed lazily and cached."""

    def __init__(self, problem: Problem, theta: torch.Tensor) -> None:
        import torch

        self.problem = problem.to(dtype=torch.float64, device="cpu")
        self.theta = theta.detach().to(dtype=torch.float64, device="cpu")

    @functools.cached_property
    def gradient(self) -> torch.Tensor:
        """∇L by BPTT."""
        from verify.oracles.bptt import bptt_gradient

        return bptt_gradient(self.problem, self.theta)

    @functools.cached_property
    def per_step_gradients(self) -> torch.Tensor:
        """∂ℓ_t/∂θ, shape (T, p)."""
        from verify.oracles.bptt import per_step_gradients

        return per_step_gradients(self.problem, self.theta)

    @functools.cached_property
    def influence(self) -> torch.Tensor:
        """∂s_t/∂θ, shape (T, *B, n, p) (UORO eq. (4))."""
        from verify.oracles.bptt import influence_matrices

        return influence_matrices(self.problem, self.theta)

    @functools.cached_property
    def losses(self) -> torch.Tensor:
        return self.problem.losses(self.theta).detach()

    @functools.cached_property
    def _conditioning(self) -> Any:
        from verify.oracles.budget import conditioning

        return conditioning(self.problem, self.theta)

    @property
    def gradient_budget(self) -> float:
        """Predicted float64 round-off budget (relative) of a gradient on this instance."""
        return float(self._conditioning.gradient_budget())

    @property
    def influence_budget(self) -> float:
        return float(self._conditioning.influence_budget())

    def tbptt(self, k: int, which: str = "total") -> torch.Tensor:
        from verify.oracles.bptt import tbptt_gradient

        return tbptt_gradient(self.problem, self.theta, k, which=which)

    def truncated_model_gradient(self, k: int, which: str = "final") -> torch.Tensor:
        from verify.oracles.bptt import truncated_model_gradient

        return truncated_model_gradient(self.problem, self.theta, k, which=which)

    def get(self, quantity: str) -> torch.Tensor:
        if quantity not in ("gradient", "per_step_gradients", "influence", "losses"):
            from verify.errors import InvalidArgument

            raise InvalidArgument("quantity", quantity, "one of gradient, per_step_gradients, influence, losses")
        value: torch.Tensor = getattr(self, quantity)
        return value


def __getattr__(name: str) -> Any:
    """Re-export :mod:`verify.testing.assertions` (``assert_unbiased``, ``unbiasedness_property``, ...) lazily."""
    if name.startswith("assert_") or name.endswith("_property"):
        try:
            mod = importlib.import_module("verify.testing.assertions")
        except ImportError:
            raise AttributeError(f"{name}: verify.testing.assertions is not available in this rnn-verify") from None
        if name in getattr(mod, "__all__", ()):
            return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------- state
@dataclass
class _TestOutcome:
    nodeid: str
    outcome: str  # passed | failed | skipped
    message: str
    duration: float
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class _UserClaim:
    claim_id: str
    meta: dict[str, Any]
    tests: list[_TestOutcome] = field(default_factory=list)


@dataclass
class _State:
    profile: str
    seed: int
    mutant: Mutant | None
    report_dir: Path | None
    mutant_used: bool = False
    #: the implementations under test (--rnn-verify-impl, --rnn-verify-mutant); None: the toolkit's own
    impls: Implementations | None = None
    #: the catalog claims selected by --rnn-verify-claims, in catalog order
    claim_ids: list[str] = field(default_factory=list)
    user: dict[str, _UserClaim] = field(default_factory=dict)
    catalog: dict[str, CheckResult] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


_STATE = pytest.StashKey[_State]()


def _all_mutants() -> dict[str, Mutant]:
    import verify.impl.mutants as pkg

    out: dict[str, Mutant] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        m = importlib.import_module(f"verify.impl.mutants.{mod.name}")
        for mutant in getattr(m, "MUTANTS", ()):
            out[mutant.name] = mutant
    return out


# --------------------------------------------------------------------- hooks
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rnn-verify", "rnn-verify: theory checks and reference fixtures")
    group.addoption(
        "--rnn-verify-profile",
        choices=("ci", "full"),
        default=None,
        help="sizes of rnn-verify fixtures and catalog claims (default: ini rnn_verify_profile or ci)",
    )
    group.addoption("--rnn-verify-seed", type=int, default=0, help="base seed of rnn-verify fixtures (default 0)")
    group.addoption(
        "--rnn-verify-claims",
        action="append",
        default=[],
        metavar="PATTERN",
        help="also run catalog claims matching PATTERN (id or glob; repeatable) as test items",
    )
    group.addoption(
        "--rnn-verify-mutant",
        default=None,
        metavar="NAME",
        help="substitute mutant NAME (verify.impl.mutants) wherever rnn_verify_impl(target) is asked for its target",
    )
    group.addoption(
        "--rnn-verify-impl",
        action="append",
        default=[],
        metavar="FAMILY=SPEC",
        help="your implementation under test (as rnn-verify run --impl): FAMILY=module.path:Name or "
        "FAMILY=path/to/file.py:name; catalog claims and rnn_verify_impl use it (repeatable)",
    )
    group.addoption("--rnn-verify-report", default=None, metavar="DIR", help="write an rnn-verify report into DIR")
    parser.addini("rnn_verify_profile", "default rnn-verify profile (ci or full)", default="ci")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(id, title=..., paper=..., where=..., statement=...): "
        "make this test a claim of the rnn-verify report",
    )
    profile = config.getoption("--rnn-verify-profile") or str(config.getini("rnn_verify_profile") or "ci")
    if profile not in ("ci", "full"):
        raise pytest.UsageError(f"rnn_verify_profile must be 'ci' or 'full', not {profile!r}")
    seed = int(config.getoption("--rnn-verify-seed"))
    try:
        from verify._validate import validate_seed

        validate_seed("--rnn-verify-seed", seed)
    except ValueError as exc:  # InvalidArgument: names the option and the accepted range
        raise pytest.UsageError(str(exc)) from None
    mutant = None
    name = config.getoption("--rnn-verify-mutant")
    if name:
        mutants = _all_mutants()
        if name not in mutants:
            near = difflib.get_close_matches(name, list(mutants), n=3, cutoff=0.4)
            hint = f"; did you mean {', '.join(near)}?" if near else f"; known: {', '.join(sorted(mutants))}"
            raise pytest.UsageError(f"--rnn-verify-mutant {name!r} is not in the mutant catalog{hint}")
        mutant = mutants[name]
    report_dir = None
    if config.getoption("--rnn-verify-report"):
        from verify.errors import VerifyError
        from verify.report import preflight_dir

        try:  # an unwritable report folder is an error before any test runs
            report_dir = preflight_dir(config.getoption("--rnn-verify-report"), "--rnn-verify-report")
        except VerifyError as exc:
            raise pytest.UsageError(str(exc)) from None
    impls = mutant.implementations if mutant is not None else None
    specs = config.getoption("--rnn-verify-impl")
    if specs:
        from verify.errors import VerifyError
        from verify.impl import DEFAULT
        from verify.impl.loader import load_implementations

        try:  # the same loader and checks as rnn-verify run --impl
            impls = load_implementations(specs, base=impls or DEFAULT, option="--rnn-verify-impl")
        except VerifyError as exc:
            raise pytest.UsageError(str(exc)) from None
    claim_ids: list[str] = []
    patterns = _claim_patterns(config)
    if patterns:  # an unknown claim is a usage error before anything is collected
        from verify.errors import VerifyError
        from verify.run.check import select_claims

        try:
            claim_ids = [claim.id for claim in select_claims(patterns)]
        except VerifyError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[_STATE] = _State(profile, seed, mutant, report_dir, impls=impls, claim_ids=claim_ids)


class ClaimItem(pytest.Item):
    """A catalog claim run as a test item (``--rnn-verify-claims``)."""

    def __init__(self, *, claim_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim_id = claim_id
        self.result: CheckResult | None = None

    def runtest(self) -> None:
        from theory.catalog import get_claim
        from verify.checks import uses
        from verify.config import RunConfig
        from verify.run.check import run_check
        from verify.verdict import Verdict

        state = self.config.stash[_STATE]
        claim = get_claim(self.claim_id)
        if state.mutant is not None and state.mutant.target in uses(self.claim_id):
            state.mutant_used = True  # the claim's check exercises the mutant's part
        res = run_check(claim, RunConfig(profile=state.profile, seed=state.seed, implementations=state.impls))
        self.result = res
        state.catalog[self.claim_id] = res
        if res.verdict is Verdict.SKIPPED:
            pytest.skip(f"SKIPPED: {res.reason}")
        if res.verdict is not Verdict.PASS:
            raise _ClaimFailed(f"{res.verdict.value} {self.claim_id}: {res.summary}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, _ClaimFailed):
            extra = f"\n{self.result.reason}" if self.result is not None and self.result.reason else ""
            return str(excinfo.value) + extra
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return ("rnn-verify catalog", None, f"claim {self.claim_id}")


class _ClaimFailed(Exception):
    pass


CATALOG_NODE = "rnn-verify"
"""Name of the collector of the catalog claims: the claims' node ids read ``rnn-verify::rtrl.exact``."""


class CatalogCollector(pytest.Collector):
    """The catalog claims of ``--rnn-verify-claims``, collected like a test file.

    Its node id is ``rnn-verify`` and its items' are ``rnn-verify::<claim id>``
    (``rnn-verify::rtrl.exact``), so they count in "collected N items", show in
    ``--collect-only`` and are selected by ``-k`` (``-k rtrl``, ``-k "rnn-verify and not uoro"``)
    like any test. The node id is not a path: select claims with ``--rnn-verify-claims`` or ``-k``,
    not by passing the node id as an argument.
    """

    def __init__(self, *, claim_ids: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim_ids = claim_ids

    def collect(self) -> list[pytest.Item]:
        return [ClaimItem.from_parent(self, name=cid, claim_id=cid) for cid in self.claim_ids]

    def reportinfo(self) -> tuple[str, int | None, str]:
        return ("rnn-verify catalog", None, "rnn-verify catalog claims")


def _claim_patterns(config: pytest.Config) -> list[str]:
    return [p.strip() for pat in config.getoption("--rnn-verify-claims") or [] for p in pat.split(",") if p.strip()]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Add the :class:`CatalogCollector` to what the session collects (after the test files)."""
    report: pytest.CollectReport = yield
    if isinstance(collector, pytest.Session) and report.passed:
        state = collector.config.stash.get(_STATE, None)
        if state is not None and state.claim_ids:
            report.result.append(
                CatalogCollector.from_parent(
                    collector, name=CATALOG_NODE, nodeid=CATALOG_NODE, claim_ids=list(state.claim_ids)
                )
            )
    return report


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # validate markers early: a malformed claim id is a usage error
        for mark in item.iter_markers(MARKER):
            _claim_id_of(mark, item.nodeid)


def _claim_id_of(mark: pytest.Mark, nodeid: str) -> str:
    import re

    if not mark.args or not isinstance(mark.args[0], str):
        raise pytest.UsageError(f"{nodeid}: @pytest.mark.{MARKER} needs a claim id, e.g. 'mylib.adjoint-exact'")
    cid = mark.args[0]
    if not re.match(r"^[a-z][a-z0-9_]*\.[a-z0-9]+(?:[-_][a-z0-9]+)*$", cid):
        raise pytest.UsageError(f"{nodeid}: claim id {cid!r} must look like 'family.claim-name' (lower case)")
    return cid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    marks = list(item.iter_markers(MARKER))
    if not marks:
        return report
    state = item.config.stash[_STATE]
    mark = marks[0]
    cid = _claim_id_of(mark, item.nodeid)
    uc = state.user.setdefault(cid, _UserClaim(cid, dict(mark.kwargs)))
    record = state.records.get(item.nodeid, {})
    # one outcome per test: a failing setup or call decides; a passing call passes
    done = {t.nodeid for t in uc.tests}
    if item.nodeid in done:
        if report.failed:  # teardown error after a pass
            uc.tests = [t for t in uc.tests if t.nodeid != item.nodeid]
        else:
            return report
    if report.when == "call" or report.failed or report.skipped:
        outcome = "failed" if report.failed else ("skipped" if report.skipped else "passed")
        if hasattr(report, "wasxfail"):
            outcome = "skipped"
        msg = ""
        if report.failed:
            msg = _first_line(report.longreprtext)
        elif report.skipped:
            lr = report.longrepr
            msg = str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else _first_line(str(lr))
        uc.tests.append(_TestOutcome(item.nodeid, outcome, msg, report.duration, dict(record)))
    return report


def _first_line(text: str) -> str:
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("E "):
            return s[1:].strip()
    lines = [s.strip() for s in text.splitlines() if s.strip()]
    return lines[-1] if lines else ""


def _user_result(uc: _UserClaim, state: _State) -> CheckResult:
    from verify.verdict import CheckResult, Verdict

    failed = [t for t in uc.tests if t.outcome == "failed"]
    passed = [t for t in uc.tests if t.outcome == "passed"]
    skipped = [t for t in uc.tests if t.outcome == "skipped"]
    n = len(uc.tests)
    if failed:
        verdict, reason = Verdict.FAIL, "\n".join(f"{t.nodeid}: {t.message}" for t in failed)
    elif passed:
        verdict, reason = Verdict.PASS, None
    else:
        verdict = Verdict.SKIPPED
        reason = "; ".join(f"{t.nodeid}: {t.message}" for t in skipped) or "no test ran"
    summary = f"{n} test(s): {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped"
    if state.mutant is not None and state.mutant_used:
        summary += f"; mutant {state.mutant.name} injected"
    if failed:
        summary += f"; first failure: {failed[0].message}"
    rec = next((t.record for t in uc.tests if t.record), {})
    data: dict[str, Any] = {
        "tests": [
            {"nodeid": t.nodeid, "outcome": t.outcome, "message": t.message, "duration": t.duration} for t in uc.tests
        ]
    }
    data.update(rec.get("data") or {})
    return CheckResult(
        uc.claim_id,
        verdict,
        summary,
        statistic=rec.get("statistic"),
        threshold=rec.get("threshold"),
        comparison=str(rec.get("comparison", "<=")),
        seed=state.seed,
        alpha=rec.get("alpha"),
        beta=rec.get("beta"),
        delta=rec.get("delta"),
        samples_planned=rec.get("samples_planned"),
        samples_used=rec.get("samples_used"),
        reason=reason,
        data=data,
        wall_time=sum(t.duration for t in uc.tests),
    )


def _session_results(state: _State) -> list[tuple[CheckResult, Any, str, dict[str, Any]]]:
    from theory.catalog import all_claims

    catalog = all_claims()
    out: list[tuple[CheckResult, Any, str, dict[str, Any]]] = []
    for cid, res in state.catalog.items():
        out.append(
            (res, catalog[cid], f"rnn-verify run --profile {state.profile} --claims {cid} --seed {state.seed}", {})
        )
    for cid, uc in state.user.items():
        res = _user_result(uc, state)
        claim = catalog.get(cid)
        extra = {}
        if claim is None:
            m = uc.meta
            extra = {
                "title": str(m.get("title", "")),
                "paper": str(m.get("paper", "")),
                "equation": str(m.get("where", m.get("equation", ""))),
                "statement": str(m.get("statement", "")),
                "kind": "pytest",
            }
        nodeids = " ".join(sorted({t.nodeid for t in uc.tests}))
        out.append((res, claim, f"python -m pytest {nodeids}", extra))
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    if state.mutant is not None and not state.mutant_used and int(exitstatus) == 0:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    if state.report_dir is None or not (state.user or state.catalog):
        return
    from verify.report import claim_record, run_document, write_report

    records = [
        claim_record(res, claim, rerun=rerun, source="pytest", extra=extra)
        for res, claim, rerun, extra in _session_results(state)
    ]
    doc = run_document(
        records,
        {
            "command": "pytest " + " ".join(session.config.invocation_params.args),
            "profile": state.profile,
            "seed": state.seed,
            "device": "cpu",
            "dtype": "float64",
            "workers": 1,
            "fail_on": "fail",
            "wall_time": time.perf_counter() - state.started,
            "mutant": state.mutant.name if state.mutant is not None else None,
            "source": "pytest plugin",
        },
    )
    write_report(state.report_dir, doc)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not (state.user or state.catalog or state.mutant):
        return
    tr = terminalreporter
    tr.section("rnn-verify claims")
    if state.mutant is not None:
        used = "injected" if state.mutant_used else "NOT injected: no test asked rnn_verify_impl for its target"
        tr.write_line(f"mutant {state.mutant.name} (target {state.mutant.target!r}): {used}")
    for res, _claim, _rerun, _extra in _session_results(state):
        tr.write_line(f"{res.verdict.value:<12} {res.claim_id}  {res.summary}")
        if res.verdict.value == "FAIL" and res.reason:
            for line in res.reason.splitlines()[:5]:
                tr.write_line(f"    {line}")
    if state.report_dir is not None:
        tr.write_line(f"report: {state.report_dir / 'report.html'}")


# ------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def rnn_verify_config(pytestconfig: pytest.Config) -> RunConfig:
    """The session's :class:`~verify.config.RunConfig` (profile and seed from the options)."""
    from verify.config import RunConfig

    state = pytestconfig.stash[_STATE]
    return RunConfig(profile=state.profile, seed=state.seed)


def _case(kind: str, config: RunConfig) -> ProblemCase:
    from verify.testing.strategies import ProblemCase, random_problem

    salt = _CELL_KINDS.index(kind) if kind in _CELL_KINDS else 99
    gen = config.generator(salt=500 + salt)
    n, d, T = (6, 3, 30) if config.full else (3, 2, 8)
    loss = "cross-entropy" if salt % 2 else "squared-error"
    P, th = random_problem(kind, n=n, d=d, T=T, k=2, loss=loss, generator=gen)
    return ProblemCase(P, th, config.seed, kind)


@pytest.fixture(params=_CELL_KINDS)
def rnn_verify_problem(request: pytest.FixtureRequest, rnn_verify_config: RunConfig) -> ProblemCase:
    """A float64 problem and θ for each cell kind (the test runs once per kind); sizes by profile."""
    return _case(str(request.param), rnn_verify_config)


@pytest.fixture(scope="session")
def rnn_verify_problems(rnn_verify_config: RunConfig) -> list[ProblemCase]:
    """One problem per cell kind, as a list."""
    return [_case(k, rnn_verify_config) for k in _CELL_KINDS]


@pytest.fixture
def rnn_verify_reference() -> Callable[[Problem, torch.Tensor], References]:
    """``rnn_verify_reference(problem, theta)`` -> :class:`References` (cached per problem)."""
    cache: dict[tuple[int, int], References] = {}

    def get(problem: Problem, theta: torch.Tensor) -> References:
        key = (id(problem), id(theta))
        if key not in cache:
            cache[key] = References(problem, theta)
        return cache[key]

    return get


def _part_name(target: str) -> str | None:
    """``"reference.adjoint"`` as it is, a bare field (``"adjoint"``) as the one ``family.field`` it names."""
    from verify.impl import FAMILIES, field_names

    if "." in target:
        return target
    found = [f"{fam}.{target}" for fam in FAMILIES if target in field_names(fam)]
    return found[0] if len(found) == 1 else None


@pytest.fixture
def rnn_verify_impl(pytestconfig: pytest.Config) -> Callable[[str, Callable[..., Any]], Callable[..., Any]]:
    """``rnn_verify_impl(target, default)``: the session's implementation under test of part ``target``.

    A view of the implementations given with ``--rnn-verify-impl`` or named by
    ``--rnn-verify-mutant`` (:mod:`verify.impl`): ``target`` names a part as
    ``"family.field"`` (``"reference.adjoint"``) or by its field alone (``"adjoint"``,
    with the signature of :func:`verify.oracles.bptt.adjoint_gradient`); the given part
    is returned where there is one, ``default`` otherwise.
    """
    state = pytestconfig.stash[_STATE]

    def impl(target: str, default: Callable[..., Any]) -> Callable[..., Any]:
        if state.impls is None:
            return default
        dotted = _part_name(target)
        if dotted is None or dotted not in state.impls.user_parts():
            return default
        m = state.mutant
        if m is not None and dotted == m.target:
            state.mutant_used = True
        part: Callable[..., Any] = state.impls.part(dotted)
        return part

    return impl


@pytest.fixture
def rnn_verify_record(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``rnn_verify_record(statistic=..., threshold=..., comparison=..., samples_used=..., data={...})``.

    Attaches measurements to the claim of the marked test; ``data`` may carry
    ``figures`` (see :mod:`verify.report.figures`).
    """
    state = request.config.stash[_STATE]
    allowed = {
        "statistic",
        "threshold",
        "comparison",
        "alpha",
        "beta",
        "delta",
        "samples_planned",
        "samples_used",
        "data",
    }

    def record(**fields: Any) -> None:
        bad = sorted(set(fields) - allowed)
        if bad:
            from verify.errors import InvalidArgument

            raise InvalidArgument("rnn_verify_record", bad, f"unknown fields; allowed: {sorted(allowed)}")
        state.records.setdefault(request.node.nodeid, {}).update(fields)

    return record
