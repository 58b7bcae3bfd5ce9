"""Every code block of README.md and reports/README.md is executed or checked here (issue 12, case 7).

The same harness runs every page of the documentation site (``docs/**/*.md``; ``tests/test_docs.py``).
Conventions of the READMEs and the docs pages (a block that breaks them fails this test):

* ```python blocks run in document order in one namespace per file, like a tutorial session,
  in a temporary working directory. A block whose first line starts with ``>>>`` is a
  doctest: its printed output is compared with the output shown (``...`` matches anything,
  whitespace is normalised). Other blocks run as scripts; a ``test_*`` function a block
  defines with no parameters (a hypothesis ``@given`` test) is called, and a block that
  defines tests taking fixtures (the pytest-plugin example) runs under pytest in a subprocess.
* ```bash and ```yaml blocks (the ``run:`` lines of a CI workflow): every command is either
  **run** (``RUN``: cheap and side-effect free; ``rnn-verify`` in process, exit status 0),
  **parsed** (``rnn-verify`` commands with the CLI's own argparse parser, ``python -m``
  modules with theirs, ``pytest --rnn-verify-*`` flags against the plugin's registered
  options), so that a flag that does not exist fails; or **allowlisted** (``SKIPPED``:
  installs and environment set-up, with the reason). A command in none of these fails.
* ```text blocks (formulas, sample output) are not code and are not run.
* MyST directives (``:::{toctree}``) are written with colon fences: a backtick fence with a
  ``{directive}`` would be taken for a code block of an unknown language and fail.
"""

from __future__ import annotations

import argparse
import contextlib
import doctest
import importlib
import inspect
import io
import re
import shlex
import shutil
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from verify.cli import _parser
from verify.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
READMES = ("README.md", "reports/README.md")
#: the README stays an entry page (issue 23): what, why, quick start, one example, where to go next
README_MAX_LINES = 250
#: generated at build time (git-ignored): not pages anyone wrote
GENERATED = ("docs/_build/", "docs/auto_examples/", "docs/reference/generated/")


def docs_pages() -> list[str]:
    """Every markdown page of the documentation site, in a stable order."""
    found = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    return [p for p in found if not p.startswith(GENERATED)]


PAGES = (*READMES, *docs_pages())
LANGS = ("python", "bash", "yaml", "text")

#: commands that are run for real (cheap, write only into the temporary folder / read the repository)
RUN = (
    "rnn-verify list",
    "rnn-verify list --claims 'fpp.*' --json",
    "rnn-verify list --profile full --markdown",
)
#: the golden-vector example reads golden.npz / golden.json from the working folder: the committed
#: copies (reports/golden, verified by tests/cli/test_golden.py) are put there, as
#: `rnn-verify golden --out golden.npz` (parsed here; ~20 s to run) would write them
GOLDEN = ROOT / "reports" / "golden"
#: commands that are neither run nor parsed, and why (prefix match on the command line)
SKIPPED = {
    "python3 -m venv": "creates a virtual environment (installing is the CI's job: .ci/run)",
    ".venv/bin/pip install": "installs packages (.ci/run does it from scratch)",
    "pip install": "installs packages (.ci/run does it from scratch)",
    ".venv/bin/python -m pytest": "runs the whole test suite (this test is part of it)",
    "source .venv/bin/activate": "activates the virtual environment (shell set-up)",
    "uses:": "a GitHub Actions step, not a command",
    "git clone": "fetches a third-party library (tests/test_examples_family.py uses RNN_VERIFY_VANILLA_RTRL)",
    "export ": "sets an environment variable (shell set-up)",
    "tox ": "creates tox environments and installs into them (tests/test_tox.py checks their configuration)",
}

#: a paper or design file a user of the package does not have
UNSHIPPED = re.compile(r"seeds/|DESIGN\.md|(?<![\w-])(?<!docs/)(?!README\.md|CHANGELOG\.md|report\.md)[\w-]+\.md\b")
#: the repository's own documentation pages a README may point to (they must exist)
DOCS = re.compile(r"\bdocs/[\w./-]+\.md\b")


@dataclass(frozen=True)
class Block:
    path: str
    lineno: int
    lang: str
    body: str


_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>```+)(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.M | re.S
)


def blocks(path: str) -> list[Block]:
    text = (ROOT / path).read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        body = textwrap.dedent(m.group("body")) if m.group("indent") else m.group("body")
        out.append(Block(path, text.count("\n", 0, m.start()) + 1, m.group("lang"), body))
    return out


def test_readme_is_an_entry_page() -> None:
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES}): move detail into docs/"


@pytest.mark.parametrize("path", PAGES)
def test_fences_are_balanced_and_every_block_has_a_known_language(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    fences = re.findall(r"^[ \t]*```", text, re.M)
    assert len(fences) % 2 == 0, f"{path}: unbalanced code fences"
    found = blocks(path)
    assert len(found) == len(fences) // 2, f"{path}: a fence the extractor does not understand"
    for b in found:
        assert b.lang in LANGS, f"{path}:{b.lineno}: code block without a known language ({b.lang!r})"
    # an indented (4-space) code block would escape this test: fenced blocks only
    lines = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text).splitlines()
    for i, line in enumerate(lines[1:], 2):
        assert not (line.startswith("    ") and line.strip() and not lines[i - 2].strip()), (
            f"{path}:{i}: indented code block; use a fenced ```text (or ```python) block"
        )


def test_papers_are_cited_in_full() -> None:
    from theory.papers import PAPERS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [k for k, p in PAPERS.items() if p.citation() not in readme]
    assert not missing, f"README.md's Papers section lacks the full citation of {missing} (theory/papers.py)"


def test_no_unshipped_files_are_cited() -> None:
    for path in READMES:
        text = (ROOT / path).read_text(encoding="utf-8")
        bad = sorted({m.group(0) for m in UNSHIPPED.finditer(DOCS.sub("", text))})
        bad += sorted({m.group(0) for m in DOCS.finditer(text) if not (ROOT / m.group(0)).is_file()})
        assert not bad, f"{path} points users to files they do not have: {bad}"


# ------------------------------------------------------------------ commands
def _commands(block: Block) -> list[str]:
    """The shell commands of a bash block, or the ``run:`` commands of a CI workflow."""
    lines = []
    for raw in block.body.splitlines():
        line = raw.strip()
        if block.lang == "yaml":
            m = re.match(r"-?\s*(run|uses):\s*(.*)", line)
            if not m:
                continue
            line = m.group(2) if m.group(1) == "run" else f"uses: {m.group(2)}"
        line = re.sub(r"\s+#.*$", "", line) if not line.startswith("#") else ""
        if line:
            lines += [c.strip() for c in re.split(r"&&|;", line) if c.strip()]
    return lines


class _Parsed(Exception):
    """Raised after a module's argparse parser accepted the arguments (nothing is run)."""


def _parse_module(module: str, args: list[str]) -> None:
    """``python -m module args``: parse ``args`` with the module's own parser, then stop."""
    mod = importlib.import_module(module)
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        original(self, *a, **k)
        raise _Parsed

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
        try:
            mod.main(args)
        except _Parsed:
            return
    raise AssertionError(f"python -m {module}: main() returned without parsing its arguments")


def _check_command(cmd: str, config: pytest.Config, where: str) -> str:
    """Run, parse or skip one command; returns what was done."""
    if cmd in RUN:
        argv = shlex.split(cmd)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            rc = cli_main(argv[1:])
        assert rc == 0, f"{where}: `{cmd}` exited {rc}:\n{out.getvalue()[-2000:]}"
        return "run"
    for prefix, why in SKIPPED.items():
        if cmd.startswith(prefix):
            assert why
            return "skipped"
    argv = shlex.split(cmd)
    if argv[0].endswith("rnn-verify"):
        try:
            _parser().parse_args(argv[1:])
        except SystemExit as exc:
            raise AssertionError(f"{where}: `{cmd}` is not accepted by the rnn-verify parser") from exc
        return "parsed"
    if argv[:2] == ["python", "-m"] and argv[2] != "pytest":
        try:
            _parse_module(argv[2], argv[3:])
        except SystemExit as exc:
            raise AssertionError(f"{where}: `{cmd}` is not accepted by {argv[2]}'s parser") from exc
        return "parsed"
    if argv[0] == "pytest":
        flags = [a.split("=", 1)[0] for a in argv[1:] if a.startswith("--")]
        assert flags, f"{where}: `{cmd}` uses no option to check"
        for flag in flags:
            try:
                config.getoption(flag)
            except ValueError as exc:
                raise AssertionError(f"{where}: `{cmd}`: pytest has no option {flag}") from exc
        return "parsed"
    raise AssertionError(f"{where}: `{cmd}` is neither run, parsed nor allowlisted; add it to RUN or SKIPPED")


# -------------------------------------------------------------------- python
def _doctest(block: Block, globs: dict[str, Any]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.body, globs, f"{block.path}:{block.lineno}", block.path, block.lineno)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    runner.run(test, out=out.write, clear_globs=False)
    globs.update(test.globs)  # DocTest works on a copy: later blocks see what this one defined
    assert runner.failures == 0, f"{block.path}:{block.lineno}: the README's output differs:\n{out.getvalue()}"


def _plugin_example(block: Block, tmp: Path) -> None:
    """A block defining tests that take fixtures: run it under pytest (the plugin is installed)."""
    test_file = tmp / "test_readme_plugin_example.py"
    test_file.write_text(block.body, encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()) as out:  # in process: no second interpreter start-up
        rc = pytest.main([str(test_file), "-q", "-p", "no:cacheprovider", "-W", "error", "--rootdir", str(tmp)])
    assert rc == 0, f"{block.path}:{block.lineno}: the example's tests fail:\n{out.getvalue()[-3000:]}"
    assert " passed" in out.getvalue()


def _script(block: Block, globs: dict[str, Any], tmp: Path) -> str:
    before = set(globs)
    code = compile(block.body, f"{block.path}:{block.lineno}", "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, globs)
    new_tests = [k for k in globs if k not in before and k.startswith("test_") and callable(globs[k])]
    for name in new_tests:
        fn = globs[name]
        params = inspect.signature(fn).parameters
        if params:  # fixtures: only pytest can run it
            _plugin_example(block, tmp)
            return "run under pytest"
        with contextlib.redirect_stdout(io.StringIO()):
            fn()  # a hypothesis @given test runs its examples
    return "run"


@pytest.mark.parametrize("path", READMES)
def test_readme_code_blocks(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    """Run every block of ``path`` in order (see the module docstring); report what was done with each."""
    done = run_page(path, tmp_path, monkeypatch, pytestconfig)
    assert done, f"{path}: no code block found"
    if path == "README.md":
        assert done.get("doctest", 0) >= 1 and done.get("command parsed", 0) >= 4 and done.get("command run", 0) >= 2


def run_page(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config) -> dict[str, int]:
    """Run every block of the page ``path`` in order; returns how many blocks/commands were run, parsed, skipped."""
    monkeypatch.chdir(ROOT if path == "reports/README.md" else tmp_path)
    for name in ("golden.npz", "golden.json"):
        shutil.copy(GOLDEN / name, tmp_path / name)
    globs: dict[str, Any] = {"__name__": "readme"}
    done: dict[str, int] = {}
    seconds: list[tuple[float, str]] = []
    for b in blocks(path):
        t0 = time.perf_counter()
        where = f"{b.path}:{b.lineno}"
        if b.lang == "python":
            what = "doctest" if b.body.lstrip().startswith(">>>") else "script"
            if what == "doctest":
                _doctest(b, globs)
            else:
                what = _script(b, globs, tmp_path)
            done[what] = done.get(what, 0) + 1
        elif b.lang in ("bash", "yaml"):
            for cmd in _commands(b):
                what = _check_command(cmd, pytestconfig, where)
                done[f"command {what}"] = done.get(f"command {what}", 0) + 1
        seconds.append((time.perf_counter() - t0, where))
    print(f"{path}: {done}; slowest blocks: " + ", ".join(f"{w} {t:.1f}s" for t, w in sorted(seconds)[::-1][:5]))
    return done


def test_the_checker_fails_on_a_wrong_flag(pytestconfig: pytest.Config) -> None:
    """The command checks can fail: an unknown flag, an unknown module option, an unknown pytest option."""
    with pytest.raises(AssertionError, match="not accepted"):
        _check_command("rnn-verify run --no-such-flag", pytestconfig, "x")
    with pytest.raises(AssertionError, match="not accepted"):
        _check_command("python -m verify.bench.gpu --no-such-flag", pytestconfig, "x")
    with pytest.raises(AssertionError, match="no option"):
        _check_command("pytest --rnn-verify-no-such-option", pytestconfig, "x")
    with pytest.raises(AssertionError, match="neither run"):
        _check_command("make install", pytestconfig, "x")
    assert _check_command("python -m verify.bench.gpu --sizes 64 256", pytestconfig, "x") == "parsed"


def test_a_wrong_sample_output_fails() -> None:
    with pytest.raises(AssertionError, match="output differs"):
        _doctest(Block("x.md", 1, "python", ">>> print(1 + 1)\n3\n"), {})
