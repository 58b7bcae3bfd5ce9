r"""Precision as a declared property of the implementation under test (issue 37, item 3).

Code that computes in float32 carries round-off of about :math:`u_{32} = 2^{-24} \approx 6\cdot10^{-8}` relative
per operation; the float64 budgets of the exact claims (:mod:`verify.oracles.budget`, ~1e-14) cannot hold for it,
however right the algorithm. The implementation says what it computes in, and is judged by the *predicted*
budget of that precision -- the same model, with the float32 rounding unit in place of float64's:

* **declaring it**: ``Batch1(..., dtype="float32")``; on any other part (a class, a factory function, an
  estimator instance) an attribute ``dtype = "float32"`` (``torch.float32`` and ``np.float32`` are read the
  same; anything else is not a precision declaration and is ignored); or ``rnn-verify run --dtype float32``
  (:attr:`verify.config.RunConfig.dtype`), which judges every part under test at float32. The coarser of the
  two wins: a float64 implementation run with ``--dtype float32`` is judged by the float32 budget, which its
  float64 errors are far below (it PASSes -- the run then certifies float32 accuracy only, and the results say
  ``dtype float32``).
* **exact claims** (RTRL = BPTT, UORO's exact expectation, ...): the comparison of the user's float32
  computation with the toolkit's float64 reference is budgeted by :func:`~verify.oracles.budget.pair_unit` --
  the rounding units of the two sides, :math:`(u_{32} + u_{64})`, in place of :math:`2u_{64}` in
  :math:`C\,u\,m\,T\,\kappa` (:func:`verify.oracles.budget.roundoff_budget`; Higham, *Accuracy and Stability
  of Numerical Algorithms*, 2nd ed., Lemma 3.1). Nothing is tuned: the budget is the float64 one with the
  rounding unit replaced, so a float32 budget is :math:`(u_{32}+u_{64})/(2u_{64}) \approx 2.7\cdot10^{8}` times
  the float64 budget of the same problem. The DESIGN targets (1e-11 for RTRL vs BPTT ...) are float64 targets
  and are not applied at float32.
* **statistical claims**: the draws are handed to the unbiasedness tests as float32
  (:func:`verify.uoro.unbiased.family_sampler`, :func:`verify.estimators.alignment.axis_sweep`), whose
  round-off model (:mod:`verify.stats.roundoff`) then allows :math:`\kappa\,u_{32}` of the draws' magnitude per
  coordinate, "u = the coarsest dtype the sampler returned".

A FAIL judged at float64 whose error sits where float32 round-off lands (:func:`roundoff_hint`) says so, and
how to declare the precision.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from verify.errors import InvalidArgument
from verify.oracles.budget import pair_unit, unit_roundoff

__all__ = [
    "DTYPES",
    "FLOAT32_LOW",
    "declared_dtype",
    "exact_target",
    "judged_dtype",
    "pair_unit",
    "roundoff_hint",
    "target_words",
    "validate_dtype",
]

#: the precisions an implementation may declare, and what they are judged by
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def validate_dtype(name: str, value: Any) -> str | None:
    """``value`` (None, ``"float32"``/``"float64"``, ``torch.float32``, ``np.float32`` ...) as a precision name;
    :class:`InvalidArgument` naming ``name`` otherwise."""
    if value is None:
        return None
    norm = _normalize(value)
    if norm is None:
        raise InvalidArgument(name, value, f"None or one of {tuple(DTYPES)} (the precision the code computes in)")
    return norm


def _normalize(value: Any) -> str | None:
    text = str(getattr(value, "__name__", value)).replace("torch.", "").replace("<class 'numpy.", "").rstrip("'>")
    return {"float32": "float32", "single": "float32", "float64": "float64", "double": "float64"}.get(text)


def declared_dtype(part: Any) -> str | None:
    """The precision a part under test declares: its (or, for an instance given as a part, the instance's)
    ``dtype`` attribute as ``"float32"`` / ``"float64"``, else None (undeclared: float64 is assumed)."""
    obj = getattr(part, "estimator", part)  # verify.impl.Fixed holds an instance
    for holder in (obj, part):
        value = getattr(holder, "dtype", None)
        if value is not None:
            norm = _normalize(value)
            if norm is not None:
                return norm
    return None


def judged_dtype(run_dtype: str, parts: Iterable[Any]) -> torch.dtype:
    """The precision a claim judges ``parts`` by: float32 when the run says so (``--dtype float32``) or any of
    them declares float32 (the coarsest wins), else float64."""
    names = {run_dtype, *(declared_dtype(p) for p in parts)}
    return torch.float32 if "float32" in names else torch.float64


def exact_target(dtype: torch.dtype, target: float) -> float:
    r"""A fixed float64 round-off target (``target``, e.g. DESIGN.md's 1e-12 for an online algorithm in a limit where
    it equals RTRL) at the precision ``dtype`` a claim judges by: ``target`` for float64, else ``target`` with the
    rounding unit replaced, :math:`	ext{target}\cdot(u_{dtype}+u_{64})/(2u_{64})` -- the same scaling as every
    other budget of this module (:func:`~verify.oracles.budget.pair_unit`; 2.7e-4 for 1e-12 at float32)."""
    return target * pair_unit(dtype) / unit_roundoff(torch.float64)


def target_words(tol: float, dtype: torch.dtype) -> str:
    """A tolerance as a summary prints it, with the precision it is at when that is float32."""
    return f"{tol:.1e} (float32: judged at its round-off)" if dtype == torch.float32 else f"{tol:.0e}"


#: the smallest relative error a float32 computation of these quantities is taken to show: u₃₂/16. Below it an
#: error is not float32 round-off (one rounding of the result alone is up to u₃₂; the magnitudes summed into
#: a result are at least the result, so its error is rarely far below a unit)
FLOAT32_LOW = unit_roundoff(torch.float32) / 16.0


def roundoff_hint(statistic: float | None, threshold: float | None, judged: str) -> str:
    r"""What a FAIL's summary adds when its error sits at float32 round-off: judged at float64 (``judged``), an
    error budget below float32's unit (``threshold`` < u₃₂: a round-off budget, not a statistical one) and an
    error ``statistic`` in :math:`[u_{32}/16,\ \text{threshold}\cdot(u_{32}+u_{64})/(2u_{64})]` -- above what
    float64 arithmetic produces and within the float32 budget the same claim would use (the budgets are linear
    in the rounding unit). "" otherwise."""
    if judged != "float64" or statistic is None or threshold is None:
        return ""
    u32, u64 = unit_roundoff(torch.float32), unit_roundoff(torch.float64)
    if not (0.0 < threshold < u32) or not (statistic == statistic):  # NaN
        return ""
    upper = threshold * (u32 + u64) / (2.0 * u64)
    if not FLOAT32_LOW <= statistic <= upper:
        return ""
    return (
        f"error {statistic:.2g} ~ float32 round-off: does the implementation compute in float32? declare "
        f"dtype='float32' or run with --dtype float32 (unit round-off {u32:.1e}; the float32 budget of this check "
        f"would be {upper:.2g}; Batch1(..., dtype='float32') or a dtype attribute on the part)"
    )
