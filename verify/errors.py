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
"""

from __future__ import annotations

__all__ = ["AssumptionViolated", "InvalidArgument", "InvalidFile", "VerifyError"]


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
