"""Text from code under test on the terminal and in the report (issue 36, item 6 and its "Why" list):
an exception whose ``__str__``/``__repr__`` raises, ``SystemExit`` of such an object, control characters and
lone surrogates in a message, a non-UTF-8 ``--out`` under ``LANG=C``: each a verdict or a one-line exit 2,
never a traceback, and no raw control character on stdout/stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli_in
from verify.config import RunConfig
from verify.errors import AssumptionViolated
from verify.verdict import CheckResult, Verdict

CID = "reference.adjoint"
ROOT = Path(__file__).resolve().parents[2]


class Broken(Exception):
    """An exception whose message cannot be read: ``str()`` and ``repr()`` raise."""

    def __str__(self) -> str:
        raise ValueError("no str")

    def __repr__(self) -> str:
        raise ValueError("no repr")


class BrokenPremise(AssumptionViolated):
    def __init__(self) -> None:
        super().__init__("p", 1)

    def __str__(self) -> str:
        raise RuntimeError("no str")


class NoRepr:
    def __repr__(self) -> str:
        raise ValueError("no repr")


def raw_controls(text: str) -> list[str]:
    """Characters that must not reach a terminal raw: controls but \\n and \\t, surrogates, noncharacters."""
    return [
        c
        for c in text
        if (unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t")
        or (ord(c) & 0xFFFE) == 0xFFFE
        or 0xFDD0 <= ord(c) <= 0xFDEF
    ]


def _raises(exc: BaseException) -> Callable[[RunConfig], CheckResult]:
    def fn(config: RunConfig) -> CheckResult:
        raise exc

    return fn


def _run(fake_checks: Callable[..., None], tmp_path: Path, fn: Callable[[RunConfig], CheckResult], *extra: str):  # type: ignore[no-untyped-def]
    fake_checks({CID: fn})
    code, text = run_cli_in(tmp_path, ["run", "--claims", CID, "--out", "o", *extra])
    assert "Traceback" not in text, text
    assert not raw_controls(text), raw_controls(text)
    return code, text


def _report(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    ET.parse(tmp_path / "o" / "junit.xml")
    return json.loads((tmp_path / "o" / "results.json").read_bytes().decode("utf-8"))  # type: ignore[no-any-return]


def test_a_check_raising_an_exception_with_a_broken_str_is_a_fail_naming_the_type(
    fake_checks: Callable[..., None], tmp_path: Path
) -> None:
    code, text = _run(fake_checks, tmp_path, _raises(Broken()))
    assert code == 1
    said = "check raised Broken: <Broken object (str() raised ValueError)>"
    assert f"FAIL {CID}: {said}" in text
    rec = _report(tmp_path)["claims"][0]
    assert rec["verdict"] == "FAIL" and rec["summary"].startswith(said)
    assert "Broken: <exception str() failed>" in rec["reason"]  # the traceback, as Python words it


def test_sys_exit_of_an_object_with_a_broken_repr_is_a_fail(fake_checks: Callable[..., None], tmp_path: Path) -> None:
    code, text = _run(fake_checks, tmp_path, _raises(SystemExit(NoRepr())), "-v")  # -v: the whole summary
    assert code == 1
    assert "SystemExit(<NoRepr object (repr() raised ValueError)>): code under test called sys.exit()" in text
    assert _report(tmp_path)["claims"][0]["verdict"] == "FAIL"


def test_a_premise_whose_message_cannot_be_read_is_inconclusive(
    fake_checks: Callable[..., None], tmp_path: Path
) -> None:
    code, text = _run(fake_checks, tmp_path, _raises(BrokenPremise()))
    assert code == 0
    assert f"INCONCLUSIVE {CID}: <BrokenPremise object (str() raised RuntimeError)>" in text


def test_control_characters_and_surrogates_are_escaped_on_the_terminal_and_in_every_file(
    fake_checks: Callable[..., None], tmp_path: Path
) -> None:
    raw = "file /home/u/\udcff.py \x1b[31mred\x1b[0m\x00 \x0c\r\ufffe"
    shown = "file /home/u/\\udcff.py \\x1b[31mred\\x1b[0m\\x00 \\x0c\\r\\ufffe"

    def fn(config: RunConfig) -> CheckResult:
        return CheckResult(CID, Verdict.FAIL, raw, reason=raw, findings=(raw,))

    code, text = _run(fake_checks, tmp_path, fn, "--junit", "j.xml", "--json", "r.json")
    assert code == 1
    assert f"FAIL {CID}: {shown}" in text and f"-- {shown}" in text  # the verdict line and the FINDING line
    doc = _report(tmp_path)
    assert doc["claims"][0]["summary"] == shown and doc["claims"][0]["findings"] == [shown]
    ET.parse(tmp_path / "j.xml")
    assert json.loads((tmp_path / "r.json").read_bytes().decode("utf-8")) == doc
    for name in ("report.md", "report.html"):
        page = (tmp_path / "o" / name).read_bytes().decode("utf-8")
        assert not raw_controls(page) and "x1b[31mred" in page.replace("\\[", "[")


def test_json_on_stdout_is_valid_utf8(fake_checks: Callable[..., None], tmp_path: Path) -> None:
    def fn(config: RunConfig) -> CheckResult:
        return CheckResult(CID, Verdict.PASS, "ok \udcff\x1b")

    fake_checks({CID: fn})
    code, text = run_cli_in(tmp_path, ["run", "--claims", CID, "--no-report", "--json", "-"])
    assert code == 0 and not raw_controls(text)
    start = text.index("{")
    doc = json.JSONDecoder().raw_decode(text[start:])[0]
    assert doc["claims"][0]["summary"] == "ok \\udcff\\x1b"


def test_an_out_folder_that_is_not_utf8_is_written_and_named_escaped(
    fake_checks: Callable[..., None], tmp_path: Path
) -> None:
    """``--out`` as Python decodes a non-UTF-8 argument (``os.fsdecode``): the folder gets the user's bytes,
    results.json's ``run.command`` the escape (it held the surrogate: exit 2 after all the compute)."""
    fake_checks({CID: lambda config: CheckResult(CID, Verdict.PASS, "ok")})
    out = os.fsdecode(b"o\xff")
    code, text = run_cli_in(tmp_path, ["run", "--claims", CID, "-q", "--out", out])
    assert code == 0, text
    doc = json.loads((tmp_path / out / "results.json").read_bytes().decode("utf-8"))
    assert (tmp_path / os.fsdecode(b"o\xff")).is_dir() and b"o\xff" in os.listdir(os.fsencode(tmp_path))
    assert "--out 'o\\udcff'" in doc["run"]["command"]
    ET.parse(tmp_path / out / "junit.xml")


def test_lang_c_with_a_non_utf8_out_in_a_real_process(tmp_path: Path) -> None:
    """The issue's case end to end: ``LANG=C``, ``--out`` bytes that are not UTF-8, a fake check (seconds)."""
    script = textwrap.dedent(
        f"""
        import sys
        import verify.cli as cli, verify.run.check as check_mod
        from verify.verdict import CheckResult, Verdict
        check_mod.registry = lambda: {{"{CID}": lambda c: CheckResult("{CID}", Verdict.PASS, "ok")}}
        cli.available_cpus = lambda: 1
        sys.exit(cli.main())
        """
    )
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", script, "run", "--claims", CID, "-q", "--out", b"out\xff"]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    doc = json.loads((tmp_path.joinpath(os.fsdecode(b"out\xff")) / "results.json").read_bytes().decode("utf-8"))
    assert "'out\\udcff'" in doc["run"]["command"]


# ------------------------------------------------------------------ --impl
IMPL_SOURCES = {
    "import raises": "class Broken(Exception):\n    def __str__(self):\n        raise ValueError('no')\n"
    "raise Broken()\n",
    "sys.exit at import": "import sys\nclass NoRepr:\n    def __repr__(self):\n        raise ValueError('no')\n"
    "sys.exit(NoRepr())\n",
    "load check raises": "class Broken(Exception):\n    def __str__(self):\n        raise ValueError('no')\n"
    "class X:\n    def __init__(self, *a, **k):\n        raise Broken()\n",
    "message with controls": "raise RuntimeError('bad \\x1b[2J\\x00 file \\udcff')\n",
}
IMPL_SAYS = {
    "import raises": "raised Broken: <Broken object (str() raised ValueError)>",
    "sys.exit at import": "raised SystemExit(<NoRepr object (repr() raised ValueError)>): the code called sys.exit()",
    "load check raises": "building the estimator raised Broken: <Broken object (str() raised ValueError)>",
    "message with controls": "raised RuntimeError: bad \\x1b[2J\\x00 file \\udcff",
}


@pytest.mark.parametrize("case", list(IMPL_SOURCES))
def test_an_impl_whose_exception_cannot_be_read_is_exit_2_in_one_line(tmp_path: Path, case: str) -> None:
    (tmp_path / "mine.py").write_text(IMPL_SOURCES[case])
    spec = "uoro=mine.py:X"
    code, text = run_cli_in(tmp_path, ["run", "--claims", "uoro.unbiased-statistical", "--no-report", "--impl", spec])
    assert code == 2, text
    assert "Traceback" not in text and not raw_controls(text)
    (line,) = text.strip().splitlines()
    assert line.startswith(f"rnn-verify: error: --impl {spec}: ") and IMPL_SAYS[case] in line
