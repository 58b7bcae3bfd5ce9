"""``python -m verify`` = the ``rnn-verify`` command (the console script calls :func:`main` here).

:func:`main` imports :mod:`verify.cli` itself, so that a Ctrl-C during those imports (torch takes a
second or two) is answered like a Ctrl-C anywhere else: one line, exit 130, no traceback.
"""

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


if __name__ == "__main__":
    sys.exit(main())
