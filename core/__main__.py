"""Entry point: `python -m core COMMAND ...` (see core/cli.py)."""

import sys

from core.cli import main

sys.exit(main())
