"""Figure builders by claim family: a check's measured data → figure specs (:mod:`verify.figure_spec`).

Each builder takes what a check measured (its ``data`` or the tensors behind it) and
returns figure specs; the check puts them under ``data["figures"]``. Nothing here
decides a verdict: the figures show what the checks compared, with the theory's bound
or rate beside the measurement. One module per family (:mod:`verify.report.plots.fpp`,
:mod:`~verify.report.plots.rtrl`, :mod:`~verify.report.plots.uoro`, ...).

Every claim carries a figure where a picture says more than a number; the claims in
:data:`WITHOUT_FIGURE` deliberately do not, with the reason (a test holds every other
claim's check to producing one). ``device.cuda-parity`` and ``device.gpu-unbiasedness``
draw theirs when they run on CUDA; SKIPPED, they have nothing to draw.
"""

from __future__ import annotations

import math
from typing import Any

from verify.figure_spec import Figure

__all__ = ["WITHOUT_FIGURE", "Figure", "finite", "fmt3"]

#: claims whose report section has no figure, and why: a picture would not say more than the number
WITHOUT_FIGURE: dict[str, str] = {
    "fpp.gradient-eq7": "a deterministic equality to round-off: the worst relative error of 190 per-sample "
    "gradients against 1e-12 (and the sign mutant's error) is the whole result",
    "fpp.lemma3-unbiased": "an exact finite-sum expectation compared to round-off: one worst relative error "
    "against 1e-12, plus a sampler coverage test",
    "fpp.prop2-kkt-equivalence": "numeric KKT mismatches at round-off (~1e-16) and sympy identities that are 0 or "
    "not: nothing varies along an axis",
    "uoro.exact-expectation": "exact enumeration over every sign pattern: one relative error against its "
    "round-off budget per case",
    "uoro.ok-unbiased": "an exact expectation over every outcome of OK's uniforms compared to exact float64 RTRL: "
    "one largest relative error against 1e-12 (the biased reductions' errors are in its controls)",
    "uoro.algorithm-1-conformance": "formula conformance under tabulated noise (equal to 1e-12) and a noise-law "
    "test: pass/fail numbers, all in the data",
}


def finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt3(v: Any) -> str:
    f = finite(v)
    return "—" if f is None else f"{f:.3f}"
