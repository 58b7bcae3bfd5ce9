"""The built-in sweep tasks (registered by name; a worker looks them up, see :mod:`verify.sweep.cells`).

* ``claim`` -- one catalog claim's check at one (profile, seed, options, device,
  dtype): returns the :class:`~verify.results.CheckResult` as a dict. Calibration
  sweeps and ``rnn-verify run --executor`` are made of these.
* ``fpp.online-block`` -- one block of an FPP §5 reproduction
  (:func:`verify.fpp.reproduction.run_block`).
* ``sweep.selftest`` -- a small deterministic torch computation that takes
  ``sleep`` seconds: exercises the sweep machinery (faults, cache, resume) in the
  tests without the cost of a real check. ``fail: true`` makes it raise.
"""

from __future__ import annotations

import time
from typing import Any

from verify.errors import InvalidArgument
from verify.sweep.cells import task

__all__ = ["claim_task", "fpp_online_block", "selftest"]


@task("claim")
def claim_task(params: dict[str, Any]) -> dict[str, Any]:
    """``{"claim", "profile", "seed", "options"?, "device"?, "dtype"?}`` -> the check's result as a dict."""
    from theory.catalog import all_claims
    from verify.results import RunConfig
    from verify.runner import run_check

    claims = all_claims()
    cid = params.get("claim")
    if cid not in claims:
        raise InvalidArgument("claim", cid, "not a catalog claim id")
    options = tuple(sorted((str(k), v) for k, v in dict(params.get("options") or {}).items()))
    config = RunConfig(
        profile=str(params.get("profile", "ci")),
        seed=int(params.get("seed", 0)),
        device=str(params.get("device", "cpu")),
        dtype=str(params.get("dtype", "float64")),
        options=options,
    )
    return run_check(claims[str(cid)], config).to_dict()


@task("fpp.online-block")
def fpp_online_block(params: dict[str, Any]) -> dict[str, Any]:
    """One block (R paired runs of one learner at one T and lr) of an FPP §5 reproduction."""
    from verify.fpp.reproduction import Block, run_block

    return run_block(Block.from_params(params))


@task("sweep.selftest")
def selftest(params: dict[str, Any]) -> dict[str, Any]:
    """``{"seed", "size"?, "sleep"?, "fail"?}`` -> a deterministic function of the seed (a small torch solve)."""
    import torch

    seed = int(params["seed"])
    size = int(params.get("size", 8))
    time.sleep(float(params.get("sleep", 0.0)))
    if params.get("fail"):
        raise RuntimeError(f"selftest cell {seed} was asked to fail")
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(size, size, generator=g, dtype=torch.float64)
    x = torch.linalg.solve(A @ A.T + size * torch.eye(size, dtype=torch.float64), torch.ones(size, dtype=torch.float64))
    return {"seed": seed, "norm": float(torch.linalg.vector_norm(x)), "sum": float(x.sum())}
