"""``python -m focused`` is the ``focused`` command line."""

import sys

from focused.cli import main

sys.exit(main())
