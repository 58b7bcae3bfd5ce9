"""Benchmark the online estimators: three ratios, each measured against its baseline in the same run.

``python -m verify.bench.estimators [--n 64] [--n-rtrl 32] [--samples 1000] [--repeats 5]``

(a) UORO step (Algorithm 1, M = 1) / one forward + backprop step of the same
    model (the work of TBPTT with k = 1), Elman-tanh at n = 64: target ≤ 3
    (UORO paper: "as costly as TBPTT");
(b) M = 1000 UORO samples in one vectorized step / a Python loop over 1000
    single-sample steps: target speed-up ≥ 20;
(c) RTRL step (one reverse pass for the one-step Jacobians + a batched product,
    O(n²p)) / a naive RTRL that builds the full Jacobian of the step w.r.t.
    z = (s, θ) with ``torch.func.jacrev`` every step and multiplies it with the
    stacked [∂s/∂θ; I_p] (O(n(n+p)p)), at n = 32 (reported, no target).

Every number is a median per step over ``--repeats`` timed passes after a warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.func import jacrev

from verify.bench._timing import machine
from verify.estimators import RTRL, UORO
from verify.model.builders import random_problem
from verify.model.problem import Problem


def _per_step(fn: Callable[[int], object], steps: int, repeats: int) -> float:
    """Median seconds per call of ``fn(t)`` for t = 1..steps, over ``repeats`` passes (after one warm-up pass)."""
    for t in range(1, min(steps, 3) + 1):
        fn(t)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for t in range(1, steps + 1):
            fn(t)
        times.append((time.perf_counter() - t0) / steps)
    return statistics.median(times)


def bench_uoro_vs_backprop(P: Problem, theta: torch.Tensor, steps: int, repeats: int) -> tuple[float, float]:
    """(a): seconds per UORO step (M = 1) and per forward+backprop step."""
    est, rng = UORO(), torch.Generator().manual_seed(0)
    holder = {"state": est.init(P, theta, rng)}
    states = P.rollout(theta).detach()

    def uoro(t: int) -> None:
        if t == 1:
            holder["state"] = est.init(P, theta, rng)
        holder["state"], _ = est.step(P, theta, holder["state"], t, rng)

    def backprop(t: int) -> None:
        th = theta.detach().requires_grad_(True)
        with torch.enable_grad():
            s = P.transition(th, states[t - 1], P.inputs[t - 1])
            loss = P.step_loss(th, s, P.targets[t - 1])
            torch.autograd.grad(loss, th)

    return _per_step(uoro, steps, repeats), _per_step(backprop, steps, repeats)


def bench_vectorized(P: Problem, theta: torch.Tensor, samples: int, steps: int, repeats: int) -> tuple[float, float]:
    """(b): seconds per step for M samples in one pass, and for a loop over M single-sample states."""
    est = UORO()
    rng = torch.Generator().manual_seed(0)
    batched = {"state": est.init(P, theta, rng, samples=samples)}
    singles = {"states": [est.init(P, theta, rng) for _ in range(samples)]}

    def vec(t: int) -> None:
        if t == 1:
            batched["state"] = est.init(P, theta, rng, samples=samples)
        batched["state"], _ = est.step(P, theta, batched["state"], t, rng)

    def loop(t: int) -> None:
        if t == 1:
            singles["states"] = [est.init(P, theta, rng) for _ in range(samples)]
        singles["states"] = [est.step(P, theta, s, t, rng)[0] for s in singles["states"]]

    return _per_step(vec, steps, repeats), _per_step(loop, steps, max(1, repeats // 2))


def naive_rtrl_step(
    P: Problem, theta: torch.Tensor, s: torch.Tensor, J: torch.Tensor, t: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Naive RTRL: full Jacobian of z = (s, θ) ↦ s' by ``jacrev``, times [J; I_p] (unbatched problems)."""
    n, p = P.n, P.p
    x = P.inputs[t - 1]

    def F(z: torch.Tensor) -> torch.Tensor:
        return P.transition(z[n:], z[:n], x)

    z = torch.cat([s, theta])
    Jz = jacrev(F)(z)  # (n, n + p)
    J_new = Jz @ torch.cat([J, torch.eye(p, dtype=J.dtype)])  # eq. (4) as one (n, n+p) @ (n+p, p) product
    return F(z).detach(), J_new


def bench_rtrl(P: Problem, theta: torch.Tensor, steps: int, repeats: int) -> tuple[float, float, float]:
    """(c): seconds per RTRL step and per naive step, and their final influence matrices' relative difference."""
    est, rng = RTRL(), torch.Generator()
    holder = {"state": est.init(P, theta, rng)}
    naive = {"s": P.s0.clone(), "J": torch.zeros(P.n, P.p, dtype=P.dtype)}

    def fast(t: int) -> None:
        if t == 1:
            holder["state"] = est.init(P, theta, rng)
        holder["state"], _ = est.step(P, theta, holder["state"], t, rng)

    def slow(t: int) -> None:
        if t == 1:
            naive["s"], naive["J"] = P.s0.clone(), torch.zeros(P.n, P.p, dtype=P.dtype)
        naive["s"], naive["J"] = naive_rtrl_step(P, theta, naive["s"], naive["J"], t)

    t_fast = _per_step(fast, steps, repeats)
    t_slow = _per_step(slow, steps, repeats)
    J_fast = holder["state"].influence[0]
    diff = float(torch.linalg.vector_norm(J_fast - naive["J"]) / torch.linalg.vector_norm(naive["J"]))
    return t_fast, t_slow, diff


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64, help="state size for (a) (default 64)")
    ap.add_argument("--n-vec", type=int, default=16, help="state size for (b) (default 16)")
    ap.add_argument("--n-rtrl", type=int, default=32, help="state size for (c) (default 32)")
    ap.add_argument("--samples", type=int, default=1000, help="M for (b) (default 1000)")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed pass (default 20)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    gen = torch.Generator().manual_seed(0)
    print(f"machine: {machine()}")
    out: dict[str, float] = {}

    P, th = random_problem("elman-tanh", n=args.n, d=8, T=args.steps, k=4, generator=gen)
    t_u, t_b = bench_uoro_vs_backprop(P, th, args.steps, args.repeats)
    out["uoro_over_backprop"] = t_u / t_b
    print(f"(a) {P.describe()}")
    print(f"    UORO step (M=1)            : {t_u * 1e3:8.3f} ms")
    print(f"    forward + backprop step    : {t_b * 1e3:8.3f} ms")
    print(f"    ratio UORO / backprop      : {t_u / t_b:8.2f}   (target <= 3)")

    P, th = random_problem("elman-tanh", n=args.n_vec, d=4, T=3, k=2, generator=gen)
    t_v, t_l = bench_vectorized(P, th, args.samples, 3, args.repeats)
    out["vectorized_speedup"] = t_l / t_v
    print(f"(b) {P.describe()}, M={args.samples}")
    print(f"    M samples, one pass        : {t_v * 1e3:8.2f} ms per step")
    print(f"    loop over M single samples : {t_l * 1e3:8.2f} ms per step")
    print(f"    speed-up                   : {t_l / t_v:8.1f}   (target >= 20)")

    P, th = random_problem("elman-tanh", n=args.n_rtrl, d=4, T=args.steps, k=2, generator=gen)
    t_f, t_s, diff = bench_rtrl(P, th, args.steps, args.repeats)
    out["rtrl_speedup"] = t_s / t_f
    print(f"(c) {P.describe()}")
    print(f"    RTRL step (O(n^2 p))       : {t_f * 1e3:8.3f} ms")
    print(f"    naive jacrev RTRL step     : {t_s * 1e3:8.3f} ms   (influence matrices agree to {diff:.1e})")
    print(f"    speed-up                   : {t_s / t_f:8.1f}")
    return out


if __name__ == "__main__":
    main()
