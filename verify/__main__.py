"""``python -m verify`` = the ``rnn-verify`` command (the console script calls :func:`main` here).

:func:`main` starts with :mod:`verify.cli_front`, which imports nothing of torch: ``--help``, ``list`` and
``explain`` are answered there in a fraction of a second. :mod:`verify.cli` (torch and the numerical code, a
second or more) is imported only for a command that computes, inside the front's signal handling, so that a
Ctrl-C during those imports is answered like a Ctrl-C anywhere else: one line, exit 130, no traceback.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verify.cli_front import Backend

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run the command line; a Ctrl-C while importing prints one line and returns 130."""
    try:
        from verify.cli_front import main as front_main
    except KeyboardInterrupt:
        print("\nrnn-verify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return front_main(None, _backend)


def _backend() -> Backend:
    """The commands that compute (:data:`verify.cli.COMMANDS`), imported on first use."""
    from verify import cli
    from verify.cli_front import Backend

    return Backend(cli.COMMANDS, cli.help_values)


if __name__ == "__main__":
    sys.exit(main())
