"""Entry point: `python -m sandbox COMMAND ...` (see sandbox/cli.py)."""

import sys

from sandbox.cli import main

sys.exit(main())
