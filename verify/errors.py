"""The toolkit's error hierarchy.

Every error raised on purpose by rnn-verify derives from :class:`VerifyError`, so
a caller can catch the toolkit's errors without catching programming mistakes.

* :class:`InvalidArgument` -- bad input: it names the argument and the offending
  value (NaN/inf, wrong shape, unsupported dtype, sizes that would exhaust memory).

  * :class:`InvalidFile` -- a file read from disk is malformed: it names the file,
    the field (``claims[3].wall_time``), the value and the expected type
    (:mod:`verify.schema`).
* :class:`AssumptionViolated` -- a theorem's premise does not hold for the instance
  (e.g. a truncation bound asked for a non-contractive system). Checks turn it into
  a SKIPPED/INCONCLUSIVE verdict that names the premise; it is never a PASS.
* :class:`NotApplicable` -- the implementation under test does not declare what a
  claim needs (rank-r UORO asked of an estimator without ``rank=``, tabulated
  noise asked of one without the noise hook): the claim is SKIPPED with the reason.
* :class:`ContractViolation` -- the implementation under test returned or chose a value its
  contract forbids (a non-finite estimate, a truncation window outside [t-k, t-1]): the toolkit's
  validation caught what the implementation did wrong. A check that meets it is a FAIL of the
  implementation, worded as such (:func:`verify.run.check.run_check`), not a crash of the check.
* :class:`ImplementationError` -- an implementation given with ``--impl`` (or the
  plugin's ``--rnn-verify-impl``) cannot be used: no such module or attribute, a
  wrong signature, a contract violation. It names the implementation (exit 2).
"""

from __future__ import annotations

__all__ = [
    "AssumptionViolated",
    "ContractViolation",
    "DerivationError",
    "ImplementationError",
    "InvalidArgument",
    "InvalidFile",
    "NotApplicable",
    "VerifyError",
]


class VerifyError(Exception):
    """Base class of every error rnn-verify raises on purpose."""


class InvalidArgument(VerifyError, ValueError):
    """Bad input: names the argument and its value.

    Parameters
    ----------
    argument:
        The name of the offending argument (as the caller spelled it).
    value:
        The offending value, or a short description of it (shapes, dtypes).
    reason:
        What is wrong and, where it helps, what would be accepted.
    """

    def __init__(self, argument: str, value: object, reason: str) -> None:
        self.argument = argument
        self.value = value
        self.reason = reason
        super().__init__(f"invalid argument {argument}={_short(value)}: {reason}")


class AssumptionViolated(VerifyError):
    """A theorem's premise does not hold for the given instance.

    ``premise`` names the assumption (e.g. ``"contraction: ||W||*L_phi < 1"``) and
    ``measured`` the value that violates it.
    """

    def __init__(self, premise: str, measured: object, detail: str = "") -> None:
        self.premise = premise
        self.measured = measured
        self.detail = detail
        msg = f"assumption violated: {premise} (measured {_short(measured)})"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ContractViolation(InvalidArgument):
    """The implementation under test broke its contract: ``argument`` names what it returned or chose
    (``tbptt(k=1).window_start(1)``), ``value`` the value, ``reason`` what the contract asks for.

    An :class:`InvalidArgument` (the value is bad input to the rest of the computation), worded as what
    the implementation did: ``tbptt(k=1).window_start(1) = 1: ...``.
    """

    def __init__(self, argument: str, value: object, reason: str) -> None:
        super().__init__(argument, value, reason)
        self.args = (f"{argument} = {_short(value, 80)}: {reason}",)

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidFile(InvalidArgument):
    """A file read from disk is malformed: names the file, the field, the value found and what was expected.

    ``field`` is a path into the file's structure such as ``claims[3].wall_time`` or
    ``cases[0].arrays.theta`` (empty when the file as a whole is wrong, e.g. not JSON).
    It is an :class:`InvalidArgument` (the CLI exits 2 on it).
    """

    def __init__(self, file: str, field: str, value: object, expected: str) -> None:
        super().__init__(f"{file}: {field}" if field else file, value, expected)
        self.file = file
        self.field = field
        self.expected = expected
        if field:
            msg = f"{file}: field {field} = {_short(value, 80)}: expected {expected}"
        else:
            msg = f"{file}: {expected}"
        self.args = (msg,)

    def __str__(self) -> str:
        return str(self.args[0])


class DerivationError(VerifyError, ValueError):
    """A symbolic derivation (:mod:`theory`) did not produce the closed form it needs (a sympy result we cannot use)."""


class NotApplicable(VerifyError):
    """The implementation under test does not declare what a claim needs; the claim is SKIPPED with ``reason``."""

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__(f"{what}: {reason}")


class ImplementationError(InvalidArgument):
    """An implementation under test (``--impl NAME=SPEC``) cannot be used: names it, the spec and what is wrong."""

    def __init__(self, name: str, spec: str, reason: str, option: str = "--impl") -> None:
        super().__init__(f"{option} {name}", spec, reason)
        self.name = name
        self.spec = spec
        self.option = option
        self.args = (f"{option} {name}={spec}: {reason}",)

    def __str__(self) -> str:
        return str(self.args[0])
