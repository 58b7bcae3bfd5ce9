"""``python -m verify`` = the ``rnn-verify`` command."""

import sys

from verify.cli import main

sys.exit(main())
