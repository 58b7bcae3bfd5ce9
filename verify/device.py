"""Device and dtype resolution with clear errors (bad input for the GPU paths).

* :func:`resolve_device` -- ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``; a
  device that does not exist is an :class:`~verify.errors.InvalidArgument`, and so
  is ``cuda`` on a machine without CUDA when ``strict`` (otherwise callers get
  ``None`` and report SKIPPED with :data:`NO_CUDA_REASON`).
* :func:`require_same_device` -- every tensor of a computation on one device.
* :func:`require_dtype_supported` -- a dtype the device cannot compute in.
"""

from __future__ import annotations

import torch

from verify.errors import InvalidArgument

__all__ = [
    "NO_CUDA_REASON",
    "cuda_available",
    "describe_device",
    "require_dtype_supported",
    "require_same_device",
    "resolve_device",
]

NO_CUDA_REASON = "no CUDA device on this machine (torch.cuda.is_available() is False)"


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def resolve_device(spec: str, *, strict: bool = False) -> torch.device | None:
    """Turn a device string into a :class:`torch.device`.

    ``auto`` is CUDA when available, else CPU. ``cuda``/``cuda:N`` without CUDA
    returns ``None`` (the caller SKIPs with :data:`NO_CUDA_REASON`) unless
    ``strict``, which raises. Unknown strings and absent CUDA ordinals raise.
    """
    if not isinstance(spec, str):
        raise InvalidArgument("device", spec, "must be a string such as 'cpu', 'cuda', 'cuda:0' or 'auto'")
    if spec == "auto":
        return torch.device("cuda") if cuda_available() else torch.device("cpu")
    try:
        dev = torch.device(spec)
    except (RuntimeError, ValueError) as exc:
        raise InvalidArgument("device", spec, f"not a device torch knows ({exc})") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise InvalidArgument("device", spec, "only 'cpu', 'cuda[:N]' and 'auto' are supported")
    if not cuda_available():
        if strict:
            raise InvalidArgument("device", spec, NO_CUDA_REASON)
        return None
    count = torch.cuda.device_count()
    if dev.index is not None and dev.index >= count:
        raise InvalidArgument("device", spec, f"this machine has {count} CUDA device(s)")
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
