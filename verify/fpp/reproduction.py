r"""Small reproductions of FPP §5: CycleWorld (Fig. 2) and Stochastic World (Fig. 3(b)).

Paper: ``fpp-explicit-state-variables.md`` §5 and App. D. Every method sees the
same streams and the same initial weights (paired seeds); runs and learning
rates are vectorised into one pass per (method, T).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from scipy import stats

from verify.cells import ElmanCell
from verify.fpp._fit import mean_ci
from verify.fpp.envs import cycle_world, cycle_world_baseline, stochastic_world, stochastic_world_reference_losses
from verify.fpp.online import OnlineConfig, model_problem, run_online
from verify.losses import LinearReadout, SoftmaxCrossEntropy, SquaredError

__all__ = ["cycleworld_reproduction", "stochasticworld_reproduction"]


def _runs(
    method: str,
    model: Any,
    cfg: OnlineConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    theta0: torch.Tensor,
    lrs: Sequence[float],
    generator: torch.Generator,
) -> torch.Tensor:
    """Online losses for every (lr, run): shape (len(lrs), runs, steps)."""
    R = inputs.shape[0]
    L = len(lrs)
    lr_col = torch.tensor(list(lrs), dtype=torch.float64).repeat_interleave(R)
    losses = run_online(
        method, model, cfg, inputs.repeat(L, 1, 1), targets.repeat(L, 1, 1), theta0.repeat(L, 1), lr_col, generator
    )
    return losses.reshape(L, R, -1)


def _curve(losses: torch.Tensor, bins: int = 60) -> dict[str, list[float]]:
    """Learning curve for the report: mean over runs (dim 0) of ``losses`` (runs, steps) in ``bins`` windows."""
    steps = losses.shape[-1]
    edges = torch.linspace(0, steps, min(bins, steps) + 1).round().long().tolist()
    mean = losses.mean(0)
    pairs = [(a, b) for a, b in pairwise(edges) if b > a]
    return {"step": [(a + b + 1) / 2 for a, b in pairs], "mean": [float(mean[a:b].mean()) for a, b in pairs]}


def cycleworld_reproduction(
    *,
    p: int,
    steps: int,
    runs: int,
    lrs: Sequence[float],
    generator: torch.Generator,
    methods: Sequence[str] = ("fpp", "tbptt"),
    hidden: int = 4,
    buffer_size: int = 100,
    lam: float = 1.0,
) -> dict[str, Any]:
    r"""FPP vs T-BPTT on CycleWorld(p) for T ∈ {p/2, p}: online error ratio to predict-zero (Fig. 2).

    For each method and T the learning rate with the lowest mean ratio over the
    runs is reported (App. D chooses the step from a grid by average performance);
    ``final`` is the ratio over the last fifth of the steps.
    """
    model = model_problem(ElmanCell(hidden, 1, "tanh"), LinearReadout(hidden, 1), SquaredError())
    stream = cycle_world(p, steps, runs, generator)
    theta0 = torch.stack([model.init_theta(generator) for _ in range(runs)])
    base = cycle_world_baseline(p)
    zero_ratio = float((0.5 * stream.targets**2).mean() / base)
    results: dict[str, Any] = {}
    per_run: dict[tuple[str, int], np.ndarray] = {}
    for method in methods:
        for T in sorted({max(1, p // 2), p}):
            cfg = OnlineConfig(T=T, buffer_size=buffer_size, lam=lam)
            L = _runs(method, model, cfg, stream.inputs, stream.targets, theta0, lrs, generator)
            ratio = (L.mean(-1) / base).numpy()  # (lrs, runs)
            final = (L[..., -max(1, steps // 5) :].mean(-1) / base).numpy()
            best = int(np.argmin(ratio.mean(1)))
            m, lo, hi = mean_ci(ratio[best])
            fm, flo, fhi = mean_ci(final[best])
            per_run[(method, T)] = ratio[best]
            results[f"{method}/T={T}"] = {
                "method": method,
                "T": T,
                "lr": float(lrs[best]),
                "ratio_mean": m,
                "ratio_ci": [lo, hi],
                "final_mean": fm,
                "final_ci": [flo, fhi],
                "ratio_by_lr": {str(lr): float(ratio[j].mean()) for j, lr in enumerate(lrs)},
                "ratio_runs": ratio[best].tolist(),
                "curve": _curve(L[best] / base),  # report figure (Fig. 2's learning curves)
            }
    half = max(1, p // 2)
    comparison: dict[str, Any] = {}
    if ("fpp", half) in per_run and ("tbptt", half) in per_run:
        a, b = per_run[("fpp", half)], per_run[("tbptt", half)]
        test = stats.ttest_ind(a, b, equal_var=False, alternative="less") if runs > 1 else None
        comparison = {
            "T": half,
            "fpp_mean": float(a.mean()),
            "tbptt_mean": float(b.mean()),
            "difference": float(a.mean() - b.mean()),
            "welch_p_one_sided": None if test is None else float(test.pvalue),
            "fpp_beats_tbptt": bool(a.mean() < b.mean() and test is not None and test.pvalue < 0.05),
        }
    return {
        "p": p,
        "steps": steps,
        "runs": runs,
        "lrs": list(lrs),
        "hidden": hidden,
        "buffer_size": buffer_size,
        "lambda": lam,
        "predict_zero_ratio": zero_ratio,
        "results": results,
        "comparison_half": comparison,
    }


def stochasticworld_reproduction(
    *,
    steps: int,
    runs: int,
    lr: float,
    Ts: Sequence[int],
    generator: torch.Generator,
    methods: Sequence[str] = ("fpp", "tbptt"),
    hidden: int = 32,
    buffer_size: int = 100,
    lam: float = 1.0,
) -> dict[str, Any]:
    """Online FPP and T-BPTT on Stochastic World; the cross-entropy over the last fifth of the steps per run."""
    model = model_problem(ElmanCell(hidden, 1, "tanh"), LinearReadout(hidden, 2), SoftmaxCrossEntropy())
    stream = stochastic_world(steps, runs, generator)
    onehot = torch.nn.functional.one_hot(stream.targets, 2).to(torch.float64)
    theta0 = torch.stack([model.init_theta(generator) for _ in range(runs)])
    refs = stochastic_world_reference_losses()
    out: dict[str, Any] = {}
    for method in methods:
        for T in Ts:
            cfg = OnlineConfig(T=T, buffer_size=buffer_size, lam=lam)
            L = _runs(method, model, cfg, stream.inputs, onehot, theta0, [lr], generator)[0]
            window = L[:, -max(1, steps // 5) :].mean(-1).numpy()
            m, lo, hi = mean_ci(window)
            out[f"{method}/T={T}"] = {
                "method": method,
                "T": T,
                "final_ce_mean": m,
                "final_ce_ci": [lo, hi],
                "online_ce_mean": float(L.mean()),
                "final_ce_runs": window.tolist(),
                "curve": _curve(L),  # report figure (Fig. 3(b)'s learning curves)
            }
    return {"steps": steps, "runs": runs, "lr": lr, "hidden": hidden, "references": refs, "results": out}
