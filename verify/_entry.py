"""The ``rnn-verify`` console script and ``python -m verify``: :func:`verify.cli.main`, with Ctrl-C during its
imports (torch takes a second or two) answered like Ctrl-C anywhere else -- one line, exit 130, no traceback."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Import the command line and run it; a Ctrl-C while importing prints one line and returns 130."""
    try:
        from verify.cli import main as cli_main
    except KeyboardInterrupt:
        print("\nrnn-verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli_main()
