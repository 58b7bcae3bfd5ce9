r"""Designs of FPP's sweeps over T, the buffer size N and λ: §5 Fig. 3(a), App. C Fig. 5 and Fig. 6.

Paper: ``fpp-explicit-state-variables.md`` §5 ("We additionally compare FPP and the two variants of T-BPTT
[...] under different settings of T, shown in Figure 3 [...] FPP outperforms the other two for every T, except
T = 1 in CycleWorld where all three methods perform similarly") and App. C ("Parameter study": Fig. 5, buffer
sizes 100, 1000 and 10000 and truncations 1, 5, 10, 15 and 50; Fig. 6, "Sensitivity of Lambda for various values
of T"). Each design is a list of :class:`~verify.fpp.reproduction.Reproduction` whose blocks
(:class:`~verify.fpp.reproduction.Block`) run as the cells of a sweep (``rnn-verify sweep fpp-fig3a``,
``fpp-fig5``, ``fpp-fig6``) and are judged by :mod:`verify.checks.fpp_sensitivity`.

What the paper leaves open, and what these designs take (stated, fixed before the runs):

* Fig. 3(a)'s cycle length and T grid are not printed: p = 10 (the default ``--env_size`` of the authors' code,
  VincentLiu3/fpp ``model/utils.py``; Fig. 4's CycleWorld) and T ∈ {1, 3, 5, 7, 10} (the text names T = 1, 3
  and 5 for (a)); the paper's measure (the error-rate ratio to predict-zero of
  :func:`~verify.fpp.reproduction.prediction_errors`, as ``fpp.cycleworld-accuracy-reproduction``), 5000 steps
  and 30 runs (Fig. 3's caption), buffer 100 (§5).
* App. C names neither the environment of Fig. 5 and Fig. 6 nor Fig. 6's λ grid: Stochastic World (its y-axis
  is a loss, "the losses on y-axis of Figure 5"; the T grid holds the lag 15 and ends at 50, beyond the lag 30),
  32 units, 10 000 steps, 30 runs (Fig. 3(b)'s settings), M = B = 1 (App. C: "with a small number of updates");
  Fig. 6 at N = 100 with λ ∈ {0.1, 1, 10, 100} and T ∈ {1, 5, 15} (two small T and one at the first lag).
"""

from __future__ import annotations

from typing import Any

from verify.errors import InvalidArgument
from verify.fpp.reproduction import APP_D_LRS, SCALES, Reproduction

__all__ = [
    "FIG3A_CONTROLS",
    "FIG5_FULL",
    "FIG5_PAPER",
    "FIG6_FULL",
    "FIG6_PAPER",
    "BufferGrid",
    "LambdaGrid",
    "fig3a_design",
    "fig5_designs",
    "fig6_designs",
]

#: Fig. 3(a)'s controls: learners that cannot learn, run at T = p through the same harness
FIG3A_CONTROLS = (
    ("FPP, gradient sign flipped (fpp.learner-sign-flip), T = p", "fpp", "fpp.learner-sign-flip"),
    ("FPP, gradient zeroed (fpp.learner-frozen), T = p", "fpp", "fpp.learner-frozen"),
)


def _scale_ok(scale: str) -> None:
    if scale not in SCALES:
        raise InvalidArgument("scale", scale, f"must be one of {SCALES}")


def fig3a_design(scale: str, seed: int = 0, *, split_lrs: bool = False) -> Reproduction:
    """§5 Fig. 3(a): CycleWorld(p), FPP, T-BPTT and No-Overlap T-BPTT at each T of the grid (module docstring).

    ``paper``: p = 10, T ∈ {1, 3, 5, 7, 10}, 5000 steps, 30 runs, the App. D lr grid, buffer 100, 4 units, the
    authors' Glorot initialisation, the paper's accuracy measure. ``full``: the same with 10 runs and lrs
    {3e-3, 1e-2, 3e-2}. ``ci``: p = 4, T ∈ {1, 2, 4}, 600 steps, 8 runs, lrs {1e-2, 3e-2}, buffer 20. Controls
    (:data:`FIG3A_CONTROLS`): FPP at T = p with its gradient sign-flipped and zeroed.
    """
    _scale_ok(scale)
    lrs: tuple[float, ...]
    Ts: tuple[int, ...]
    if scale == "ci":
        p, Ts, steps, runs, lrs, buf = 4, (1, 2, 4), 600, 8, (1e-2, 3e-2), 20
    elif scale == "full":
        p, Ts, steps, runs, lrs, buf = 10, (1, 3, 5, 7, 10), 5000, 10, (3e-3, 1e-2, 3e-2), 100
    else:
        p, Ts, steps, runs, lrs, buf = 10, (1, 3, 5, 7, 10), 5000, 30, APP_D_LRS, 100
    learners = tuple((m, T) for m in ("fpp", "tbptt", "tbptt-no-overlap") for T in Ts)
    return Reproduction(
        f"fpp.fig3a-p{p}", scale, "cycleworld", learners, lrs, steps, runs, seed,
        controls=tuple((label, m, p, mut) for label, m, mut in FIG3A_CONTROLS),
        common={"hidden": 4, "p": p, "init": "glorot", "buffer_size": buf, "measure": "accuracy"},
        split_lrs=split_lrs,
    )  # fmt: skip


class BufferGrid:
    """Fig. 5's grid and the roles its points play in the claim (:func:`verify.checks.fpp_sensitivity.judge_fig5`).

    ``Ns`` buffer sizes and ``Ts`` truncations; ``N_base`` the buffer the paper calls reasonable (100);
    ``N_robust`` the buffers judged against it ("quite invariant to buffer size, starting from [...] 100");
    ``N_reported`` the buffer the paper concedes degrades ("too large a buffer"): reported, not judged;
    ``T_small`` the "very small T" that degrades; ``T_large`` the largest T; ``T_robust`` the T judged similar
    to ``T_large`` ("the move from T = 10 to T = 50 does not result in a large difference").
    """

    def __init__(
        self, Ns: tuple[int, ...], Ts: tuple[int, ...], N_robust: tuple[int, ...], N_reported: tuple[int, ...],
        T_robust: tuple[int, ...],
    ) -> None:  # fmt: skip
        self.Ns, self.Ts = Ns, Ts
        self.N_base, self.N_robust, self.N_reported = Ns[0], N_robust, N_reported
        self.T_small, self.T_large, self.T_robust = Ts[0], Ts[-1], T_robust

    def as_dict(self) -> dict[str, Any]:
        return {"Ns": list(self.Ns), "Ts": list(self.Ts), "N_base": self.N_base, "N_robust": list(self.N_robust),
                "N_reported": list(self.N_reported), "T_small": self.T_small, "T_large": self.T_large,
                "T_robust": list(self.T_robust)}  # fmt: skip


#: App. C Fig. 5 as printed: buffer sizes 100, 1000 and 10000; truncations 1, 5, 10, 15 and 50
FIG5_PAPER = BufferGrid((100, 1000, 10_000), (1, 5, 10, 15, 50), (1000,), (10_000,), (10, 15))


def _sw(scale: str) -> tuple[dict[str, Any], int, int, tuple[float, ...]]:
    """Stochastic World's common fields, steps, runs and lrs at ``scale`` (App. C's sweeps)."""
    if scale == "ci":
        return {"hidden": 8, "lags": (2, 4), "init": "glorot"}, 400, 8, (3e-3,)
    common = {"hidden": 32, "lags": (15, 30), "init": "glorot"}
    if scale == "paper":
        return common, 10_000, 30, APP_D_LRS
    # full: 10 runs and the two best lrs of FPP at the paper-scale Fig. 3(b) run (3e-4 at T = 10, 1e-3 at T >= 15)
    return common, 10_000, 10, (3e-4, 1e-3)


#: Fig. 5 at the ``full`` (REDUCED) scale: N = 10 000, which the paper concedes degrades and the claim only reports,
#: left out (its five cells cost as much as the rest on this shared machine)
FIG5_FULL = BufferGrid((100, 1000), (1, 5, 10, 15, 50), (1000,), (), (10, 15))


def fig5_designs(scale: str, seed: int = 0, *, split_lrs: bool = False) -> tuple[BufferGrid, list[Reproduction]]:
    """App. C Fig. 5: FPP on Stochastic World at every (N, T) of the grid; one :class:`Reproduction` per N.

    ``paper``: :data:`FIG5_PAPER`, 32 units, lags (15, 30), 10 000 steps, 30 runs, the App. D lr grid, M = B = 1,
    λ = 1. ``full`` (REDUCED, :data:`FIG5_FULL`): N ∈ {100, 1000}, 10 runs and lrs {3e-4, 1e-3} (FPP's best two at the
    paper-scale Fig. 3(b) run). ``ci``: lags (2, 4), 8 units,
    N ∈ {20, 100, 400}, T ∈ {1, 3, 6}, 400 steps, 8 runs, lr 3e-3. Controls at (N_base, T_large): FPP with its
    gradient zeroed and FPP fed each run's observations shuffled in time (the lags destroyed).
    """
    _scale_ok(scale)
    common, steps, runs, lrs = _sw(scale)
    grid = {"paper": FIG5_PAPER, "full": FIG5_FULL, "ci": BufferGrid((20, 100, 400), (1, 3, 6), (100,), (400,), (3,))}[
        scale
    ]
    reps = []
    for N in grid.Ns:
        controls: tuple[tuple[str, str, int, str | None], ...] = ()
        if N == grid.N_base:
            controls = (
                (f"FPP, gradient zeroed (fpp.learner-frozen), N = {N}, T = {grid.T_large}", "fpp", grid.T_large,
                 "fpp.learner-frozen"),
                (f"FPP fed its observations shuffled in time (fpp.learner-shuffled-inputs), N = {N}, "
                 f"T = {grid.T_large}", "fpp", grid.T_large, "fpp.learner-shuffled-inputs"),
            )  # fmt: skip
        reps.append(
            Reproduction(
                f"fpp.fig5 N={N}", scale, "stochasticworld", tuple(("fpp", T) for T in grid.Ts), lrs, steps, runs,
                seed, controls=controls, common={**common, "buffer_size": N}, split_lrs=split_lrs,
            )
        )  # fmt: skip
    return grid, reps


class LambdaGrid:
    """Fig. 6's grid: ``lams`` (λ), ``Ts``; ``T_small`` the T at which "higher lambda works better" is judged;
    ``lam_default`` the λ of every other experiment (1) at which the premise is judged at the largest T."""

    def __init__(self, lams: tuple[float, ...], Ts: tuple[int, ...], T_small: tuple[int, ...]) -> None:
        self.lams, self.Ts, self.T_small = lams, Ts, T_small
        self.lam_default = 1.0
        self.T_large = Ts[-1]

    def as_dict(self) -> dict[str, Any]:
        return {"lams": list(self.lams), "Ts": list(self.Ts), "T_small": list(self.T_small),
                "lam_default": self.lam_default, "T_large": self.T_large}  # fmt: skip


#: Fig. 6 as this toolkit runs it (the paper prints no grid): λ ∈ {0.1, 1, 10, 100}, T ∈ {1, 5, 15}, small T 1, 5
FIG6_PAPER = LambdaGrid((0.1, 1.0, 10.0, 100.0), (1, 5, 15), (1, 5))


#: Fig. 6 at the ``full`` (REDUCED) scale: lambda up to 10
FIG6_FULL = LambdaGrid((0.1, 1.0, 10.0), (1, 5, 15), (1, 5))


def fig6_designs(scale: str, seed: int = 0, *, split_lrs: bool = False) -> tuple[LambdaGrid, list[Reproduction]]:
    """App. C Fig. 6: FPP on Stochastic World at every (λ, T) of the grid, buffer 100; one :class:`Reproduction`
    per λ. Sizes as :func:`fig5_designs`; ``full`` (REDUCED, :data:`FIG6_FULL`): λ ∈ {0.1, 1, 10}; ``ci``:
    λ ∈ {0.1, 1, 10}, T ∈ {1, 3}, small T 1. Controls: FPP with its
    gradient zeroed at (λ = 1, T_large) (premise), and at the smallest T for the smallest and the largest λ FPP
    without state update with its gradient zeroed, a learner that learns nothing (the comparison must not be
    reproduced on it)."""
    _scale_ok(scale)
    common, steps, runs, lrs = _sw(scale)
    grid = {"paper": FIG6_PAPER, "full": FIG6_FULL, "ci": LambdaGrid((0.1, 1.0, 10.0), (1, 3), (1,))}[scale]
    t0 = min(grid.T_small)
    reps = []
    for lam in grid.lams:
        controls: list[tuple[str, str, int, str | None]] = []
        if lam == grid.lam_default:
            controls.append((f"FPP, gradient zeroed (fpp.learner-frozen), lambda = {lam:g}, T = {grid.T_large}", "fpp",
                             grid.T_large, "fpp.learner-frozen"))  # fmt: skip
        if lam in (min(grid.lams), max(grid.lams)):
            # a learner that learns nothing: no state update and its gradient zeroed. FPP with only its parameter
            # gradient zeroed is no control here: it still learns its states -- the "propagation of state values"
            # the paper credits -- and reproduced the lambda effect at T = 1 in the first reduced run
            controls.append((f"FPP without state update, gradient zeroed (learns nothing), lambda = {lam:g}, T = {t0}",
                             "fpp-no-state-update", t0, "fpp.learner-frozen"))  # fmt: skip
        reps.append(
            Reproduction(
                f"fpp.fig6 lambda={lam:g}", scale, "stochasticworld", tuple(("fpp", T) for T in grid.Ts), lrs,
                steps, runs, seed, controls=tuple(controls), common={**common, "buffer_size": 100, "lam": lam},
                split_lrs=split_lrs,
            )
        )  # fmt: skip
    return grid, reps
