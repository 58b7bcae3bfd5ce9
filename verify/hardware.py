"""Device and dtype resolution with clear errors (bad input for the GPU paths).

* :func:`resolve_device` -- ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``; a
  device that does not exist is an :class:`~verify.errors.InvalidArgument`, and so
  is ``cuda`` on a machine without CUDA when ``strict`` (otherwise callers get
  ``None`` and report SKIPPED with :data:`NO_CUDA_REASON`).
* :func:`require_same_device` -- every tensor of a computation on one device.
* :func:`require_dtype_supported` -- a dtype the device cannot compute in.
* :func:`describe_device` / :func:`device_record` -- the card's name (and, for the
  report, its compute capability, memory, CUDA version and TF32 settings).
* :func:`tf32_settings` / :func:`matmul_tf32` -- record and toggle TF32 for float32
  matmuls (``torch.backends.cuda.matmul.allow_tf32``; toggled through
  ``torch.set_float32_matmul_precision``, which keeps both the legacy flag and the
  newer ``fp32_precision`` API readable -- setting the new API directly makes the
  legacy flag raise on read in torch >= 2.9).
* :func:`parity_device` -- which CUDA device the GPU claims use for a run
  configuration (``None``: SKIPPED with :data:`NO_CUDA_REASON`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from verify.errors import InvalidArgument

__all__ = [
    "NO_CUDA_REASON",
    "cuda_available",
    "describe_device",
    "device_record",
    "matmul_tf32",
    "parity_device",
    "require_dtype_supported",
    "require_same_device",
    "resolve_device",
    "tf32_settings",
]

NO_CUDA_REASON = "no CUDA device on this machine (torch.cuda.is_available() is False)"


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


#: the device strings ``--device`` (CLI) and ``device=`` (API) accept
DEVICE_CHOICES = "'cpu', 'cuda', 'cuda:N' (N = 0, 1, ...) or 'auto'"


def resolve_device(spec: str, *, strict: bool = False, argument: str = "device=") -> torch.device | None:
    """Turn a device string into a :class:`torch.device`.

    ``auto`` is CUDA when available, else CPU. ``cuda``/``cuda:N`` without CUDA
    returns ``None`` (the caller SKIPs with :data:`NO_CUDA_REASON`) unless
    ``strict``, which raises. Unknown strings and absent CUDA ordinals raise
    :class:`InvalidArgument` naming ``argument`` (``device=`` for the API, the CLI
    passes ``--device``) and the allowed values (:data:`DEVICE_CHOICES`).
    """
    name = argument.rstrip("=")
    allowed = f"{argument} must be {DEVICE_CHOICES}"
    if not isinstance(spec, str):
        raise InvalidArgument(name, spec, f"must be a string: {allowed}")
    if spec == "auto":
        return torch.device("cuda") if cuda_available() else torch.device("cpu")
    try:
        dev = torch.device(spec)
    except (RuntimeError, ValueError):
        raise InvalidArgument(name, spec, f"not a device rnn-verify runs on; {allowed}") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise InvalidArgument(name, spec, f"not a device rnn-verify runs on; {allowed}")
    if not cuda_available():
        if strict:
            raise InvalidArgument(name, spec, NO_CUDA_REASON)
        return None
    count = torch.cuda.device_count()
    if dev.index is not None and dev.index >= count:
        raise InvalidArgument(name, spec, f"this machine has {count} CUDA device(s)")
    return dev


def require_same_device(**tensors: torch.Tensor) -> torch.device:
    """All named tensors live on one device; returns it."""
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{k} on {v}" for k, v in devices.items())
        raise InvalidArgument(",".join(devices), listing, "mixed devices: move every tensor to one device")
    return next(iter(devices.values()))


def require_dtype_supported(dtype: torch.dtype, device: torch.device) -> None:
    """Refuse a dtype the device cannot compute in (probed with a tiny matmul)."""
    try:
        a = torch.ones(2, 2, dtype=dtype, device=device)
        (a @ a).sum().item()
    except (RuntimeError, TypeError) as exc:
        raise InvalidArgument("dtype", str(dtype), f"not supported on {device}: {exc}") from None


def describe_device(device: torch.device) -> str:
    """The card's name for CUDA devices, 'cpu' otherwise."""
    if device.type == "cuda":
        return f"cuda:{device.index or 0} ({torch.cuda.get_device_name(device)})"
    return "cpu"


def device_record(device: torch.device) -> dict[str, Any]:
    """JSON-able description of a device for results: name, card, capability, memory, CUDA, TF32 settings."""
    rec: dict[str, Any] = {"device": str(device), "name": describe_device(device), "torch": torch.__version__}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        rec.update(
            card=torch.cuda.get_device_name(device),
            capability=f"{props.major}.{props.minor}",
            tf32_capable=props.major >= 8,
            memory_gib=round(props.total_memory / 2**30, 1),
            cuda=torch.version.cuda,
        )
    rec["tf32"] = tf32_settings()
    return rec


def tf32_settings() -> dict[str, Any]:
    """The current float32-matmul settings: the legacy ``allow_tf32`` flag, the precision string, new API."""
    out: dict[str, Any] = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    mm = torch.backends.cuda.matmul
    try:
        out["cuda.matmul.allow_tf32"] = bool(mm.allow_tf32)
    except RuntimeError as exc:  # torch >= 2.9 after the new API was set directly
        out["cuda.matmul.allow_tf32"] = f"unreadable ({str(exc).split(',')[0]})"
    fp32 = getattr(mm, "fp32_precision", None)
    if fp32 is not None:
        out["cuda.matmul.fp32_precision"] = str(fp32)
    return out


@contextmanager
def matmul_tf32(enabled: bool) -> Iterator[dict[str, Any]]:
    """Run a block with TF32 float32 matmuls on (``enabled``) or off; restores the previous setting.

    Yields the settings in force inside the block (:func:`tf32_settings`). Uses
    ``torch.set_float32_matmul_precision("high" | "highest")``, which sets
    ``torch.backends.cuda.matmul.allow_tf32`` accordingly; it is checked on entry.
    """
    if not isinstance(enabled, bool):
        raise InvalidArgument("tf32", enabled, "must be True or False")
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if enabled else "highest")
    try:
        settings = tf32_settings()
        flag = settings.get("cuda.matmul.allow_tf32")
        if isinstance(flag, bool) and flag != enabled:
            raise InvalidArgument("tf32", enabled, f"torch did not apply it: allow_tf32 reads {flag}")
        yield settings
    finally:
        torch.set_float32_matmul_precision(previous)


def parity_device(spec: str, override: str | None = None) -> torch.device | None:
    """The CUDA device the GPU claims run on, or ``None`` (SKIPPED with :data:`NO_CUDA_REASON`).

    Rule: an explicit ``override`` (a check option) wins; ``spec`` is the run's
    ``--device``. ``cuda``/``cuda:N``/``auto`` ask for that CUDA device; ``cpu`` (the
    default run) still uses ``cuda:0`` when CUDA is available -- the claims are
    *about* the GPU, so a plain run on a GPU machine checks it. A device string
    that does not exist raises :class:`InvalidArgument`.
    """
    want = override if override is not None else spec
    dev = resolve_device(want)
    if dev is None:
        return None
    if dev.type == "cpu":
        return torch.device("cuda", 0) if cuda_available() else None
    return dev if dev.index is not None else torch.device("cuda", torch.cuda.current_device())
