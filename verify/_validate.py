"""Input validation helpers shared by the whole package (internal)."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence

import torch

from verify.errors import InvalidArgument

#: dtypes in which exact references may be computed.
REFERENCE_DTYPES = (torch.float64, torch.float32)
#: dtypes every cell supports for evaluation.
REAL_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
COMPLEX_DTYPES = (torch.complex128, torch.complex64)


def require_finite(name: str, tensor: torch.Tensor) -> None:
    """Raise :class:`InvalidArgument` if ``tensor`` holds NaN or inf."""
    if tensor.is_floating_point() or tensor.is_complex():
        bad = ~torch.isfinite(tensor)
        if bool(bad.any()):
            idx = tuple(int(i) for i in bad.nonzero()[0].tolist())
            raise InvalidArgument(
                name,
                f"tensor with {int(bad.sum())} non-finite entries, first at index {idx} = {tensor[idx].item()}",
                "must be finite (no NaN or inf)",
            )


def require_shape(name: str, tensor: torch.Tensor, shape: Sequence[int | None]) -> None:
    """Raise unless ``tensor.shape`` matches ``shape`` (``None`` = any size)."""
    ok = tensor.dim() == len(shape) and all(
        want is None or got == want for got, want in zip(tensor.shape, shape, strict=True)
    )
    if not ok:
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise InvalidArgument(name, f"tensor of shape {tuple(tensor.shape)}", f"expected shape {want}")


def require_reference_dtype(name: str, dtype: torch.dtype) -> None:
    """References are computed in float64 (or float32 for budget studies), never half."""
    if dtype not in REFERENCE_DTYPES:
        raise InvalidArgument(
            name,
            str(dtype),
            "exact references need float64 (float32 is accepted for precision studies); "
            "float16/bfloat16/integer dtypes cannot carry a reference",
        )


def require_positive_int(name: str, value: object, minimum: int = 1) -> int:
    """An integer (Python or NumPy, not bool) >= ``minimum``, returned as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise InvalidArgument(name, value, f"must be an integer >= {minimum}")
    return int(value)


def require_probability(name: str, value: object) -> float:
    if not isinstance(value, (int, float)) or not (0.0 < float(value) < 1.0):
        raise InvalidArgument(name, value, "must lie strictly between 0 and 1")
    return float(value)


def require_positive(name: str, value: object) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)) or float(value) <= 0:
        raise InvalidArgument(name, value, "must be a finite number > 0")
    return float(value)


def require_finite_number(
    name: str, value: object, *, minimum: float | None = None, exclusive: bool = False, maximum: float | None = None
) -> float:
    """A finite real number (not bool, not NaN/inf), optionally within ``[minimum, maximum]``.

    ``exclusive=True`` makes both ends strict. Returns it as ``float``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(name, value, "must be a real number")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidArgument(name, value, "must be finite (not NaN or inf)")
    lo_bad = minimum is not None and (v <= minimum if exclusive else v < minimum)
    hi_bad = maximum is not None and (v >= maximum if exclusive else v > maximum)
    if lo_bad or hi_bad:
        lo = "" if minimum is None else (f"> {minimum:g}" if exclusive else f">= {minimum:g}")
        hi = "" if maximum is None else (f"< {maximum:g}" if exclusive else f"<= {maximum:g}")
        raise InvalidArgument(name, value, "must be a finite number " + " and ".join(x for x in (lo, hi) if x))
    return v


def require_batch_shape(name: str, value: object) -> tuple[int, ...]:
    """A batch shape: a sequence (possibly empty) of integers >= 1, returned as a tuple."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidArgument(name, value, "must be a sequence of integers >= 1, e.g. () or (4,)")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 1:
            raise InvalidArgument(name, value, f"every batch dimension must be an integer >= 1 (entry {i} is {v!r})")
        out.append(int(v))
    return tuple(out)


def require_generator(name: str, value: object) -> torch.Generator:
    """A ``torch.Generator`` (every random draw of the toolkit takes one)."""
    if not isinstance(value, torch.Generator):
        raise InvalidArgument(
            name, value, "must be a torch.Generator, e.g. torch.Generator().manual_seed(0) (no hidden global RNG)"
        )
    return value


#: share of the available memory (``MemAvailable``) a builder may plan to allocate; above it
#: the call is refused *before* allocating, with the estimate (see :func:`require_fits_memory`)
MEMORY_FRACTION = 0.5


def format_bytes(nbytes: float) -> str:
    """``1.5 GiB``-style size."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{int(nbytes)} B"


def require_fits_memory(name: str, value: object, nbytes: float, what: str, fraction: float = MEMORY_FRACTION) -> None:
    """Refuse, before allocating, a build whose estimated size exceeds ``fraction`` of the available memory.

    The error names the argument that drives the size, its value, the estimate and the cap.
    """
    limit = available_memory_bytes() * fraction
    if nbytes > limit:
        raise InvalidArgument(
            name,
            value,
            f"{what} would need ~{format_bytes(nbytes)} (estimated before allocating), more than the "
            f"{fraction:.0%} of available memory a build may take ({format_bytes(limit)}); use smaller sizes",
        )


def available_memory_bytes() -> int:
    """Memory the process can still allocate (``MemAvailable``; falls back to total RAM)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - exotic platforms
        return 8 * 2**30


def require_memory(name: str, nbytes: int, what: str, fraction: float = 0.5) -> None:
    """Refuse (before allocating) a computation that needs more than ``fraction`` of free RAM."""
    limit = int(available_memory_bytes() * fraction)
    if nbytes > limit:
        raise InvalidArgument(
            name,
            f"{what} needing ~{nbytes / 2**30:.2f} GiB",
            f"exceeds the {fraction:.0%} share of available memory allowed "
            f"({limit / 2**30:.2f} GiB); use smaller sizes or a directional method",
        )


# ------------------------------------------------------------------- seeds
#: every check seeds its generators as ``seed * SEED_MULTIPLIER + salt`` (:meth:`verify.config.RunConfig.generator`)
SEED_MULTIPLIER = 1_000_003
#: the largest seed ``torch.Generator.manual_seed`` accepts (an unsigned 64-bit integer)
TORCH_SEED_MAX = 2**64 - 1
#: the largest base seed: ``MAX_SEED * SEED_MULTIPLIER + salt`` stays <= TORCH_SEED_MAX for every salt < SEED_MULTIPLIER
MAX_SEED = (TORCH_SEED_MAX + 1) // SEED_MULTIPLIER - 1


def validate_seed(name: str, value: object) -> int:
    """Return ``value`` if it is a base seed every generator of the toolkit accepts, else raise.

    A base seed becomes ``seed * SEED_MULTIPLIER + salt`` (salt < ``SEED_MULTIPLIER``) in
    :meth:`verify.config.RunConfig.generator` and :func:`verify.oracles.golden.golden_cases`, and that
    number goes to ``torch.Generator.manual_seed``, which accepts at most ``2**64 - 1``. So the
    accepted range is ``0 <= seed <= MAX_SEED`` (= 18_446_688_733_642); numpy's ``SeedSequence``
    accepts any non-negative integer and sets no tighter limit. Raises :class:`InvalidArgument`
    naming ``name``, the value and the range (a bool is not a seed).
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise InvalidArgument(
            name,
            value,
            f"must be an integer in [0, {MAX_SEED}] (seed * {SEED_MULTIPLIER} + salt must fit the "
            "unsigned 64-bit seed of torch.Generator.manual_seed)",
        )
    return value


def validate_generator_seed(name: str, value: object) -> int:
    """A raw ``torch.Generator.manual_seed`` seed in [0, ``TORCH_SEED_MAX``] (internal: derived seeds such as a
    calibration cell's hash). A seed a user gives is a base seed: :func:`validate_seed`, [0, ``MAX_SEED``]."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= TORCH_SEED_MAX:
        raise InvalidArgument(name, value, "must be an integer in [0, 2**64 - 1] (torch.Generator.manual_seed)")
    return value
