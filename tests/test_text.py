"""verify.text: what is escaped (every code point, against Python's own ``unicode_escape``), what is kept, safe
str()/repr() of objects whose ``__str__``/``__repr__`` raise, and the walk over JSON-like data (issue 36, item 6)."""

from __future__ import annotations

import copy
import math
import re
import unicodedata
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verify import stop
from verify.text import clean, clean_tree, safe_repr, safe_str, type_name

#: the XML 1.0 Char production (W3C XML 1.0 §2.2), written out independently of verify.text
XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")


def _unsafe(c: str) -> bool:
    """What must be escaped, from the Unicode database: controls (Cc) but \\n and \\t, surrogates (Cs),
    noncharacters (U+FDD0..U+FDEF and U+nFFFE/U+nFFFF, The Unicode Standard §23.7)."""
    cp = ord(c)
    cat = unicodedata.category(c)
    return (cat == "Cc" and c not in "\n\t") or cat == "Cs" or 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE


# any code point, lone surrogates included (hypothesis leaves them out unless told)
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None, exclude_categories=()))


def test_every_code_point_is_kept_or_escaped_as_python_escapes_it() -> None:
    """All 1 114 112 code points: kept where safe, else replaced by exactly ``unicode_escape``'s escape."""
    every = "".join(map(chr, range(0x110000)))
    want = "".join(c.encode("unicode_escape").decode("ascii") if _unsafe(c) else c for c in every)
    assert clean(every) == want
    assert sum(map(_unsafe, every)) == 32 + 1 + 32 - 2 + 2048 + 32 + 34  # C0-{\n,\t}, DEL, C1, Cs, FDD0.., nFFFE/F


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x00", "\\x00"),
        ("\x07", "\\x07"),
        ("\x0c", "\\x0c"),
        ("\r", "\\r"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x7f", "\\x7f"),
        ("\x9b2J", "\\x9b2J"),  # C1 CSI: clears a terminal that takes 8-bit controls
        ("a\udcffb", "a\\udcffb"),  # os.fsdecode(b"a\xffb")
        ("\ud800", "\\ud800"),
        ("\ufffe\uffff", "\\ufffe\\uffff"),
        ("\ufdd0", "\\ufdd0"),
        ("\U0001fffe", "\\U0001fffe"),
        ("\U0010ffff", "\\U0010ffff"),
    ],
)
def test_escapes(raw: str, shown: str) -> None:
    assert clean(raw) == shown


@pytest.mark.parametrize(
    "text",
    ["plain", "line\nnext\tcell", "θ̃ ∂F/∂θ ≤ 1e-3", "😀 \U0001f9ea", "\ufffd", "\ue000", "\ufdcf\ufdf0", "a\\x1b"],
)
def test_safe_text_is_unchanged(text: str) -> None:
    assert clean(text) == text


def test_the_os_fsdecode_of_bytes_that_are_not_utf8_comes_out_utf8() -> None:
    import os

    name = os.fsdecode(b"run-\xff\xfe.txt")
    assert "\udcff" in name  # (what the issue saw: a surrogate from a non-UTF-8 file name)
    out = clean(name)
    assert out == "run-\\udcff\\udcfe.txt"
    out.encode("utf-8")  # strict: no UnicodeEncodeError


@given(ANY_TEXT)
def test_clean_is_utf8_xml_and_idempotent(text: str) -> None:
    out = clean(text)
    out.encode("utf-8")
    assert XML_CHAR.fullmatch(out)
    assert not any(_unsafe(c) for c in out)
    assert clean(out) == out
    root = ET.Element("t", message=out)
    root.text = out
    back = ET.fromstring(ET.tostring(root, encoding="utf-8"))
    assert (back.text or "") == out and back.get("message") == out


@given(ANY_TEXT)
def test_escapes_decode_back(text: str) -> None:
    """Python's ``unicode_escape`` codec reads an escape back as the character it stands for."""
    out = clean(text)
    if "\\" not in text:  # a backslash typed by the user is not doubled: only then is the reading unique
        assert out.encode("ascii", "backslashreplace").decode("unicode_escape") == text


def test_a_str_subclass_comes_back_plain() -> None:
    class Loud(str):
        def __str__(self) -> str:
            raise AssertionError("not called")

    out = clean(Loud("x\x1b"))
    assert type(out) is str and out == "x\\x1b"


class Broken(Exception):
    def __str__(self) -> str:
        raise ValueError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class NotText:
    def __str__(self) -> str:
        return 3  # type: ignore[return-value]

    def __repr__(self) -> str:
        return None  # type: ignore[return-value]


def test_safe_str_and_repr_of_broken_objects_name_the_type() -> None:
    assert safe_str(Broken()) == "<Broken object (str() raised ValueError)>"
    assert safe_repr(Broken()) == "<Broken object (repr() raised RuntimeError)>"
    assert safe_str(NotText()) == "<NotText object (str() raised TypeError)>"  # __str__ returned an int
    assert safe_repr(NotText()) == "<NotText object (repr() raised TypeError)>"
    assert safe_str(SystemExit(Broken())) == "<SystemExit object (str() raised ValueError)>"
    assert clean(Broken()) == safe_str(Broken())


def test_safe_str_and_repr_of_ordinary_objects_are_str_and_repr() -> None:
    for obj in (1.5, "a'b", None, [1, "x"], ValueError("msg"), SystemExit(3)):
        assert safe_str(obj) == str(obj) and safe_repr(obj) == repr(obj)
    assert safe_str(ValueError("x\x1b[2J")) == "x\\x1b[2J"
    assert safe_repr(type("Bell\x07", (), {})()).startswith(f"<{__name__}.Bell\\x07 object")


def test_type_names_are_cleaned_and_read_past_a_metaclass() -> None:
    class Meta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            raise ValueError("no name")

    class Odd(metaclass=Meta):
        def __str__(self) -> str:
            raise KeyError("k")

    assert type_name(Odd()) == "Odd"
    assert safe_str(Odd()) == "<Odd object (str() raised KeyError)>"
    esc = type("\x1b[2J", (Exception,), {"__str__": lambda self: 1 / 0})
    assert safe_str(esc()) == "<\\x1b[2J object (str() raised ZeroDivisionError)>"


def test_base_exceptions_of_user_code_are_described_a_stop_is_not() -> None:
    class Quits:
        def __str__(self) -> str:
            raise SystemExit(0)

    class Interrupts:
        def __str__(self) -> str:
            raise KeyboardInterrupt

    assert safe_str(Quits()) == "<Quits object (str() raised SystemExit)>"
    with stop.handling():  # the CLI: no signal was delivered, so the KeyboardInterrupt is the code's
        assert safe_str(Interrupts()) == "<Interrupts object (str() raised KeyboardInterrupt)>"
    with pytest.raises(KeyboardInterrupt):  # library use: cannot be told from Ctrl-C (verify.stop)
        safe_str(Interrupts())


def test_clean_tree_cleans_keys_and_values_and_copies() -> None:
    data = {
        "summary\x1b": "a\x00b",
        "list": ["\udcff", 1, 2.5, None, True, ("t\x0c", math.inf)],
        "nested": {"k": {"\ufffe": ["x"]}},
        3: "three\r",
    }
    before = copy.deepcopy(data)
    out = clean_tree(data)
    assert out == {
        "summary\\x1b": "a\\x00b",
        "list": ["\\udcff", 1, 2.5, None, True, ("t\\x0c", math.inf)],
        "nested": {"k": {"\\ufffe": ["x"]}},
        3: "three\\r",
    }
    assert data == before  # the input is not changed
    assert out["list"] is not data["list"] and isinstance(out["list"][5], tuple)
    assert clean_tree("x\x1b") == "x\\x1b" and clean_tree(7) == 7


def test_bound_words_read_true_on_both_sides() -> None:
    from verify.text import bound_words

    assert bound_words(3e-16, 1e-12) == "<= 1e-12"
    assert bound_words(3e-3, 1e-12) == "> 1e-12 allowed"
    assert bound_words(2.5, 2.0, ".2f") == "> 2.00 allowed"
