"""The lines ``rnn-verify run`` prints per verdict: short (at most :data:`LINE_WIDTH` characters) or, with ``-v``,
with the check's whole summary; the verdict word coloured under ``--color``.

``--color auto`` colours only on a terminal and only when ``NO_COLOR`` is unset or empty (https://no-color.org);
``yes`` and ``no`` force it. The width counts what is seen: the colour codes are not counted.
"""

from __future__ import annotations

import os
from typing import TextIO

from verify.text import clean

__all__ = ["LINE_WIDTH", "colored", "shorten", "use_color", "verdict_line"]

#: the most characters of a short verdict line (and of a FAIL's line in the final summary)
LINE_WIDTH = 100

_CODES = {"PASS": "32", "FAIL": "31;1", "INCONCLUSIVE": "33", "SKIPPED": "36"}
_ELLIPSIS = "..."


def use_color(choice: str, stream: TextIO) -> bool:
    """``--color``: ``yes``, ``no``, or ``auto`` -- ``stream`` is a terminal and ``NO_COLOR`` is unset or empty."""
    if choice == "yes":
        return True
    if choice == "no":
        return False
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        tty = False
    return tty and not os.environ.get("NO_COLOR")


def colored(verdict: str, text: str, color: bool) -> str:
    """``text`` (the verdict word, padded as the caller wants) in the verdict's colour, or as it is."""
    code = _CODES.get(verdict)
    return f"\033[{code}m{text}\033[0m" if color and code else text


def shorten(text: str, width: int) -> str:
    """The first line of ``text``, cut to ``width`` characters with ``...`` where cut."""
    first = (text.strip().splitlines() or [""])[0].strip()
    if len(first) <= width:
        return first
    return first[: max(0, width - len(_ELLIPSIS))].rstrip() + _ELLIPSIS


def verdict_line(
    verdict: str,
    claim_id: str,
    summary: str,
    wall_time: float | None = None,
    samples: int | None = None,
    *,
    verbose: bool = False,
    color: bool = False,
    width: int = LINE_WIDTH,
) -> str:
    """One claim's verdict: ``VERDICT  id  12.3s  summary``. Short (at most ``width`` characters seen, the summary
    shortened to its first line) unless ``verbose``, which keeps the whole summary and the draws (``n=``)."""
    said = clean(summary)  # it may quote code under test (verify.text.clean)
    when = f" {wall_time:6.1f}s" if wall_time is not None else ""
    if verbose:
        n = f"n={samples}" if samples is not None else ""
        return f"{colored(verdict, verdict, color)}{' ' * (12 - len(verdict))} {claim_id:<34}{when} {n:>9}  {said}"
    head = f"{verdict:<12} {claim_id:<34}{when}  "
    if len(head) > width:  # a very long id: cut it, the verdict stays
        head = shorten(f"{verdict:<12} {claim_id}", width - len(when) - 2) + when + "  "
    rest = width - len(head)
    text = (head + shorten(said, rest) if rest > len(_ELLIPSIS) else head).rstrip()
    return colored(verdict, verdict, color) + text[len(verdict) :]
