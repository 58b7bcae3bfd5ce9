"""The run configuration a check receives: profile, seed, device, dtype, options, implementations.

It sits between the implementations (:mod:`verify.impl`) and the checks (:mod:`verify.checks`), which read it;
the schedulers above (:mod:`verify.run`) build it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from theory.catalog import PROFILES
from verify._validate import SEED_MULTIPLIER, validate_seed
from verify.errors import InvalidArgument
from verify.impl import DEFAULT, Implementations

__all__ = ["PROFILES", "RunConfig"]


@dataclass(frozen=True)
class RunConfig:
    """What a check is asked to do: profile (sizes), seed, device and dtype.

    ``profile="ci"`` runs every claim at sizes that finish quickly (the CI gate);
    ``"full"`` uses larger sizes, more seeds and the reproductions.
    ``options`` carries check-specific overrides (documented by each check).
    ``implementations`` is the implementation under test of every family
    (:class:`verify.impl.Implementations`; ``None``: the toolkit's own); checks read
    it as :attr:`impls`. ``impl_specs`` are the ``FAMILY=SPEC`` texts ``implementations`` was loaded from
    (:func:`verify.impl.loader.load_implementations`): what a worker process loads again to run the very same
    implementations (:func:`verify.run.check.claim_params`); empty for the defaults and for values built in code,
    which cannot leave this process.
    """

    profile: str = "ci"
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float64"
    options: tuple[tuple[str, Any], ...] = ()
    implementations: Implementations | None = None
    impl_specs: tuple[str, ...] = ()
    #: the time limit of each claim run in a worker process, seconds (``run --timeout``; None: derived from the
    #: plan, :func:`verify.run.plan.claim_timeout`; 0: none). Not sent to the worker: the supervisor enforces it.
    timeout: float | None = None
    #: the ``run.implementations`` records of a user's parts loaded in a worker (the supervisor never imports
    #: them); with ``impl_specs`` it stands in for ``implementations`` in the process that decides the exit status
    impl_sources: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise InvalidArgument("profile", self.profile, f"must be one of {PROFILES}")
        validate_seed("seed", self.seed)
        if self.dtype not in ("float64", "float32"):
            raise InvalidArgument("dtype", self.dtype, "must be 'float64' or 'float32'")
        if self.timeout is not None and (
            isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not 0 <= self.timeout < 1e9
        ):
            raise InvalidArgument("timeout", self.timeout, "must be a number of seconds >= 0 (0: no limit)")
        if self.impl_specs and self.implementations is None and not self.impl_sources:
            raise InvalidArgument(
                "impl_specs", list(self.impl_specs), "given without the implementations loaded from them"
            )

    @property
    def full(self) -> bool:
        return self.profile == "full"

    @property
    def impls(self) -> Implementations:
        """The implementations under test (the toolkit's own unless a user's or a mutant was given)."""
        return self.implementations if self.implementations is not None else DEFAULT

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def generator(self, salt: int = 0) -> torch.Generator:
        """A CPU generator seeded from (seed, salt): every draw in a check takes one.

        The seed is ``seed * SEED_MULTIPLIER + salt`` with ``0 <= salt < SEED_MULTIPLIER``, so
        distinct (seed, salt) pairs never share a stream and every valid seed
        (:func:`verify._validate.validate_seed`) fits ``manual_seed``'s 64 bits.
        """
        if isinstance(salt, bool) or not isinstance(salt, int) or not 0 <= salt < SEED_MULTIPLIER:
            raise InvalidArgument("salt", salt, f"must be an integer in [0, {SEED_MULTIPLIER})")
        return torch.Generator().manual_seed(self.seed * SEED_MULTIPLIER + salt)

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch.float64 if self.dtype == "float64" else torch.float32
