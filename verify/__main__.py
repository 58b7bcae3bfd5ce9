"""``python -m verify`` = the ``rnn-verify`` command."""

import sys

from verify._entry import main

sys.exit(main())
