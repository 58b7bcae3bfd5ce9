"""Benchmark: the reference BPTT gradient vs a plain autograd forward+backward.

``python -m verify.bench.reference [--T 10000] [--n 64] [--repeats 3]``

Measures :func:`verify.oracles.bptt.bptt_gradient` on an Elman-tanh problem
(squared-error readout, T = 10⁴, n = 64 by default) and, in the same run, a
hand-written autograd loop of the same model (the plain forward and backward a
user would write). Prints both times and the ratio (target ≤ 1.5).
"""

from __future__ import annotations

import argparse

import torch

from verify.bench._timing import best_of, machine
from verify.model.builders import random_problem
from verify.oracles.bptt import bptt_gradient


def main(argv: list[str] | None = None) -> float:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    gen = torch.Generator().manual_seed(0)
    P, theta = random_problem("elman-tanh", n=args.n, d=args.d, T=args.T, k=4, generator=gen)
    lay = P.layout
    W0, U0, b0 = (theta[lay[f"cell.{k}"].slice].reshape(lay[f"cell.{k}"].shape).clone() for k in ("W", "U", "b"))
    V0, c0 = (theta[lay[f"readout.{k}"].slice].reshape(lay[f"readout.{k}"].shape).clone() for k in ("V", "c"))

    def plain() -> None:
        W, U, b, V, c = (t.clone().requires_grad_(True) for t in (W0, U0, b0, V0, c0))
        s = P.s0
        loss = torch.zeros((), dtype=torch.float64)
        for t in range(P.T):
            s = torch.tanh(W @ s + U @ P.inputs[t] + b)
            r = V @ s + c - P.targets[t]
            loss = loss + 0.5 * (r * r).sum()
        torch.autograd.grad(loss, (W, U, b, V, c))

    t_ref = best_of(lambda: bptt_gradient(P, theta), repeats=args.repeats)
    t_plain = best_of(plain, repeats=args.repeats)
    ratio = t_ref / t_plain
    print(f"machine: {machine()}")
    print(f"problem: {P.describe()}")
    print(f"reference bptt_gradient : {t_ref * 1e3:9.1f} ms")
    print(f"plain autograd loop     : {t_plain * 1e3:9.1f} ms")
    print(f"ratio reference/plain   : {ratio:9.2f}   (target <= 1.5)")
    return ratio


if __name__ == "__main__":
    main()
