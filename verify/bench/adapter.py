"""Benchmark the batch-1 adapter (:class:`verify.impl.adapters.Batch1`): what a user's numpy estimator costs per
sample-step under the catalog, against baselines measured in the same run.

``python -m verify.bench.adapter [--n 4] [--T 16] [--samples 500] [--repeats 3]``

Three numbers per sample-step (µs, median over ``--repeats`` runs of ``samples`` × T sample-steps):

(a) the numpy UORO of :mod:`verify.examples.numpy_uoro` stepped directly in a Python loop (the user's own cost);
(b) the same through the adapter (``run_estimator``: θ mapping, numpy <-> torch, the noise hook);
(c) the toolkit's vectorized UORO (:class:`verify.estimators.UORO`, all samples in one batched step).

Printed: (b)/(a) -- the adapter's overhead, target ≤ 1.5 -- and (b)/(c) -- what a batch-1 implementation costs
relative to a vectorized one (the statistical claims draw 10⁵–10⁶ sample-steps: ``rnn-verify run --plan``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from verify.bench._timing import machine, median_us
from verify.estimators import UORO
from verify.estimators.base import run_estimator
from verify.examples.numpy_uoro import MyNumpyUORO, NumpyUORO
from verify.model.builders import random_problem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--T", type=int, default=16)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    P, th = random_problem("elman-tanh", n=a.n, d=2, T=a.T, k=2, generator=torch.Generator().manual_seed(0))
    flat = P.layout.unflatten(th, "")
    p = {k: flat[t].numpy() for k, t in (("Wx", "cell.U"), ("Wh", "cell.W"), ("bh", "cell.b"), ("Wy", "readout.V"))}
    p["by"] = flat["readout.c"].numpy()
    xs, ys = P.inputs.numpy(), P.targets.numpy()
    steps = a.samples * a.T

    def direct() -> None:
        for m in range(a.samples):
            est = NumpyUORO(p["Wx"], p["Wh"], p["bh"], p["Wy"], p["by"], h0=P.s0.numpy(), rng=np.random.default_rng(m))  # type: ignore[no-untyped-call]
            for t in range(a.T):
                est.step(xs[t], ys[t])  # type: ignore[no-untyped-call]

    def adapted() -> None:
        run_estimator(MyNumpyUORO, P, th, torch.Generator().manual_seed(0), samples=a.samples)

    def vectorized() -> None:
        run_estimator(UORO(), P, th, torch.Generator().manual_seed(0), samples=a.samples)

    us = {
        name: median_us(fn, a.repeats, steps)
        for name, fn in (("direct", direct), ("adapter", adapted), ("toolkit", vectorized))
    }
    print(f"machine: {machine()}; elman-tanh n={a.n}, T={a.T}, {a.samples} samples, median of {a.repeats}")
    print(f"(a) numpy UORO, direct loop:       {us['direct']:8.1f} us per sample-step")
    print(f"(b) through the Batch1 adapter:    {us['adapter']:8.1f} us per sample-step")
    print(f"(c) toolkit UORO, vectorized:      {us['toolkit']:8.2f} us per sample-step")
    print(f"adapter overhead (b)/(a) = {us['adapter'] / us['direct']:.2f} (target <= 1.5)")
    print(f"batch-1 vs vectorized (b)/(c) = {us['adapter'] / us['toolkit']:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
