"""The command line, one module per subject: `common` (options and session opening shared by every command),
`io` (input files and outputs), `cluster` (describe, snapshot, assign), `topics`, `leaders`, `reassign`; `app`
builds the parser. The fleet commands register here too (the sandbox's are `python -m sandbox`: sandbox/cli.py).
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from core.cli.app import main as run  # deferred: `import core.cli.common` must not load every command

    return run(argv)


def build_parser():
    from core.cli.app import build_parser as build

    return build()
