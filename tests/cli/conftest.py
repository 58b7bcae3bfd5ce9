"""Fixtures for the CLI tests: fake checks injected into the runner's registry."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import verify.cli as cli_mod
import verify.run.check as check_mod
from theory.catalog import Claim, all_claims
from verify.config import RunConfig
from verify.verdict import CheckResult


@pytest.fixture
def fake_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``fake_checks({claim_id: fn}, extra_claims=[Claim...])``: run these instead of the registered checks."""

    def install(checks: dict[str, Callable[[RunConfig], CheckResult]], extra_claims: tuple[Claim, ...] = ()) -> None:
        # only the fakes: the tests do not depend on the other families' check modules
        monkeypatch.setattr(check_mod, "registry", lambda: dict(checks))
        # fakes live in this process only: the run must not send them to worker processes (default: one per CPU)
        monkeypatch.setattr(cli_mod, "available_cpus", lambda: 1)
        if extra_claims:
            claims = {**all_claims(), **{c.id: c for c in extra_claims}}
            monkeypatch.setattr(check_mod, "all_claims", lambda: claims)

    yield install


def fake_claim(claim_id: str, profiles: tuple[str, ...] = ("ci", "full")) -> Claim:
    family = claim_id.split(".", 1)[0]
    return Claim(
        id=claim_id,
        title=f"fake {claim_id}",
        paper="none.md",
        where="nowhere",
        statement="a fake claim for CLI tests",
        math="-",
        assumptions=(),
        check=f"verify.checks.{family}.fake",
        profiles=profiles,
    )
