"""Benchmark the torch route (:class:`verify.impl.torch_route.TorchStep`): the M samples in one ``torch.func.vmap``
against the per-sample loop of eager calls the adapter falls back to when a step cannot be traced, and the
toolkit's own vectorized UORO (:class:`verify.estimators.UORO`) for scale.

``python -m verify.bench.torch_route [--n 4] [--T 8] [--samples 256] [--repeats 2]``

The torch UORO of :mod:`verify.examples.torch_uoro` (``TorchUORO``, and the same functions with ``vmap=False``)
run through ``run_estimator`` over ``samples`` × T sample-steps; printed: µs per sample-step for each (median over
``--repeats`` runs after one warm-up run), the ratios, measured in the same run, and that vmap and the loop give
the same estimates (same noise, so equal up to round-off).
"""

from __future__ import annotations

import json

import torch

from verify.bench._timing import machine, median_us, route_args
from verify.estimators.base import run_estimator
from verify.estimators.uoro import UORO
from verify.files import write_file_atomic
from verify.model.builders import random_problem

TOOL = "verify.bench.torch_route"


def main(argv: list[str] | None = None) -> int:
    a = route_args(__doc__, TOOL, 256, argv)
    from verify.examples.torch_uoro import NAMES, uoro_init, uoro_step
    from verify.impl.torch_route import TorchStep

    torch.set_num_threads(1)
    P, th = random_problem("elman-tanh", n=a.n, d=2, T=a.T, k=2, generator=torch.Generator().manual_seed(0))
    kw = {"names": NAMES, "state": lambda c: c["h"], "noise_hook": True, "gtilde": "pre"}
    vec = TorchStep(uoro_init, uoro_step, name="torch-uoro", **kw)  # type: ignore[arg-type]
    loop = TorchStep(uoro_init, uoro_step, name="torch-uoro", vmap=False, **kw)  # type: ignore[arg-type]
    own = UORO()
    steps = a.samples * a.T
    out: dict[str, torch.Tensor] = {}

    def run(key: str, est: object) -> None:
        out[key] = run_estimator(est, P, th, torch.Generator().manual_seed(0), samples=a.samples)  # type: ignore[arg-type]

    us = {key: median_us(lambda k=key, e=est: run(k, e), a.repeats, steps)
          for key, est in (("vmap", vec), ("loop", loop), ("toolkit", own))}  # fmt: skip
    diff = float((out["vmap"] - out["loop"]).abs().max())
    print(f"machine: {machine()}")
    print(f"torch UORO, elman-tanh n={a.n}, T={a.T}, M={a.samples} samples ({steps} sample-steps)")
    print(f"  {vec.name}: {us['vmap']:.2f} us per sample-step")
    print(f"  {loop.name}: {us['loop']:.2f} us per sample-step")
    print(f"  the toolkit's UORO (verify.estimators.UORO): {us['toolkit']:.2f} us per sample-step")
    print(
        f"  ratio loop / vmap: {us['loop'] / us['vmap']:.1f}x; vmap / the toolkit's: {us['vmap'] / us['toolkit']:.1f}x"
    )
    print(f"  max |difference| of the vmap and loop estimates: {diff:.1e}")
    if a.json is not None:
        doc = {
            "tool": TOOL, "machine": machine(), "n": a.n, "T": a.T, "samples": a.samples, "repeats": a.repeats,
            "us_per_sample_step": us, "ratio_loop_vmap": us["loop"] / us["vmap"],
            "ratio_vmap_toolkit": us["vmap"] / us["toolkit"], "max_difference": diff,
        }  # fmt: skip
        write_file_atomic(a.json, (json.dumps(doc, indent=1) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
