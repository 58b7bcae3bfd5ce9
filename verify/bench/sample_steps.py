"""Count the sample-steps each claim draws from each online-estimator part (what ``--plan`` scales by a user's speed).

``python -m verify.bench.sample_steps [--profile ci] [--seed 0] [--write]``

For every claim of the profile that exercises an online estimator (``rtrl.rtrl``, ``uoro.uoro``, ``uoro.kfrtrl``
... :data:`verify.run.plan.ESTIMATOR_PARTS`), the claim runs once per such part with that part replaced by a
counting copy of the toolkit's own (a *user's* part, as ``--impl`` makes it: the claim runs what it runs for a
user's code). Every ``step`` of an estimator the part's factory built adds its number of samples M to the
sample-steps and 1 to the step calls. The result, claim -> part -> sample-steps (and step calls), is what a user's
estimator will be stepped for in that claim (up to sequential stopping); ``--plan`` multiplies them by the user's
piloted cost per sample-step and per call (:func:`verify.run.plan.step_costs`: a vectorized step has a fixed cost
per call, a per-sample loop a cost per sample).
``--write`` regenerates :mod:`verify.run._sample_steps` (commit it with the catalog change that needs it;
``tests/test_plan_speed.py`` fails while a claim that exercises an estimator is missing from it).
"""

from __future__ import annotations

import argparse
import pprint
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from verify.files import write_file_atomic

TOOL = "verify.bench.sample_steps"
_COUNTS: Counter[str] = Counter()
_CALLS: Counter[str] = Counter()


class _Counting:
    """A part's factory whose estimators count the samples of every ``step`` into :data:`_COUNTS`."""

    def __init__(self, factory: Any, part: str) -> None:
        self.factory, self.part = factory, part

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return counted(self.factory(*args, **kwargs), self.part)


def counted(est: Any, part: str) -> Any:
    """``est`` with its class swapped for a subclass whose ``step`` counts (a copy made by ``dataclasses.replace``
    or ``with_noise`` counts too: it is of the same subclass)."""
    cls = type(est)
    if getattr(cls, "_rnn_verify_counted", None) == part:
        return est

    def step(self: Any, problem: Any, theta: Any, state: Any, t: int, rng: Any) -> Any:
        out = cls.step(self, problem, theta, state, t, rng)
        g = out[1]
        _COUNTS[part] += int(g.shape[0]) if isinstance(g, torch.Tensor) and g.dim() > 1 else 1
        _CALLS[part] += 1
        return out

    sub = type(cls.__name__, (cls,), {"step": step, "_rnn_verify_counted": part, "__module__": cls.__module__})
    object.__setattr__(est, "__class__", sub)  # frozen dataclasses too
    return est


def count(
    profile: str = "ci", seed: int = 0, claims: list[str] | None = None
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(claim -> part -> sample-steps, claim -> part -> step calls) (see the module docstring), for the claims of
    ``profile`` that exercise an online estimator (or ``claims``)."""
    from theory.catalog import all_claims
    from verify.checks import uses
    from verify.config import RunConfig
    from verify.impl import DEFAULT
    from verify.run.check import run_check, torch_threads
    from verify.run.plan import ESTIMATOR_PARTS

    out: dict[str, dict[str, int]] = {}
    calls: dict[str, dict[str, int]] = {}
    catalog = all_claims()
    ids = (
        claims
        if claims is not None
        else [c for c, cl in catalog.items() if profile in cl.profiles and "cuda" not in cl.requires]
    )
    with torch_threads(1):
        for cid in ids:
            for part in (u for u in uses(cid) if u in ESTIMATOR_PARTS):
                fam, _, name = part.partition(".")
                impls = DEFAULT.with_part(fam, name, _Counting(DEFAULT.part(part), part))
                _COUNTS.clear()
                _CALLS.clear()
                t0 = time.perf_counter()
                res = run_check(catalog[cid], RunConfig(profile=profile, seed=seed, implementations=impls))
                out.setdefault(cid, {})[part] = int(_COUNTS[part])
                calls.setdefault(cid, {})[part] = int(_CALLS[part])
                print(f"{cid:45s} {part:22s} {_COUNTS[part]:>10d} sample-steps {_CALLS[part]:>8d} calls  "
                      f"{res.verdict.value:12s} {time.perf_counter() - t0:6.1f} s", flush=True)  # fmt: skip
    return out, calls


_HEADER = '''"""Sample-steps each claim draws from each online-estimator part (generated: ``python -m {tool}
--write``).

``SAMPLE_STEPS[profile][claim][part]``: the samples summed over every ``step`` of the estimators the part's factory
built while the claim ran at seed {seed} with that part a user's (a counting copy of the toolkit's own);
``STEP_CALLS[profile][claim][part]``: the number of those ``step`` calls. ``--plan`` scales them by a user's
piloted cost per sample-step and per call (:func:`verify.run.plan.step_costs`).
"""

# fmt: off
'''


def main(argv: list[str] | None = None) -> dict[str, dict[str, int]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--claims", default=None, help="comma-separated claim ids (default: every claim of the profile)")
    ap.add_argument("--write", action="store_true", help="regenerate verify/run/_sample_steps.py")
    a = ap.parse_args(argv)
    got, calls = count(a.profile, a.seed, a.claims.split(",") if a.claims else None)
    if a.write:
        from verify.run import _sample_steps

        tables = {
            "SAMPLE_STEPS": {**_sample_steps.SAMPLE_STEPS, a.profile: got},
            "STEP_CALLS": {**_sample_steps.STEP_CALLS, a.profile: calls},
        }
        path = Path(_sample_steps.__file__)
        text = _HEADER.format(tool=TOOL, seed=a.seed) + "".join(
            f"{name}: dict[str, dict[str, dict[str, int]]] = " + pprint.pformat(t, width=116, sort_dicts=True) + "\n"
            for name, t in tables.items()
        )
        write_file_atomic(path, text.encode("utf-8"))
        print(f"wrote {path}")
    return got


if __name__ == "__main__":
    main()
