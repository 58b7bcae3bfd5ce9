"""The front of the command (issue 41): ``--help``, ``list`` and ``explain`` without torch, exit-code tables
once per command, ``run --help`` naming every ``--impl`` family, quiet on a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify.cli import _parser
from verify.exit_codes import COMMANDS, EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_PIPE, EXIT_TERMINATED
from verify.impl import FAMILIES
from verify.impl.loader import ALIASES

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

#: runs ``rnn-verify ARGV`` as the console script does, then says on stderr which heavy modules got imported
_PROBE = """\
import sys
from verify.__main__ import main
sys.argv = ["rnn-verify", *sys.argv[1:]]
try:
    code = main()
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "numpy", "verify.cli", "matplotlib") if m in sys.modules)
sys.stderr.write(f"\\nHEAVY={','.join(heavy)}\\n")
sys.exit(code)
"""


@pytest.mark.parametrize(
    "argv", [["--help"], ["list"], ["list", "-k", "uoro and not variance"], ["explain", "rtrl.exact"], ["--version"]]
)
def test_help_list_and_explain_import_no_torch(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], env=ENV, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "HEAVY=", proc.stderr


def test_a_computing_command_loads_the_rest() -> None:
    """``run --help`` (its values come from the numerical modules) and ``run`` go through verify.cli."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "run", "--help"], env=ENV, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "verify.cli" in proc.stderr.splitlines()[-1]


def _help(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        _parser().parse_args([*argv, "--help"])
    return capsys.readouterr().out


def test_run_help_names_every_impl_family(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(_help("run", capsys=capsys).split())
    for name in (*FAMILIES, *ALIASES):
        assert f" {name}," in text or f" {name} or family.field" in text, name
    for name in ("kfrtrl", "ok", "snap", "rflo", "eprop"):  # the ones issue 41 found missing
        assert name in text
    assert "{" not in text.replace("{ci,full}", "").replace("{float64,float32}", "").replace(
        "{fail,inconclusive}", ""
    ).replace("{auto,yes,no}", "")  # every placeholder filled


def test_top_level_help_lists_the_shared_codes_once(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys=capsys)
    lines = text.splitlines()
    for code in (EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HANGUP):
        assert sum(ln.strip().startswith(f"{code} ") for ln in lines) == 1, code
    for command in COMMANDS:
        assert f"rnn-verify {command}:" in text
    assert str(EXIT_PIPE) in text


@pytest.mark.parametrize("argv", [["list"], ["list", "--json"], ["explain", "uoro.exact-expectation"], ["--help"]])
def test_closed_pipe_is_quiet(argv: list[str]) -> None:
    """``rnn-verify list | head -1``: no "Broken pipe", no traceback; the code says SIGPIPE (141)."""
    with subprocess.Popen(
        [sys.executable, "-m", "verify", *argv], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as head -1 does
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert err == "" and code in (0, EXIT_PIPE), (code, err)
    if argv == ["list", "--json"]:  # 125 kB, more than a pipe holds: the write did hit the closed pipe
        assert code == EXIT_PIPE


def test_closed_pipe_in_a_shell_pipeline() -> None:
    """The issue's own command: ``rnn-verify list | head -1`` prints one line and nothing on stderr."""
    cmd = f"{sys.executable} -m verify list | head -1; {sys.executable} -m verify list --json | head -c 10"
    proc = subprocess.run(["sh", "-c", cmd], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.stderr == "" and proc.stdout.startswith("reference.adjoint "), proc.stderr
    assert proc.stdout.splitlines()[1] == "[", proc.stdout
