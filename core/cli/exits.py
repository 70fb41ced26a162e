"""The exit status of every `python -m core` command, in one table: each command's `--help` ends with its own
(core.cli.app puts them in the epilogs) and README's "Exit status" table is the same text.

Every command: 0 done, 1 an error printed as `error: ...` on stderr (bad input, a refusal, ZooKeeper or the brokers
unreachable), 2 a usage error (argparse: unknown option, missing argument), 130 interrupted (Ctrl-C). A few also
answer a question with 3 ("not yet", "not safe"): a script can wait on it, e.g. `until python -m core verify ...;
do sleep 10; done` - unlike kafka-reassign-partitions.sh --verify, which exits 0 whether or not the reassignment
has finished.
"""

from __future__ import annotations

import argparse
import textwrap

ERROR = "error, printed as 'error: ...' on stderr"
USAGE = "usage error (an unknown option, a missing argument)"
INTERRUPTED = "interrupted (Ctrl-C)"

# What 0 means, when it says more than "done", and the codes a command adds to 1, 2 and 130.
SPECIFIC: dict[str, dict[int, str]] = {
    "elect": {0: "every partition of the election has its preferred leader (or --no-wait, --dry-run)",
              1: "also: the controller did not finish the election within --timeout",
              3: "the controller finished but some partitions did not get their preferred leader (it is not in "
                 "the ISR, or down)"},
    "verify": {0: "every partition of the plan is at its target (or no longer exists); throttles removed",
               3: "not finished: a partition is still being reassigned or is not at its target "
                  "(kafka-reassign-partitions.sh --verify exits 0 either way)"},
    "restart-plan": {3: "some partitions cannot stay available in any order (they are listed per step)"},
    "restart-check": {0: "safe to stop the broker now",
                      3: "not safe to stop it now (after --wait seconds, when given)"},
    "log-dirs-execute": {1: "also: a broker refused a move, or moves not finished within --timeout"},
    "fleet collect": {1: "also: a cluster could not be read (the others were collected)"},
    "migration-drift": {0: "no difference between ZooKeeper and the brokers lasted --lasting seconds (default 30)",
                        3: "a difference lasted --lasting seconds or more (each is listed with its age)"},
}


def statuses(command: str, specific: dict[str, dict[int, str]] = SPECIFIC) -> dict[int, str]:
    """Exit status -> meaning, for `command` ("verify", "fleet collect"); `specific`: another CLI's table
    (`python -m sandbox` has its own)."""
    own = specific.get(command, {})
    out = {0: own.get(0, "done"), 1: ERROR + (f"; {own[1].removeprefix('also: ')}" if 1 in own else ""),
           2: USAGE}
    out.update((code, text) for code, text in own.items() if code not in (0, 1))
    out[130] = INTERRUPTED
    return dict(sorted(out.items()))


HEADING = "exit status:"


def epilog(command: str, specific: dict[str, dict[int, str]] = SPECIFIC) -> str:
    """One line per status, under "exit status:"."""
    return "\n".join([HEADING] + [f"  {code:<4} {text}" for code, text in statuses(command, specific).items()])


class _Formatter(argparse.HelpFormatter):
    """argparse's own, except that the exit statuses keep one line each (wrapped under their text)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if not text.startswith(HEADING):
            return super()._fill_text(text, width, indent)
        lines = text.splitlines()
        return "\n".join([indent + lines[0]] + [textwrap.fill(line, width, initial_indent=indent,
                                                               subsequent_indent=indent + " " * 7,
                                                               break_on_hyphens=False)
                                                 for line in lines[1:]])


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every runnable command under `parser`, by its full name ("verify", "fleet collect")."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix}{name}"
                nested = commands(sub, full + " ")
                out.update(nested or {full: sub})
    return out


def overview(parser: argparse.ArgumentParser, specific: dict[str, dict[int, str]] = SPECIFIC) -> str:
    """For `python -m core --help`: the statuses every command shares, and which commands answer with 3."""
    answering = [name for name in commands(parser) if 3 in statuses(name, specific)]
    return "\n".join([HEADING, "  0    done", f"  1    {ERROR}", f"  2    {USAGE}",
                      f"  3    done, but the answer is no (not finished, not safe, not all elected): "
                      f"{', '.join(answering)}; each command's --help says what its statuses mean", f"  130  {INTERRUPTED}"])


def add_epilogs(parser: argparse.ArgumentParser, specific: dict[str, dict[int, str]] = SPECIFIC) -> None:
    """Each command's --help ends with its exit statuses; the top level's with what they share."""
    parser.epilog, parser.formatter_class = overview(parser, specific), _Formatter
    for name, sub in commands(parser).items():
        if sub.epilog:  # not lost, but argparse has one epilog: ours goes last, in its own paragraph
            raise AssertionError(f"{name} has an epilog of its own: merge it into core.cli.exits")
        sub.epilog, sub.formatter_class = epilog(name, specific), _Formatter


__all__ = ["SPECIFIC", "add_epilogs", "commands", "epilog", "statuses"]
