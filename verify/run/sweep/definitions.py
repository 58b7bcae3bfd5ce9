"""The sweeps ``rnn-verify sweep NAME`` knows: reproductions at the papers' settings, calibration, claim runs.

Each :class:`SweepDefinition` builds a :class:`~verify.run.sweep.driver.SweepPlan` from
:class:`SweepOptions`: the cells and the merge that turns their outcomes into
claim results. The reproductions' merges are the very judges the checks use
(:func:`verify.checks.fpp_cycleworld.judge_cycleworld`,
:func:`~verify.checks.fpp_reproduction.judge_stochasticworld`), so a paper-scale sweep is judged by the
criteria stated in the claim, as the ci/full checks are.

=====================  ===========================================================  ====================
sweep                  what                                                          cells (paper scale)
=====================  ===========================================================  ====================
``fpp-fig2``           FPP §5 Fig. 2, CycleWorld p in {4, 6, 8, 10}, T in {p/2, p},   48 (288 split)
                       both measures (squared error; the paper's accuracy)
``fpp-fig3b``          FPP §5 Fig. 3(b), Stochastic World, T in {10..40}, 3 methods   17 (102 split)
``fpp-fig4``           FPP §5 Fig. 4, M updates / mini-batches, FPP vs no state update   200 (SW T to 32)
``fpp-fig7``           FPP App. D Fig. 7, CycleWorld T = 1, B = 16, 50 000 steps, M       11
``fpp-fig3a``          FPP §5 Fig. 3(a), CycleWorld p = 10, T in {1..10}, 3 methods     17
``fpp-fig5``           FPP App. C Fig. 5, Stochastic World, N x T, FPP                   17
``fpp-fig6``           FPP App. C Fig. 6, Stochastic World, lambda x T, FPP              15
``fpp-reproductions``  Fig. 2 and Fig. 3(b)                                           65
``uoro-brackets``      UORO §4 Fig. 3b, distant brackets, UORO vs TBPTT-4, GRU/LSTM   8 (ci 8)
``uoro-anbn``          UORO §4 Fig. 4, 5, a^n b^n(1, 32), UORO vs TBPTT-1/2/16        12 (ci 8)
``uoro-anbn-t``        UORO §3, §4 Fig. 4(b), 5: UORO-T (T = 2, 16) vs UORO on a^n b^n   22 (ci 22)
``uoro-ib-truncation``  UORO §4 influence balancing, block TBPTT-k across k and eta       50
                       ("requires a truncation above 200"; one scale)
``rflo-fig2``          Murray 2019 Fig. 2, periodic output, RFLO vs BPTT, N = 30      5 (full 4, ci 2)
``marschall-add``      Marschall et al. 2020, the Add task: RTRL, UORO, KF-RTRL,       27 (full 10, ci 2)
                       RFLO, e-prop, SnAp-1 and two controls, one lr grid
``marschall-mimic``    Marschall et al. 2020, the Mimic task: the same learners        27 (full 10, ci 2)
                       mimicking a fixed random target RNN
``rtrl-sec71``         RTRL convergence §7.1 Fig. 1-2: linear RNN, RTRL vs TBPTT(k)    1680 (ci 40)
``rtrl-sec72``         RTRL convergence §7.2 Fig. 3-8: Elman ReLU/tanh, RTRL vs TBPTT   2520 (ci 60)
``calibration``        statistical claims x ``--seeds`` seeds: verdict rates, CP      claims x seeds
``gate``               every claim x seeds: FAIL rates, controls, family-wise rate   claims x seeds
``claims``             any claims x seeds (one result per claim and seed)             claims x seeds
``selftest``           a synthetic sweep exercising the machinery (tests)             ``--seeds``
=====================  ===========================================================  ====================

``--scale`` picks the reproductions' sizes: ``paper`` (the papers' settings),
``full`` or ``ci`` (the checks' sizes -- the same blocks, so a sweep at those
scales reproduces the check's verdict).
"""

from __future__ import annotations

import fnmatch
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from theory.catalog import GATE_ALPHA, all_claims, gate_budget
from verify._validate import MAX_SEED
from verify.checks.fpp_cycleworld import judge_cycleworld
from verify.checks.fpp_reproduction import judge_stochasticworld, judge_updates
from verify.checks.fpp_sensitivity import judge_fig3a, judge_fig5, judge_fig6
from verify.checks.marschall_add import judge_add_sweep
from verify.checks.marschall_mimic import judge_mimic_sweep
from verify.checks.rflo_periodic import judge_periodic_sweep
from verify.checks.rtrl_sec7 import judge_sec7
from verify.checks.uoro_char import judge_char_sweep
from verify.checks.uoro_t import judge_uorot_sweep
from verify.checks.uoro_truncation import judge_truncation_sweep
from verify.config import RunConfig
from verify.errors import InvalidArgument
from verify.fpp.reproduction import SCALES, cycleworld_designs, fig7_designs, stochasticworld_design, updates_designs
from verify.fpp.sensitivity import fig3a_design, fig5_designs, fig6_designs
from verify.rtrl import sec7
from verify.rtrl.marschall_add import SIZES as ADD_SIZES
from verify.rtrl.marschall_mimic import SIZES as MIMIC_SIZES
from verify.rtrl.rflo_periodic import SIZES as RFLO_SIZES
from verify.run.check import claim_params
from verify.run.sweep.cells import SweepCell
from verify.run.sweep.driver import CellOutcome, SweepPlan, failed_cells_text
from verify.stats.binomial import clopper_pearson
from verify.uoro.char_reproduction import char_design, uorot_design
from verify.uoro.influence_truncation import truncation_grid
from verify.verdict import CheckResult, Verdict

__all__ = [
    "GATE_RECORD",
    "SweepDefinition",
    "SweepOptions",
    "calibration_result",
    "definitions",
    "family_wise_result",
    "gate_result",
    "get_definition",
]

MergeFn = Callable[[Mapping[str, CellOutcome]], list[CheckResult]]
Part = tuple[list[SweepCell], MergeFn, dict[str, Any]]


@dataclass(frozen=True)
class SweepOptions:
    """What a sweep is asked to do.

    ``scale`` (reproductions: ``paper``, ``full``, ``ci``); ``seed`` the base seed of a
    reproduction; ``seeds`` how many seeds (calibration, claims, selftest: seeds
    ``seed .. seed + seeds - 1``); ``claims`` ids or globs; ``profile`` of the claim
    cells; ``split_lrs`` one cell per learning rate; ``sleep`` (selftest) seconds a cell
    takes; ``fail_seeds`` (selftest) seeds whose cell raises.
    """

    scale: str = "paper"
    seed: int = 0
    seeds: int | None = None
    claims: tuple[str, ...] = ()
    profile: str = "ci"
    split_lrs: bool = False
    sleep: float = 0.0
    fail_seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class SweepDefinition:
    """A named sweep: ``build(options) -> SweepPlan``; ``default_seeds`` when ``--seeds`` is not given."""

    name: str
    title: str
    build: Callable[[SweepOptions], SweepPlan]
    default_seeds: int = 1


# ---------------------------------------------------------------- reproductions
def _block_errors(outcomes: Mapping[str, CellOutcome], by_key: Mapping[str, Any]) -> dict[Any, str]:
    return {by_key[k]: o.error for k, o in outcomes.items() if k in by_key and not o.ok}


def _values(outcomes: Mapping[str, CellOutcome], by_key: Mapping[str, Any]) -> dict[Any, dict[str, Any]]:
    return {by_key[k]: o.value for k, o in outcomes.items() if k in by_key and o.ok}


def _judged(claim_id: str, judge: Callable[[], CheckResult]) -> CheckResult:
    try:
        return judge()
    except Exception:  # a merge that crashes is a FAIL with its traceback, never lost
        return CheckResult(claim_id, Verdict.FAIL, "merging the sweep's cells raised", reason=traceback.format_exc())


_Part = tuple[list[SweepCell], Callable[[Mapping[str, CellOutcome]], list[CheckResult]], dict[str, Any]]


def _reproduction_part(
    claim_id: str, blocks: list[Any], judge: Callable[..., CheckResult], design: Any, seed: int
) -> _Part:
    """Cells of a reproduction's blocks and the merge that judges them with the claim's own ``judge``."""
    cells = [SweepCell("fpp.online-block", b.params(), label=_block_label(b)) for b in blocks]
    by_key = {c.key: b for c, b in zip(cells, blocks, strict=True)}

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
        return [_judged(claim_id, lambda: judge(design, values, seed=seed, errors=errors))]

    return cells, merge, {}


def _fig2(opts: SweepOptions) -> _Part:
    """Fig. 2 with both measures: the squared-error variant and the paper's accuracy measure (two judged claims)."""
    parts = []
    for measure, claim_id in (("squared", "fpp.cycleworld-reproduction"),
                              ("accuracy", "fpp.cycleworld-accuracy-reproduction")):  # fmt: skip
        reps = cycleworld_designs(opts.scale, opts.seed, split_lrs=opts.split_lrs, measure=measure)
        parts.append(_reproduction_part(claim_id, [b for r in reps for b in r.all_blocks()], judge_cycleworld, reps,
                                        opts.seed))  # fmt: skip

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        return [r for _, m, _ in parts for r in m(outcomes)]

    ps = [r.common["p"] for r in cycleworld_designs(opts.scale, opts.seed)]
    settings = {"scale": opts.scale, "seed": opts.seed, "p": ps, "measures": ["squared", "accuracy"]}
    return [c for cs, _, _ in parts for c in cs], merge, settings


def _fig3b(opts: SweepOptions) -> _Part:
    rep = stochasticworld_design(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    cells, merge, _ = _reproduction_part(
        "fpp.stochasticworld-reproduction", rep.all_blocks(), judge_stochasticworld, rep, opts.seed
    )
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, "steps": rep.steps, "runs": rep.runs}


def _fig4(opts: SweepOptions) -> _Part:
    reps = updates_designs(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    blocks = [b for r in reps for b in r.all_blocks()]
    cells, merge, _ = _reproduction_part("fpp.updates-reproduction", blocks, judge_updates, reps, opts.seed)
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, "configurations": len(reps)}


def _fig7(opts: SweepOptions) -> _Part:
    reps = fig7_designs(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    blocks = [b for r in reps for b in r.all_blocks()]
    judge = partial(judge_updates, figure="Fig. 7")
    cells, merge, _ = _reproduction_part("fpp.updates-reproduction", blocks, judge, reps, opts.seed)
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, "configurations": len(reps), "figure": "Fig. 7"}


def _fig3a(opts: SweepOptions) -> _Part:
    """§5 Fig. 3(a): CycleWorld across T, FPP vs T-BPTT vs No-Overlap T-BPTT (:func:`judge_fig3a`)."""
    rep = fig3a_design(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    cells, merge, _ = _reproduction_part("fpp.fig3a-sweep", rep.all_blocks(), judge_fig3a, rep, opts.seed)
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, "p": rep.common["p"], "steps": rep.steps,
                          "runs": rep.runs}  # fmt: skip


def _fig5(opts: SweepOptions) -> _Part:
    """App. C Fig. 5: FPP on Stochastic World across (N, T) (:func:`judge_fig5`)."""
    grid, reps = fig5_designs(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    blocks = [b for r in reps for b in r.all_blocks()]
    cells, merge, _ = _reproduction_part("fpp.fig5-sweep", blocks, partial(judge_fig5, grid), reps, opts.seed)
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, **grid.as_dict(), "steps": reps[0].steps,
                          "runs": reps[0].runs, "lrs": list(reps[0].lrs)}  # fmt: skip


def _fig6(opts: SweepOptions) -> _Part:
    """App. C Fig. 6: FPP on Stochastic World across (lambda, T) (:func:`judge_fig6`)."""
    grid, reps = fig6_designs(opts.scale, opts.seed, split_lrs=opts.split_lrs)
    blocks = [b for r in reps for b in r.all_blocks()]
    cells, merge, _ = _reproduction_part("fpp.fig6-sweep", blocks, partial(judge_fig6, grid), reps, opts.seed)
    return cells, merge, {"scale": opts.scale, "seed": opts.seed, **grid.as_dict(), "steps": reps[0].steps,
                          "runs": reps[0].runs, "lrs": list(reps[0].lrs)}  # fmt: skip


def _block_label(b: Any) -> str:
    mut = f" [{b.mutant}]" if b.mutant else ""
    mut += f" M={b.updates} B={b.batch}" if (b.updates, b.batch) != (1, 1) else ""
    lrs = ",".join(f"{x:g}" for x in b.lrs)
    where = f"p={b.p}" if b.env == "cycleworld" else f"lags={b.lags[0]},{b.lags[1]}"
    if b.env == "cycleworld" and b.metric != "squared":
        where += f" [{b.metric}]"
    if b.buffer_size != 100:
        where += f" N={b.buffer_size}"
    if b.lam != 1.0:
        where += f" lambda={b.lam:g}"
    return f"{b.env} {where} {b.method} T={b.T} lr={lrs}{mut} ({b.runs} runs x {b.steps} steps)"


def _single(
    name: str,
    part: Callable[
        [SweepOptions], tuple[list[SweepCell], Callable[[Mapping[str, CellOutcome]], list[CheckResult]], dict[str, Any]]
    ],
) -> Callable[[SweepOptions], SweepPlan]:
    def build(opts: SweepOptions) -> SweepPlan:
        _scale_ok(opts.scale)
        cells, merge, settings = part(opts)
        return SweepPlan(name, tuple(cells), merge, settings=settings)

    return build


def _both(opts: SweepOptions) -> SweepPlan:
    _scale_ok(opts.scale)
    c1, m1, s1 = _fig2(opts)
    c2, m2, s2 = _fig3b(opts)

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        return m1(outcomes) + m2(outcomes)

    return SweepPlan("fpp-reproductions", tuple(c1 + c2), merge, settings={"fig2": s1, "fig3b": s2})


def _scale_ok(scale: str) -> None:
    if scale not in SCALES:
        raise InvalidArgument("--scale", scale, f"must be one of {SCALES}")


def _char_sweep(name: str, task: str, claim_id: str) -> Callable[[SweepOptions], SweepPlan]:
    """UORO §4's character-level sweep of ``task``: one cell per run, judged by
    :func:`verify.checks.uoro_char.judge_char_sweep` at the design's scale (``ci`` or ``paper``)."""

    def build(opts: SweepOptions) -> SweepPlan:
        design = char_design(task, opts.scale, opts.seed)
        cells = [SweepCell("uoro.char-run", s.params(), label=s.label()) for s in design.specs]
        by_key = {c.key: s.label() for c, s in zip(cells, design.specs, strict=True)}

        def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
            values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
            return [_judged(claim_id, lambda: judge_char_sweep(claim_id, design, values, errors))]

        settings = {"scale": opts.scale, "seed": opts.seed, "runs": len(cells), "chars": design.specs[0].chars,
                    "hidden": design.specs[0].hidden}  # fmt: skip
        return SweepPlan(name, tuple(cells), merge, settings=settings)

    return build


def _uorot(opts: SweepOptions) -> SweepPlan:
    """``uoro-anbn-t``: UORO-T against UORO on aⁿbⁿ(1, 32) (:func:`verify.uoro.char_reproduction.uorot_design`),
    judged by :func:`verify.checks.uoro_t.judge_uorot_sweep`; ``--scale ci`` (reduced) or ``paper``."""
    design = uorot_design(opts.scale, opts.seed)
    cells = [SweepCell("uoro.char-run", s.params(), label=s.label()) for s in design.specs]
    by_key = {c.key: s.label() for c, s in zip(cells, design.specs, strict=True)}
    claim = "uoro.anbn-uorot-sweep"

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
        return [_judged(claim, lambda: judge_uorot_sweep(claim, design, values, errors))]

    settings = {"scale": opts.scale, "seed": opts.seed, "runs": len(cells), "chars": design.specs[0].chars,
                "hidden": design.specs[0].hidden}  # fmt: skip
    return SweepPlan("uoro-anbn-t", tuple(cells), merge, settings=settings)


def _ib_truncation(opts: SweepOptions) -> SweepPlan:
    """``uoro-ib-truncation``: UORO §4's "TBPTT requires a truncation above 200", one deterministic cell per (k, eta)
    and the sign-flipped control at the largest k, judged by
    :func:`verify.checks.uoro_truncation.judge_truncation_sweep`. One scale: the grid is the paper's system."""
    if opts.scale != "paper":
        raise InvalidArgument("--scale", opts.scale, "uoro-ib-truncation has one scale, paper (about 1 CPU-minute)")
    grid = truncation_grid()
    keys = [(k, eta, 1.0) for k in grid.ks for eta in grid.etas] + [(max(grid.ks), eta, -1.0) for eta in grid.etas]
    cells = [
        SweepCell("uoro.ib-truncation-run", {"n": grid.n, "p": grid.p, "k": k, "eta": eta, "steps": grid.steps,
                                             "window": grid.window, "factor": f},
                  label=f"influence balancing block TBPTT k={k} eta={eta:g}"
                  + (" [sign-flipped control]" if f < 0 else ""))
        for k, eta, f in keys
    ]  # fmt: skip
    by_key = {c.key: key for c, key in zip(cells, keys, strict=True)}

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
        claim = "uoro.ib-truncation-sweep"
        return [_judged(claim, lambda: judge_truncation_sweep(claim, grid, values, errors))]

    settings = {"scale": "paper", "seed": opts.seed, "n": grid.n, "p": grid.p, "ks": list(grid.ks),
                "etas": list(grid.etas), "steps": grid.steps}  # fmt: skip
    return SweepPlan("uoro-ib-truncation", tuple(cells), merge, settings=settings)


def _rflo_fig2(opts: SweepOptions) -> SweepPlan:
    """``rflo-fig2``: Murray 2019 Fig. 2, one cell per period (every learner and realization batched in it), judged by
    :func:`verify.checks.rflo_periodic.judge_periodic_sweep`; ``--scale paper``, ``full`` (reduced) or ``ci``."""
    if opts.scale not in RFLO_SIZES:
        raise InvalidArgument("--scale", opts.scale, f"rflo-fig2 takes one of {tuple(RFLO_SIZES)}")
    sc = RFLO_SIZES[opts.scale]
    cells = [SweepCell("rtrl.rflo-periodic-run", {"period": p, "scale": opts.scale, "seed": opts.seed},
                       label=f"Murray Fig. 2 periodic output T={p}tau ({sc.realizations} realizations x {sc.trials} "
                       "trials)") for p in sc.periods]  # fmt: skip
    by_key = {c.key: p for c, p in zip(cells, sc.periods, strict=True)}
    claim = "rtrl.rflo-periodic-sweep"

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
        return [_judged(claim, lambda: judge_periodic_sweep(claim, opts.scale, sc, values, errors))]

    settings = {"scale": opts.scale, "seed": opts.seed, "periods": list(sc.periods), "n": sc.n, "tau": sc.tau,
                "realizations": sc.realizations, "trials": sc.trials, "eta": sc.eta}  # fmt: skip
    return SweepPlan("rflo-fig2", tuple(cells), merge, settings=settings)


def _marschall_add(opts: SweepOptions) -> SweepPlan:
    """``marschall-add``: Marschall et al. 2020's Add task, one cell per (realization, learning rate) with every
    learner in it, judged by :func:`verify.checks.marschall_add.judge_add_sweep`; ``--scale paper``, ``full``
    (reduced) or ``ci``."""
    if opts.scale not in ADD_SIZES:
        raise InvalidArgument("--scale", opts.scale, f"marschall-add takes one of {tuple(ADD_SIZES)}")
    sc = ADD_SIZES[opts.scale]
    return _marschall_plan("add", opts, sc, f"Add task t1={sc.t1} t2={sc.t2}", judge_add_sweep,
                           {"t1": sc.t1, "t2": sc.t2})  # fmt: skip


def _marschall_mimic(opts: SweepOptions) -> SweepPlan:
    """``marschall-mimic``: Marschall et al. 2020's Mimic task, one cell per (realization, learning rate) with every
    learner in it, judged by :func:`verify.checks.marschall_mimic.judge_mimic_sweep`; ``--scale paper``, ``full``
    (reduced) or ``ci``."""
    if opts.scale not in MIMIC_SIZES:
        raise InvalidArgument("--scale", opts.scale, f"marschall-mimic takes one of {tuple(MIMIC_SIZES)}")
    sc = MIMIC_SIZES[opts.scale]
    return _marschall_plan("mimic", opts, sc, f"Mimic task gain={sc.target_gain:g}", judge_mimic_sweep,
                           {"target_gain": sc.target_gain, "d": sc.d, "p_input": sc.p_input})  # fmt: skip


def _marschall_plan(task: str, opts: SweepOptions, sc: Any, what: str, judge: Any, extra: dict[str, Any]) -> SweepPlan:
    """The cells of ``marschall-<task>`` (task ``rtrl.marschall-<task>-run``) and their judge."""
    keys = [(r, lr) for r in range(sc.realizations) for lr in sc.lrs]
    cells = [SweepCell(f"rtrl.marschall-{task}-run", {"realization": r, "lr": lr, "scale": opts.scale,
                                                       "seed": opts.seed},
                       label=f"Marschall {what} n={sc.n} realization {r} lr={lr:g} ({sc.steps} steps, 8 learners)")
             for r, lr in keys]  # fmt: skip
    by_key = {c.key: k for c, k in zip(cells, keys, strict=True)}
    claim = f"rtrl.marschall-{task}-sweep"

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
        return [_judged(claim, lambda: judge(claim, opts.scale, sc, values, errors))]

    settings = {"scale": opts.scale, "seed": opts.seed, **extra, "n": sc.n, "realizations": sc.realizations,
                "steps": sc.steps, "lrs": list(sc.lrs)}  # fmt: skip
    return SweepPlan(f"marschall-{task}", tuple(cells), merge, settings=settings)


def _sec7(section: str) -> Callable[[SweepOptions], SweepPlan]:
    """``rtrl-sec71`` / ``rtrl-sec72``: the RTRL convergence paper's §7.1 / §7.2 runs (:mod:`verify.rtrl.sec7`),
    judged by :func:`verify.checks.rtrl_sec7.judge_sec7`; ``--scale ci`` or ``paper``."""
    name = f"rtrl-sec{section.replace('.', '')}"

    def build(opts: SweepOptions) -> SweepPlan:
        runs = sec7.design(section, opts.scale, opts.seed)
        cells = [SweepCell("rtrl.sec7-run", r.params(), label=r.label()) for r in runs]
        by_key = {c.key: r for c, r in zip(cells, runs, strict=True)}

        def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
            values, errors = _values(outcomes, by_key), _block_errors(outcomes, by_key)
            missing = {r: "the cell has no outcome" for k, r in by_key.items() if k not in outcomes}
            try:
                return judge_sec7(section, runs, values, {**errors, **missing})
            except Exception:  # a merge that crashes is a FAIL with its traceback, never lost
                return [CheckResult(f"{name}.merge", Verdict.FAIL, "merging the sweep's cells raised",
                                    reason=traceback.format_exc())]  # fmt: skip

        sz = sec7.SIZES[opts.scale]
        settings = {"scale": opts.scale, "seed": opts.seed, "section": section, "size": sz.__dict__,
                    "constants": sec7.constants()}  # fmt: skip
        return SweepPlan(name, tuple(cells), merge, settings=settings)

    return build


# ---------------------------------------------------------------- claims and calibration
def _select(patterns: tuple[str, ...], default: Callable[[Any], bool], profile: str) -> list[Any]:
    claims = list(all_claims().values())
    if not patterns:
        chosen = [c for c in claims if default(c)]
    else:
        chosen = [c for c in claims if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]
        if not chosen:
            raise InvalidArgument("--claims", list(patterns), "matches no claim id; see `rnn-verify list`")
    runnable = [c for c in chosen if profile in c.profiles and "cuda" not in c.requires]
    if not runnable:
        raise InvalidArgument("--claims", list(patterns), f"no selected claim runs on the CPU in profile {profile}")
    return runnable


#: most seeds a sweep takes (``--seeds``): every seed is a cell per claim, held in memory, cached on disk and
#: listed in the report; the calibration's 1000 seeds resolve rates to ~0.1%, 100 000 to ~0.001%
MAX_SEEDS = 100_000


def _seeds(opts: SweepOptions, default: int) -> list[int]:
    n = default if opts.seeds is None else opts.seeds
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArgument("--seeds", n, "must be an integer >= 1")
    if n > MAX_SEEDS:
        raise InvalidArgument(
            "--seeds",
            n,
            f"must be at most {MAX_SEEDS}: every seed is a cell per claim, held in memory, cached on disk and listed "
            "in the report",
        )
    if opts.seed + n - 1 > MAX_SEED:
        raise InvalidArgument("--seeds", n, f"--seed {opts.seed} + {n} seeds runs past the largest seed {MAX_SEED}")
    return list(range(opts.seed, opts.seed + n))


#: most cells a claims-by-seeds sweep builds (claims x ``--seeds``): each is held in memory and cached on disk
MAX_CELLS = 1_000_000


def _claim_cells(claims: list[Any], seeds: list[int], profile: str) -> dict[tuple[str, int], SweepCell]:
    if len(claims) * len(seeds) > MAX_CELLS:
        raise InvalidArgument(
            "--seeds",
            len(seeds),
            f"{len(claims)} claims x {len(seeds)} seeds = {len(claims) * len(seeds)} cells, more than the {MAX_CELLS} "
            "a sweep holds (each is kept in memory and cached on disk); use fewer seeds or --claims",
        )
    return {
        (c.id, s): SweepCell("claim", claim_params(c, RunConfig(profile=profile, seed=s)), label=f"{c.id} seed {s}")
        for c in claims
        for s in seeds
    }


def _result_of(cell: SweepCell, outcome: CellOutcome | None, claim_id: str, seed: int) -> CheckResult:
    if outcome is not None and outcome.ok:
        try:
            return CheckResult.from_dict(outcome.value)
        except InvalidArgument as exc:
            return CheckResult(claim_id, Verdict.FAIL, f"malformed cached result: {exc}", reason=str(exc), seed=seed)
    why = outcome.error if outcome is not None else "the cell has no outcome"
    return CheckResult(
        claim_id,
        Verdict.FAIL,
        "the cell did not run: " + (why.strip().splitlines() or ["?"])[-1],
        reason=why,
        seed=seed,
    )


def _claims_sweep(opts: SweepOptions) -> SweepPlan:
    claims = _select(opts.claims, lambda c: True, opts.profile)
    seeds = _seeds(opts, 1)
    if len(seeds) > 1:
        raise InvalidArgument("--seeds", len(seeds), "the claims sweep merges one seed; use the calibration sweep")
    cells = _claim_cells(claims, seeds, opts.profile)

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        return [_result_of(cell, outcomes.get(cell.key), cid, s) for (cid, s), cell in cells.items()]

    return SweepPlan("claims", tuple(cells.values()), merge, settings={"profile": opts.profile, "seed": opts.seed})


def _calibration(opts: SweepOptions) -> SweepPlan:
    """Every statistical claim (default) over ``seeds`` seeds: observed verdict rates with Clopper–Pearson bounds.

    A correct implementation is run, so every FAIL is a false FAIL: the claim's
    stated false-FAIL rate α (its results' ``alpha``) is compared with the observed
    rate; the calibration record FAILs when the Clopper–Pearson 95% interval lies
    entirely above α (the stated rate is exceeded, significantly), PASSes
    otherwise, and is INCONCLUSIVE where the check states no α. The false
    *certificate* rates (a PASS on a biased estimator) need mutants run through the
    checks: ``python -m verify.bench.uoro_statistics --calibrate``.
    """
    claims = _select(opts.claims, lambda c: c.kind == "statistical", opts.profile)
    seeds = _seeds(opts, 1000)
    cells = _claim_cells(claims, seeds, opts.profile)

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        per_claim = _per_claim(claims, seeds, cells, outcomes)
        return [calibration_result(c.id, per_claim[c.id], seeds, opts.profile) for c in claims]

    return _over_seeds("calibration", claims, seeds, cells, merge, opts)


def _per_claim(
    claims: list[Any], seeds: list[int], cells: Mapping[tuple[str, int], SweepCell], outcomes: Mapping[str, CellOutcome]
) -> dict[str, list[CheckResult]]:
    """Each claim's results over ``seeds`` (a cell that did not run is a FAIL naming why)."""
    return {
        c.id: [_result_of(cells[(c.id, s)], outcomes.get(cells[(c.id, s)].key), c.id, s) for s in seeds] for c in claims
    }


def _over_seeds(
    name: str,
    claims: list[Any],
    seeds: list[int],
    cells: Mapping[tuple[str, int], SweepCell],
    merge: MergeFn,
    opts: SweepOptions,
) -> SweepPlan:
    return SweepPlan(
        name,
        tuple(cells.values()),
        merge,
        settings={"profile": opts.profile, "seeds": [seeds[0], seeds[-1]], "claims": [c.id for c in claims]},
    )


def calibration_result(claim_id: str, results: list[CheckResult], seeds: list[int], profile: str) -> CheckResult:
    """Tabulate one claim's verdicts over seeds: counts, rates and Clopper–Pearson 95% intervals; judge vs α."""
    n = len(results)
    counts = {v.value: sum(r.verdict is v for r in results) for v in Verdict}
    table = []
    for v, k in counts.items():
        lo, hi = clopper_pearson(k, n, 0.95)
        table.append([v, k, n, k / n, lo, hi])
    alphas = sorted({float(r.alpha) for r in results if r.alpha is not None})
    k_fail = counts["FAIL"]
    lo, hi = clopper_pearson(k_fail, n, 0.95)
    crashed = [
        r
        for r in results
        if r.verdict is Verdict.FAIL and r.summary.startswith(("the cell did not run", "check raised"))
    ]
    alpha = alphas[-1] if alphas else None
    verdict, reason = _calibration_verdict(crashed, alpha, k_fail, n, lo, hi)
    fig = {
        "kind": "table",
        "title": f"{claim_id}: verdicts over {n} seeds (correct implementation)",
        "columns": ["verdict", "count", "seeds", "rate", "CP 95% low", "CP 95% high"],
        "rows": table,
        "caption": f"profile {profile}, seeds {seeds[0]}..{seeds[-1]}; stated alpha: "
        f"{', '.join(f'{a:g}' for a in alphas) or 'none'}",
    }
    return CheckResult(
        claim_id=claim_id,
        verdict=verdict,
        summary=f"calibration over {n} seeds: FAIL {k_fail}/{n} = {k_fail / n:.4f} (CP 95% [{lo:.4f}, {hi:.4f}]) vs "
        f"stated alpha {alpha if alpha is not None else 'n/a'}; PASS {counts['PASS']}, INCONCLUSIVE "
        f"{counts['INCONCLUSIVE']}, SKIPPED {counts['SKIPPED']}",
        statistic=k_fail / n,
        threshold=alpha,
        alpha=alpha,
        samples_used=n,
        reason=reason,
        data={
            "counts": counts,
            "table": table,
            "seeds": [seeds[0], seeds[-1]],
            "profile": profile,
            "figures": [fig],
        },
    )


def _calibration_verdict(
    crashed: list[CheckResult], alpha: float | None, k_fail: int, n: int, lo: float, hi: float
) -> tuple[Verdict, str | None]:
    """FAIL when a seed crashed or the FAIL rate's CP 95% interval lies above alpha; INCONCLUSIVE without alpha."""
    if crashed:
        verdict, reason = (
            Verdict.FAIL,
            f"{len(crashed)} seed(s) crashed, e.g. seed {crashed[0].seed}:\n"
            + (crashed[0].reason or crashed[0].summary),
        )
    elif alpha is None:
        verdict, reason = Verdict.INCONCLUSIVE, "the check states no false-FAIL rate alpha: rates reported only"
    elif lo > alpha:
        verdict, reason = (
            Verdict.FAIL,
            f"observed false-FAIL rate {k_fail}/{n}: its 95% CP interval [{lo:.4f}, {hi:.4f}] lies above "
            f"alpha = {alpha:g}",
        )
    else:
        verdict, reason = Verdict.PASS, None
    return verdict, reason


# ---------------------------------------------------------------- the gate over seeds
#: id of the gate sweep's family-wise record (not a catalog claim: a property of the whole profile)
GATE_RECORD = "gate.family-wise"


def _gate(opts: SweepOptions) -> SweepPlan:
    """Every claim of the profile (CPU) over ``seeds`` seeds on the toolkit's own implementations: is the gate
    seed-independent?

    Per claim (:func:`gate_result`): FAIL, INCONCLUSIVE and PASS counts with Clopper–Pearson 95% intervals
    against the claim's stated false-FAIL rate, and every negative control's catch count. One more record,
    ``gate.family-wise``: the seeds on which *any* claim FAILed (what a user's CI sees) against the stated
    family-wise budget :data:`theory.catalog.GATE_ALPHA` and the sum of the claims' stated rates
    (:func:`theory.catalog.gate_budget`).
    """
    claims = _select(opts.claims, lambda c: True, opts.profile)
    seeds = _seeds(opts, 200)
    cells = _claim_cells(claims, seeds, opts.profile)

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        per_claim = _per_claim(claims, seeds, cells, outcomes)
        out = [gate_result(c, per_claim[c.id], seeds, opts.profile) for c in claims]
        out.append(family_wise_result(per_claim, seeds, opts.profile))
        return out

    return _over_seeds("gate", claims, seeds, cells, merge, opts)


def gate_result(claim: Any, results: list[CheckResult], seeds: list[int], profile: str) -> CheckResult:
    """One claim over seeds on correct code: its verdict counts and every control's catch count.

    FAIL when a control was missed in any seed, or when FAILs exceed the claim's stated rate significantly
    (Clopper–Pearson 95% interval above ``claim.alpha``), or -- for a claim that states no rate -- when it
    FAILed at all; otherwise PASS, with the counts and intervals in the summary and data.
    """
    base = calibration_result(claim.id, results, seeds, profile)
    n = len(results)
    controls = _control_counts(results)
    missed = {k: v for k, v in controls.items() if v[0] < v[1]}
    counts = base.data["counts"]
    k_fail = counts["FAIL"]
    lo, hi = clopper_pearson(k_fail, n, 0.95)
    alpha = claim.alpha
    verdict, reason = _gate_verdict(base, missed, alpha, k_fail, n, lo, hi)
    ctrl_txt = "; ".join(f"{k} caught {v[0]}/{v[1]}" for k, v in controls.items()) or "no controls"
    summary = (
        f"{n} seeds: FAIL {k_fail} (CP95 upper {hi:.2g}; stated alpha {alpha if alpha is not None else 'none'}), "
        f"INCONCLUSIVE {counts['INCONCLUSIVE']}, PASS {counts['PASS']}, SKIPPED {counts['SKIPPED']}; {ctrl_txt}"
    )
    fails = [r.seed for r in results if r.verdict is Verdict.FAIL]
    inconclusive = [r.seed for r in results if r.verdict is Verdict.INCONCLUSIVE]
    wall = sorted(r.wall_time for r in results)
    data = {
        **base.data,
        "controls": {k: {"caught": v[0], "runs": v[1]} for k, v in controls.items()},
        "fail_seeds": fails,
        "inconclusive_seeds": inconclusive,
        "stated_alpha": alpha,
        "stated_control_beta": claim.control_beta,
        "wall_time": {"median": wall[len(wall) // 2], "max": wall[-1]} if wall else None,
    }
    return CheckResult(
        claim_id=claim.id,
        verdict=verdict,
        summary=summary,
        statistic=k_fail / n,
        threshold=alpha,
        alpha=alpha,
        samples_used=n,
        reason=reason,
        data=data,
    )


def _control_counts(results: list[CheckResult]) -> dict[str, list[int]]:
    """Every control (and kill-table mutant) over the seeds: [times caught, runs]."""
    controls: dict[str, list[int]] = {}
    for r in results:
        outcomes = [(c.name, c.ok) for c in r.controls]
        # a kill table's mutants are controls too: each must be caught (and an unbiased one not accused)
        outcomes += [
            (f"kill table: {row['mutant']}", bool(row.get("killed")) and bool(row.get("clean", True)))
            for row in (r.data or {}).get("kill_table", [])
            if isinstance(row, dict) and "mutant" in row
        ]
        for name, ok in outcomes:
            hit = controls.setdefault(name, [0, 0])
            hit[0] += int(ok)
            hit[1] += 1
    return controls


def _gate_verdict(
    base: CheckResult, missed: dict[str, list[int]], alpha: float | None, k_fail: int, n: int, lo: float, hi: float
) -> tuple[Verdict, str | None]:
    """FAIL on a crash, a missed control, a FAIL of a claim without alpha, or a FAIL rate significantly above alpha."""
    if base.verdict is Verdict.FAIL and base.reason and "crashed" in base.reason:
        verdict, reason = Verdict.FAIL, base.reason
    elif missed:
        verdict, reason = (
            Verdict.FAIL,
            "control(s) missed: " + ", ".join(f"{k} {v[1] - v[0]}/{v[1]}" for k, v in missed.items()),
        )
    elif alpha is None and k_fail:
        verdict, reason = Verdict.FAIL, f"{k_fail} FAIL(s) of a claim that states no false-FAIL rate"
    elif alpha is not None and lo > alpha:
        verdict, reason = Verdict.FAIL, f"FAIL rate {k_fail}/{n}: CP95 [{lo:.2g}, {hi:.2g}] above alpha = {alpha:g}"
    else:
        verdict, reason = Verdict.PASS, None
    return verdict, reason


def family_wise_result(per_claim: Mapping[str, list[CheckResult]], seeds: list[int], profile: str) -> CheckResult:
    """The seeds on which any claim FAILed correct code, against the stated family-wise budget."""
    stated, rows = gate_budget(profile, ids=set(per_claim))
    n = len(seeds)
    bad_seeds = sorted({int(r.seed or 0) for res in per_claim.values() for r in res if r.verdict is Verdict.FAIL})
    inc_seeds = sorted(
        {int(r.seed or 0) for res in per_claim.values() for r in res if r.verdict is Verdict.INCONCLUSIVE}
    )
    lo, hi = clopper_pearson(len(bad_seeds), n, 0.95)
    ok = stated <= GATE_ALPHA and lo <= GATE_ALPHA
    table = [[cid, f"{a:g}", f"{b:g}"] for cid, a, b in rows]
    return CheckResult(
        claim_id=GATE_RECORD,
        verdict=Verdict.PASS if ok else Verdict.FAIL,
        summary=(
            f"profile {profile}, {n} seeds, {len(per_claim)} claims: a FAIL in {len(bad_seeds)} seeds "
            f"(CP95 [{lo:.2g}, {hi:.2g}]), an INCONCLUSIVE in {len(inc_seeds)}; stated family-wise false-FAIL "
            f"rate {stated:.2g} (sum over {len(rows)} claims of alpha + control beta) vs budget {GATE_ALPHA:g}"
        ),
        statistic=len(bad_seeds) / n,
        threshold=GATE_ALPHA,
        alpha=GATE_ALPHA,
        samples_used=n,
        reason=None if ok else "stated budget exceeded or FAIL rate significantly above it",
        data={
            "fail_seeds": bad_seeds,
            "inconclusive_seeds": inc_seeds,
            "stated_family_wise": stated,
            "budget": GATE_ALPHA,
            "figures": [
                {
                    "kind": "table",
                    "title": "stated false-FAIL rates of the profile's claims (their sum bounds the gate's)",
                    "columns": ["claim", "alpha", "control beta"],
                    "rows": table,
                }
            ],
        },
    )


# ---------------------------------------------------------------- selftest
def _selftest(opts: SweepOptions) -> SweepPlan:
    seeds = _seeds(opts, 8)
    cells = [
        SweepCell(
            "sweep.selftest", {"seed": s, "sleep": opts.sleep, "fail": s in opts.fail_seeds}, label=f"selftest seed {s}"
        )
        for s in seeds
    ]

    def merge(outcomes: Mapping[str, CellOutcome]) -> list[CheckResult]:
        got = [outcomes.get(c.key) for c in cells]
        bad = [o for o in got if o is None or not o.ok]
        vals = [o.value for o in got if o is not None and o.ok]
        total = sum(v["sum"] for v in vals)
        if bad:
            return [
                CheckResult(
                    "reference.sweep-selftest",
                    Verdict.FAIL,
                    f"{len(bad)} of {len(cells)} cells failed",
                    reason=failed_cells_text([o for o in got if o is not None]),
                    data={"values": vals},
                )
            ]
        return [
            CheckResult(
                "reference.sweep-selftest",
                Verdict.PASS,
                f"{len(cells)} cells, sum {total:.12g}",
                statistic=total,
                data={"values": vals},
            )
        ]

    return SweepPlan("selftest", tuple(cells), merge, settings={"seeds": len(seeds), "sleep": opts.sleep})


_DEFS = (
    SweepDefinition(
        "fpp-fig2", "FPP §5 Fig. 2: CycleWorld, FPP vs T-BPTT at T = p/2 and p", _single("fpp-fig2", _fig2)
    ),
    SweepDefinition(
        "fpp-fig3b",
        "FPP §5 Fig. 3(b): Stochastic World, FPP vs T-BPTT vs No-Overlap T-BPTT",
        _single("fpp-fig3b", _fig3b),
    ),
    SweepDefinition(
        "fpp-fig4",
        "FPP §5 Fig. 4: M updates and mini-batches, FPP vs FPP without state update",
        _single("fpp-fig4", _fig4),
    ),
    SweepDefinition(
        "fpp-fig7",
        "FPP App. D Fig. 7: CycleWorld, T = 1, B = 16, 50 000 steps, M updates, FPP vs FPP without state update",
        _single("fpp-fig7", _fig7),
    ),
    SweepDefinition(
        "fpp-fig3a",
        "FPP §5 Fig. 3(a): CycleWorld across T, FPP vs T-BPTT vs No-Overlap T-BPTT",
        _single("fpp-fig3a", _fig3a),
    ),
    SweepDefinition(
        "fpp-fig5",
        "FPP App. C Fig. 5: sensitivity to the buffer size N and T (Stochastic World)",
        _single("fpp-fig5", _fig5),
    ),
    SweepDefinition(
        "fpp-fig6",
        "FPP App. C Fig. 6: sensitivity to lambda for several T (Stochastic World)",
        _single("fpp-fig6", _fig6),
    ),
    SweepDefinition("fpp-reproductions", "FPP §5: Fig. 2 and Fig. 3(b)", _both),
    SweepDefinition(
        "uoro-brackets",
        "UORO §4 Fig. 3b: distant brackets (1, 5, 5, 10), UORO vs TBPTT-4, GRU and LSTM",
        _char_sweep("uoro-brackets", "brackets", "uoro.brackets-sweep"),
    ),
    SweepDefinition(
        "uoro-anbn",
        "UORO §4 Fig. 4, 5: a^n b^n (1, 32), UORO vs TBPTT, GRU and LSTM",
        _char_sweep("uoro-anbn", "anbn", "uoro.anbn-sweep"),
    ),
    SweepDefinition(
        "uoro-anbn-t",
        "UORO §3, §4 Fig. 4(b), 5: UORO-T (T = 2, 16) against UORO on a^n b^n (1, 32), GRU and LSTM, three seeds",
        _uorot,
    ),
    SweepDefinition(
        "uoro-ib-truncation",
        "UORO §4 influence balancing: block TBPTT-k across k and eta ('requires a truncation above 200')",
        _ib_truncation,
    ),
    SweepDefinition(
        "rflo-fig2",
        "Murray 2019 Fig. 2: periodic output task, N = 30 leaky units, RFLO vs BPTT, readout alignment",
        _rflo_fig2,
    ),
    SweepDefinition(
        "marschall-add",
        "Marschall et al. 2020, the Add task: RTRL, UORO, KF-RTRL, RFLO, e-prop, SnAp-1 against the task's baselines",
        _marschall_add,
    ),
    SweepDefinition(
        "marschall-mimic",
        "Marschall et al. 2020, the Mimic task: the same learners mimicking a fixed random target RNN",
        _marschall_mimic,
    ),
    SweepDefinition(
        "rtrl-sec71",
        "RTRL convergence §7.1 Fig. 1-2 (rebuilt): linear RNN, RTRL vs TBPTT(k), RMSprop, lr schedules",
        _sec7("7.1"),
    ),
    SweepDefinition(
        "rtrl-sec72",
        "RTRL convergence §7.2 Fig. 3-8 (rebuilt): Elman ReLU / tanh, RTRL vs TBPTT(k), RMSprop, lr schedules",
        _sec7("7.2"),
    ),
    SweepDefinition(
        "calibration",
        "observed verdict rates of the statistical claims over seeds (Clopper-Pearson)",
        _calibration,
        default_seeds=1000,
    ),
    SweepDefinition(
        "gate",
        "every claim of the profile over seeds on correct code: FAIL rates, controls caught, family-wise rate",
        _gate,
        default_seeds=200,
    ),
    SweepDefinition("claims", "any claims at one seed (like rnn-verify run, cached and on an executor)", _claims_sweep),
    SweepDefinition("selftest", "a synthetic sweep that exercises the machinery (tests, smoke runs)", _selftest, 8),
)


def definitions() -> dict[str, SweepDefinition]:
    """Every sweep by name."""
    return {d.name: d for d in _DEFS}


def get_definition(name: str) -> SweepDefinition:
    defs = definitions()
    if name not in defs:
        raise InvalidArgument("SWEEP", name, f"must be one of {', '.join(defs)}")
    return defs[name]
