"""Benchmark the JAX route (:class:`verify.impl.jax_route.JaxStep`): the M samples in one ``jax.vmap`` under
``jax.jit`` against the per-sample loop of eager calls the adapter falls back to when a step cannot be traced.

``python -m verify.bench.jax_route [--n 4] [--T 8] [--samples 64] [--repeats 2]``

The JAX UORO of :mod:`verify.examples.jax_uoro` (``JaxUORO``, and the same functions with ``vmap=False``) run
through ``run_estimator`` over ``samples`` × T sample-steps; printed: µs per sample-step for both (median over
``--repeats`` runs after one warm-up run, which compiles) and their ratio, measured in the same run, and that the
two give the same estimates (same noise, so equal up to round-off).
"""

from __future__ import annotations

import json

import torch

from verify.bench._timing import machine, median_us, route_args
from verify.estimators.base import run_estimator
from verify.files import write_file_atomic
from verify.model.builders import random_problem

TOOL = "verify.bench.jax_route"


def main(argv: list[str] | None = None) -> int:
    a = route_args(__doc__, TOOL, 64, argv)
    from verify.examples.jax_uoro import NAMES, uoro_init, uoro_step  # jax: an optional extra
    from verify.impl.jax_route import JaxStep

    torch.set_num_threads(1)
    P, th = random_problem("elman-tanh", n=a.n, d=2, T=a.T, k=2, generator=torch.Generator().manual_seed(0))
    kw = {"names": NAMES, "state": lambda c: c["h"], "noise_hook": True, "gtilde": "pre"}
    vec = JaxStep(uoro_init, uoro_step, name="jax-uoro", **kw)  # type: ignore[arg-type]
    loop = JaxStep(uoro_init, uoro_step, name="jax-uoro", vmap=False, **kw)  # type: ignore[arg-type]
    steps = a.samples * a.T
    out = {}

    def run(est: JaxStep) -> None:
        out[est.vectorized] = run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=a.samples)

    us_vec = median_us(lambda: run(vec), a.repeats, steps)
    us_loop = median_us(lambda: run(loop), a.repeats, steps)
    diff = float((out[True] - out[False]).abs().max())
    print(f"machine: {machine()}")
    print(f"JAX UORO, elman-tanh n={a.n}, T={a.T}, M={a.samples} samples ({steps} sample-steps)")
    print(f"  {vec.name}: {us_vec:.2f} us per sample-step")
    print(f"  {loop.name}: {us_loop:.2f} us per sample-step")
    print(f"  ratio loop / vmap: {us_loop / us_vec:.1f}x; max |difference| of the estimates: {diff:.1e}")
    if a.json is not None:
        doc = {
            "tool": TOOL, "machine": machine(), "n": a.n, "T": a.T, "samples": a.samples, "repeats": a.repeats,
            "us_per_sample_step": {"vmap": us_vec, "loop": us_loop}, "ratio": us_loop / us_vec, "max_difference": diff,
        }  # fmt: skip
        write_file_atomic(a.json, (json.dumps(doc, indent=1) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
