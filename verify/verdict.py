"""Verdicts and check results -- the contract every check follows (the lowest floor).

A *check* is a function ``check(config: RunConfig) -> CheckResult`` registered
under a claim id of the catalog in :mod:`theory.catalog` (see
:mod:`verify.checks`). A check whose premise does not hold says so
(``SKIPPED``/``INCONCLUSIVE`` with the reason); it never reports ``PASS`` for a
claim it could not test.
"""

from __future__ import annotations

import enum
import math
import platform
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from verify.errors import InvalidArgument

__all__ = ["CheckResult", "Control", "Verdict", "finding_line", "to_jsonable"]


class Verdict(str, enum.Enum):
    """Outcome of a check."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    SKIPPED = "SKIPPED"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Control:
    """A negative (or positive) control run inside a check: it must come out as expected.

    ``expected``/``observed`` are verdict-like strings ("FAIL" for a mutant that
    must be caught). A check whose control does not come out as expected cannot
    report PASS.
    """

    name: str
    expected: str
    observed: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.expected == self.observed


def finding_line(claim_id: str, verdict: Verdict, finding: str) -> str:
    """The one wording of a FINDING line (``run`` and ``sweep`` print it): it says itself whether it is a failure.

    A finding is a paper's printed claim that differs from what holds; the claim checks the corrected version,
    so after a PASS the line is *not* an alarm, and says so.
    """
    if verdict is Verdict.PASS:
        return (
            f"FINDING (not a failure) {claim_id}: the paper's printed claim differs from what holds; the checked "
            f"version PASSes -- {finding}"
        )
    return (
        f"FINDING {claim_id}: the paper's printed claim differs from what holds (this claim is {verdict.value}) "
        f"-- {finding}"
    )


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check of one claim.

    ``statistic`` is the measured quantity (e.g. a relative error) and
    ``threshold`` what it is compared with (e.g. the predicted round-off budget);
    ``data`` holds JSON-serialisable series for the report's figures.
    ``findings`` are measured statements about a paper *as printed* that this run
    established -- a reproduction that did not reproduce, an erratum confirmed by a
    measurement. They are independent of the verdict (the corrected claim may PASS
    while the printed one fails) and the report lists them next to its summary.
    ``implementation`` names what was under test (``{"uoro.uoro": "user: mypkg:MyUORO (file ..., sha256 ...)"}``).
    """

    claim_id: str
    verdict: Verdict
    summary: str
    statistic: float | None = None
    threshold: float | None = None
    comparison: str = "<="
    seed: int | None = None
    dtype: str = "float64"
    device: str = "cpu"
    alpha: float | None = None
    beta: float | None = None
    delta: float | None = None
    samples_planned: int | None = None
    samples_used: int | None = None
    reason: str | None = None
    controls: tuple[Control, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    findings: tuple[str, ...] = ()
    wall_time: float = 0.0
    #: ``family.field`` -> the implementation under test there (set by the runner from the check's ``uses``)
    implementation: dict[str, str] = field(default_factory=dict)
    torch_version: str = field(default_factory=lambda: torch.__version__)
    python_version: str = field(default_factory=platform.python_version)

    def __post_init__(self) -> None:
        if self.verdict is Verdict.PASS and any(not c.ok for c in self.controls):
            bad = [c.name for c in self.controls if not c.ok]
            raise InvalidArgument(
                "verdict", "PASS", f"a check cannot PASS when its controls {bad} did not come out as expected"
            )
        if self.verdict in (Verdict.SKIPPED, Verdict.INCONCLUSIVE) and not self.reason:
            raise InvalidArgument("reason", None, f"a {self.verdict} result must say why")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        return to_jsonable(d)  # type: ignore[no-any-return]

    @staticmethod
    def from_dict(d: dict[str, Any]) -> CheckResult:
        """The inverse of :meth:`to_dict` (a result sent back by a worker process or read from a sweep cache).

        Raises :class:`InvalidArgument` for a dict that is not a result (missing id, verdict or summary).
        """
        if not isinstance(d, dict) or not isinstance(d.get("claim_id"), str) or not isinstance(d.get("summary"), str):
            raise InvalidArgument("result", type(d).__name__, "a CheckResult dict with claim_id and summary")
        try:
            verdict = Verdict(d.get("verdict"))
        except ValueError:
            raise InvalidArgument("result.verdict", d.get("verdict"), f"one of {[v.value for v in Verdict]}") from None
        known = {f for f in CheckResult.__dataclass_fields__}
        kw = {k: v for k, v in d.items() if k in known and k not in ("verdict", "controls", "findings")}
        controls = tuple(
            Control(str(c["name"]), str(c["expected"]), str(c["observed"]), str(c.get("detail", "")))
            for c in d.get("controls") or ()
        )
        findings = tuple(str(f) for f in d.get("findings") or ())
        for k in ("statistic", "threshold", "alpha", "beta", "delta"):  # non-finite floats travel as strings
            if isinstance(kw.get(k), str):
                try:
                    kw[k] = float(kw[k])
                except ValueError:
                    kw[k] = None
        return CheckResult(verdict=verdict, controls=controls, findings=findings, **kw)


def to_jsonable(obj: Any) -> Any:
    """Convert tensors, numpy values, enums and non-finite floats to plain JSON values."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        return to_jsonable(obj.detach().cpu().tolist())
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "item"):
        return to_jsonable(obj.item())
    if hasattr(obj, "tolist"):
        return to_jsonable(obj.tolist())
    return str(obj)
