r"""Text from code under test made safe for every output: the terminal, markdown, HTML, JSON and JUnit XML.

Whatever a user's code hands to rnn-verify as text -- an exception's message, a summary, a file name
decoded with :func:`os.fsdecode` from bytes that are not UTF-8, a command line given under ``LANG=C`` --
is written where a control character moves a terminal's cursor or colours a CI log (ESC), ends a C
string (NUL), is no XML 1.0 character at all (NUL, ESC, FF, U+FFFE: a CI publisher drops the whole
``junit.xml``), or cannot be encoded as UTF-8 (a lone surrogate: ``results.json`` could not be written).

* :func:`clean` escapes exactly those characters, visibly and in Python's notation, and leaves every
  other character as it is (printable Unicode, ``θ``, ``\n`` and ``\t``):

  - C0 controls except ``\n`` and ``\t`` (NUL, BEL, BS, VT, FF, CR, ESC, ...), DEL and the C1 controls
    (U+0080..U+009F): ``\x1b`` (the four characters ``\``, ``x``, ``1``, ``b``), CR as ``\r``;
  - lone surrogates (U+D800..U+DFFF, what ``os.fsdecode`` makes of a byte that is not UTF-8): ``\udcff``;
  - the Unicode noncharacters (U+FDD0..U+FDEF and the last two code points of every plane, U+FFFE,
    U+FFFF, U+1FFFE, ..., U+10FFFF): ``\ufffe``, ``\U0010ffff``.

  Every escape is the one Python's ``unicode_escape`` codec writes (and reads back). The result is valid
  UTF-8, valid XML 1.0 character data and holds no terminal control sequence. It is idempotent
  (``clean(clean(t)) == clean(t)``: an escape is printable text) but not injective: the escape of ESC
  and the four typed characters ``\x1b`` read the same (a backslash is not doubled) -- a report that
  has to tell them apart must not rely on it.
* :func:`safe_str` and :func:`safe_repr` are ``str(obj)`` and ``repr(obj)`` that never raise: where
  ``__str__``/``__repr__`` raises (or returns something that is not a ``str``) the result names the
  type and what went wrong, ``<Bad object (str() raised ValueError)>``; the text is :func:`clean`.
  A stop of the run stays one: a signal delivered to rnn-verify during the call, and -- where no stop
  handler is installed (library use, :mod:`verify.stop`) -- a ``KeyboardInterrupt``, are raised again.
* :func:`type_name` is ``type(obj).__name__``, cleaned (a class name is user text too) and never raising.
* :func:`clean_tree` cleans every string (dictionary keys included) of JSON-like data: what a worker
  process sends back, a results document before it is written.

This module sits on the second floor of the house, above :mod:`verify.stop` (standard library only), the one
module it imports: a signal delivered to rnn-verify while a user's ``__str__`` runs still stops the run.
(:mod:`verify.errors`, on the floor below, cannot import it.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from verify import stop

__all__ = ["clean", "clean_tree", "safe_repr", "safe_str", "type_name"]

#: the noncharacters: U+FDD0..U+FDEF and U+nFFFE, U+nFFFF of each of the 17 planes (Unicode §23.7)
_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(f"{chr(p * 0x10000 + 0xFFFE)}{chr(p * 0x10000 + 0xFFFF)}" for p in range(17))
#: every character :func:`clean` escapes: C0 but \t and \n, DEL and C1, surrogates, noncharacters
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{_NONCHARACTERS}]")


def _escape(m: re.Match[str]) -> str:
    cp = ord(m.group(0))
    if cp == 0x0D:
        return "\\r"  # as Python writes it (repr, the unicode_escape codec)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def clean(text: object) -> str:
    r"""``text`` safe for every output (see the module docstring): ``"a\x1b[31m"`` -> ``"a\\x1b[31m"``.

    A ``str`` subclass comes back as a plain ``str``; anything else is :func:`safe_str` of it.
    """
    if not isinstance(text, str):
        return safe_str(text)
    s = str.__str__(text)  # a plain str: a subclass's own methods are not called
    return s if _UNSAFE.search(s) is None else _UNSAFE.sub(_escape, s)


def type_name(obj: object) -> str:
    """The name of ``obj``'s type (``ValueError``), cleaned; read past a metaclass that overrides ``__name__``."""
    return clean(type.__dict__["__name__"].__get__(type(obj)))


def _fallback(obj: object, call: str, exc: BaseException) -> str:
    stop.reraise_if_stopped(exc)  # a signal delivered to rnn-verify during the call stops the run
    return f"<{type_name(obj)} object ({call}() raised {type_name(exc)})>"


def safe_str(obj: object) -> str:
    """``str(obj)`` cleaned, never raising: ``<T object (str() raised E)>`` where ``T.__str__`` raises ``E``.

    A ``__str__`` that returns something other than a ``str`` is a ``TypeError`` of ``str()``, named so.
    """
    if isinstance(obj, str):
        return clean(obj)
    try:
        text = str(obj)
    except BaseException as exc:  # whatever the user's __str__ raises (SystemExit too) is described, not raised
        return _fallback(obj, "str", exc)
    return clean(text)


def safe_repr(obj: object) -> str:
    """``repr(obj)`` cleaned, never raising: ``<T object (repr() raised E)>`` where ``T.__repr__`` raises ``E``."""
    try:
        text = repr(obj)
    except BaseException as exc:
        return _fallback(obj, "repr", exc)
    return clean(text)


def clean_tree(obj: Any) -> Any:
    """A copy of JSON-like ``obj`` with every string :func:`clean`: values and dictionary keys.

    Mappings become ``dict``, lists ``list`` and tuples ``tuple``; any other value (numbers, ``None``,
    tensors ...) is kept as it is. Two keys that differ only in what is escaped (an ESC and the typed
    text ``\\x1b``) become one, the later value kept. Nesting is bounded by Python's recursion limit,
    as in :func:`json.dumps`.
    """
    if isinstance(obj, str):
        return clean(obj)
    if isinstance(obj, Mapping):
        return {(clean(k) if isinstance(k, str) else k): _item(v) for k, v in obj.items()}
    if isinstance(obj, list):  # (the test inline: a figure's data is long lists of numbers)
        return [v if type(v) in _SCALARS else clean_tree(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_item(v) for v in obj)
    return obj


#: values kept as they are without a call (a document's figure data: long lists of numbers)
_SCALARS = frozenset({int, float, bool, type(None)})


def _item(v: Any) -> Any:
    return v if type(v) in _SCALARS else clean_tree(v)


def bound_words(value: float, limit: float, spec: str = ".0e") -> str:
    """``"<= 1e-12"`` when ``value <= limit``, else ``"> 1e-12 allowed"``: a summary that reads true either way.

    A FAIL's summary must not print ``3e-03 (<= 1e-12)``, which states something false; ``limit``
    is formatted with ``spec``.
    """
    return f"<= {limit:{spec}}" if value <= limit else f"> {limit:{spec}} allowed"
