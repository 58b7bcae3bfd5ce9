"""A FAIL of an exact claim whose implementation returned float32 arrays says so (issue 37): the error it measures is
float32 round-off above the float64 budget, not necessarily a bug -- the verdict stays FAIL (the budget is
float64's), the summary names the precision; a float64 implementation gets no such note."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from theory.catalog import all_claims
from verify.config import RunConfig
from verify.examples.numpy_rtrl import MyNumpyRTRL
from verify.impl import Implementations, RTRLImpl
from verify.run.check import run_check
from verify.verdict import Verdict


def _float32(step):  # type: ignore[no-untyped-def]
    @functools.wraps(step)
    def wrapped(obj, x, y):  # type: ignore[no-untyped-def]
        return {k: np.asarray(v, dtype=np.float32) for k, v in step(obj, x, y).items()}

    return wrapped


def _run(est: object) -> object:
    config = RunConfig(seed=0, implementations=Implementations(rtrl=RTRLImpl(rtrl=lambda: est)))
    return run_check(all_claims()["rtrl.exact"], config)


def test_a_float32_implementation_fails_with_the_precision_named() -> None:
    est32 = dataclasses.replace(MyNumpyRTRL, step_fn=_float32(MyNumpyRTRL.step_fn), influence=None)
    res = _run(est32)
    assert res.verdict is Verdict.FAIL and "returned float32 arrays" in res.summary  # type: ignore[attr-defined]


def test_a_float64_implementation_gets_no_note() -> None:
    res = _run(MyNumpyRTRL)
    assert res.verdict is Verdict.PASS and "float32" not in res.summary  # type: ignore[attr-defined]
