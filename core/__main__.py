"""Entry point: `python -m core COMMAND ...` (see core/cli/)."""

import sys

from core.cli.app import main

sys.exit(main())
