"""The built-in sweep tasks (:data:`BUILTIN_TASKS`, by name; a worker looks them up, see :mod:`verify.run.sweep.cells`).

* ``claim`` -- one catalog claim's check at one (profile, seed, options, device,
  dtype): returns the :class:`~verify.verdict.CheckResult` as a dict. Calibration
  sweeps and ``rnn-verify run --executor`` are made of these.
* ``impl.load`` -- the load check of a user's ``--impl`` specs (:func:`load_impls_task`), and ``run.plan`` --
  ``run --plan``'s pilots (:func:`plan_task`): both run a user's code, so both run in an isolated worker
  (:mod:`verify.run.pool`), never in the process that decides the exit status.
* ``fpp.online-block`` -- one block of an FPP §5 reproduction
  (:func:`verify.fpp.reproduction.run_block`).
* ``uoro.char-run`` -- one online run of UORO §4's character-level experiments
  (:func:`verify.uoro.char_learning.run_char_learner`).
* ``uoro.ib-truncation-run`` -- one run of UORO §4's influence balancing learned by block TBPTT-k
  (:func:`verify.uoro.influence_truncation.block_tbptt_run`).
* ``rtrl.rflo-periodic-run`` -- one period of Murray 2019 Fig. 2's periodic output task, every learner and
  realization (:func:`verify.rtrl.rflo_periodic.run_period`).
* ``rtrl.marschall-add-run`` -- one (realization, learning rate) of Marschall et al. 2020's Add task, every learner
  (:func:`verify.rtrl.marschall_add.run_cell`); ``rtrl.marschall-mimic-run`` -- the same on the Mimic task
  (:func:`verify.rtrl.marschall_mimic.run_cell`).
* ``rtrl.sec7-run`` -- one run of the RTRL convergence paper's §7.1-7.2 sweeps
  (:func:`verify.rtrl.sec7.run_cell`).
* ``sweep.selftest`` -- a small deterministic torch computation that takes
  ``sleep`` seconds: exercises the sweep machinery (faults, cache, resume) in the
  tests without the cost of a real check. ``fail: true`` makes it raise.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.errors import InvalidArgument, VerifyError
from verify.estimators.base import OnlineEstimator
from verify.fpp.reproduction import Block, run_block
from verify.impl import Implementations
from verify.impl.loader import load_implementations
from verify.impl.mutants import get as get_mutant
from verify.rtrl.marschall_add import run_cell as marschall_add_cell
from verify.rtrl.marschall_mimic import run_cell as marschall_mimic_cell
from verify.rtrl.rflo_periodic import run_period
from verify.rtrl.sec7 import Run, run_cell
from verify.run.check import implementations_from_params, run_check
from verify.run.plan import plan_claims
from verify.uoro.char_learning import CharLearnerSpec, run_char_learner
from verify.uoro.influence_truncation import block_tbptt_run

__all__ = [
    "BUILTIN_TASKS",
    "claim_task",
    "config_from_params",
    "fpp_online_block",
    "load_impls_task",
    "plan_task",
    "rtrl_marschall_add_run",
    "rtrl_rflo_periodic_run",
    "rtrl_sec7_run",
    "sec7_learner",
    "selftest",
    "uoro_char_run",
    "uoro_ib_truncation_run",
]


def config_from_params(params: dict[str, Any]) -> RunConfig:
    """The :class:`RunConfig` that :func:`~verify.run.check.claim_params` sent (profile, seed, device, dtype,
    options, and a user's implementations loaded in this process)."""
    options = tuple(sorted((str(k), v) for k, v in dict(params.get("options") or {}).items()))
    block = params.get("impls")  # a user's implementations, as the run's supervisor had them loaded
    return RunConfig(
        profile=str(params.get("profile", "ci")),
        seed=int(params.get("seed", 0)),
        device=str(params.get("device", "cpu")),
        dtype=str(params.get("dtype", "float64")),
        options=options,
        implementations=implementations_from_params(block) if block else None,
        impl_specs=tuple(block["specs"]) if block else (),
    )


def load_impls_task(params: dict[str, Any]) -> dict[str, Any]:
    """``{"specs", "root", "path"}`` -> the load check of a user's ``--impl`` specs, run in a worker process.

    ``{"sources": [...], "user_parts": [...]}`` when they load and pass the estimator contract
    (:func:`verify.impl.loader.load_implementations` with its validation probe), ``{"error": MESSAGE}`` (the
    supervisor exits 2 with it) when they do not.
    """
    for entry in params.get("path") or []:
        if entry not in sys.path:
            sys.path.append(entry)
    try:
        impls = load_implementations(list(params["specs"]), root=params.get("root"))
    except VerifyError as exc:
        return {"error": str(exc)}
    return {"sources": [s.as_dict() for s in impls.sources], "user_parts": list(impls.user_parts())}


def plan_task(params: dict[str, Any]) -> dict[str, Any]:
    """``claim_params``' fields plus ``{"claims": [ids], "skip": {id: reason}}`` -> ``{"plans": [...]}``:
    ``run --plan`` of a user's implementation, whose pilots run here, not in the supervisor."""
    claims = all_claims()
    chosen = [claims[str(c)] for c in params["claims"]]
    plans = plan_claims(chosen, config_from_params(params), dict(params.get("skip") or {}))
    return {"plans": [dataclasses.asdict(p) for p in plans]}


def claim_task(params: dict[str, Any]) -> dict[str, Any]:
    """``{"claim", "profile", "seed", "options"?, "device"?, "dtype"?, "impls"?}`` -> the check's result as a dict.

    ``impls``: a user's implementations as :func:`~verify.run.check.claim_params` sent them, loaded once per
    worker process (:func:`~verify.run.check.implementations_from_params`).
    """
    claims = all_claims()
    cid = params.get("claim")
    if cid not in claims:
        raise InvalidArgument("claim", cid, "not a catalog claim id")
    config = config_from_params(params)
    return run_check(claims[str(cid)], config).to_dict()


def fpp_online_block(params: dict[str, Any]) -> dict[str, Any]:
    """One block (R paired runs of one learner at one T and lr) of an FPP §5 reproduction."""
    return run_block(Block.from_params(params))


def uoro_char_run(params: dict[str, Any]) -> dict[str, Any]:
    """One online run (UORO or TBPTT-T, GRU or LSTM) on UORO §4's distant brackets or aⁿbⁿ."""
    return run_char_learner(CharLearnerSpec.from_params(params))


def uoro_ib_truncation_run(params: dict[str, Any]) -> dict[str, Any]:
    """``{"n", "p", "k", "eta", "steps", "window", "factor"}`` -> one block TBPTT-k run on influence balancing."""
    return block_tbptt_run(int(params["n"]), int(params["p"]), int(params["k"]), float(params["eta"]),
                           int(params["steps"]), float(params["window"]), float(params["factor"]))  # fmt: skip


def sec7_learner(run: Run) -> OnlineEstimator:
    """The learners of the §7 sweeps: the toolkit's RTRL (UORO eq. (4)) and online TBPTT(k); ``broken-rtrl``, the
    negative control, is RTRL without dF/dtheta (mutant ``rtrl.no-immediate-term``)."""
    impls = Implementations()
    if run.learner == "rtrl":
        return impls.rtrl.rtrl()  # type: ignore[no-any-return]
    if run.learner == "tbptt":
        return impls.truncation.tbptt(run.k)  # type: ignore[no-any-return]
    return get_mutant("rtrl.no-immediate-term").impl.rtrl()  # type: ignore[no-any-return]


def rtrl_rflo_periodic_run(params: dict[str, Any]) -> dict[str, Any]:
    """``{"period", "scale", "seed"}`` -> one period of Murray 2019 Fig. 2 (every learner and realization)."""
    return run_period(int(params["period"]), str(params["scale"]), int(params["seed"]))


def rtrl_marschall_add_run(params: dict[str, Any]) -> dict[str, Any]:
    """``{"realization", "lr", "scale", "seed"}`` -> every learner on one realization of the Add task at one lr."""
    return marschall_add_cell(str(params["scale"]), int(params["realization"]), float(params["lr"]),
                              int(params["seed"]))  # fmt: skip


def rtrl_marschall_mimic_run(params: dict[str, Any]) -> dict[str, Any]:
    """``{"realization", "lr", "scale", "seed"}`` -> every learner on one realization of the Mimic task at one lr."""
    return marschall_mimic_cell(str(params["scale"]), int(params["realization"]), float(params["lr"]),
                                int(params["seed"]))  # fmt: skip


def rtrl_sec7_run(params: dict[str, Any]) -> dict[str, Any]:
    """One run (learner, eta0, schedule, k, seed) of the RTRL convergence paper's §7.1-7.2 sweeps."""
    return run_cell(Run.from_params(params), sec7_learner)


def selftest(params: dict[str, Any]) -> dict[str, Any]:
    """``{"seed", "size"?, "sleep"?, "fail"?}`` -> a deterministic function of the seed (a small torch solve)."""
    seed = int(params["seed"])
    size = int(params.get("size", 8))
    time.sleep(float(params.get("sleep", 0.0)))
    if params.get("fail"):
        raise RuntimeError(f"selftest cell {seed} was asked to fail")
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(size, size, generator=g, dtype=torch.float64)
    x = torch.linalg.solve(A @ A.T + size * torch.eye(size, dtype=torch.float64), torch.ones(size, dtype=torch.float64))
    return {"seed": seed, "norm": float(torch.linalg.vector_norm(x)), "sum": float(x.sum())}


#: the tasks every worker knows, by name (:func:`verify.run.sweep.cells.task` registers more)
BUILTIN_TASKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "claim": claim_task,
    "impl.load": load_impls_task,
    "run.plan": plan_task,
    "fpp.online-block": fpp_online_block,
    "rtrl.marschall-add-run": rtrl_marschall_add_run,
    "rtrl.marschall-mimic-run": rtrl_marschall_mimic_run,
    "rtrl.rflo-periodic-run": rtrl_rflo_periodic_run,
    "rtrl.sec7-run": rtrl_sec7_run,
    "sweep.selftest": selftest,
    "uoro.char-run": uoro_char_run,
    "uoro.ib-truncation-run": uoro_ib_truncation_run,
}
