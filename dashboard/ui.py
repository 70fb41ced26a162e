"""Small building blocks every page shares: rows of metrics that stay readable at any width, and links between
views (a topic, a broker, an action in History) that are URLs too.

Metrics: a row is a wrapping horizontal container and each metric takes the width of its own label and value, so
a narrow window (900 px with the sidebar open leaves ~550 px) moves metrics to the next line instead of cutting
"Replicas moved 226" to "2.". Labels are short; the long form goes in the help tooltip.

Links: every view's state that matters is in its URL (widgets bound to query parameters: `?topic=`, `?broker=`,
`?goal=` ...), so a link is a page plus query parameters; st.page_link keeps the session (no reload).

Number fields: int_field / float_field are text inputs read by core.numbers, never st.number_input. A browser number
input holds a JavaScript double: it silently drops a whole number above 2**53 - 1 and silently keeps the previous
value for one outside its min / max (so would text_input's `validate` and `required`, which hold back text the
browser refuses, and `max_chars`, which cuts it: none is used). Here what was typed reaches the server as typed:
the exact value, or an error under the field (the field's `errors` container) and no value, so the page offers no
write.
Commands to copy: `commands` shows each as shell-quoted argv (shlex.join) in one st.code block, copyable as is. A
code span in markdown would show the escapes that keep cluster values text (`127\\.0.0.1\\:9092`, `\\_\\_consumer\\_offsets`).
Only the "Page (of N)" pickers of long tables stay number inputs: they choose which rows of a read-only table show,
bounded by the page count, the caption says which rows are on screen, and nothing is written from them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st

from core.errors import NumberFormatError
from core.numbers import format_number, parse_float, parse_int

TOPICS = "views/topics.py"
BROKERS = "views/brokers.py"
BROKER = "views/broker.py"
REASSIGN = "reassign/page.py"
HISTORY = "views/history.py"


def commands(*argvs: Sequence[str], container: Any = None) -> str:
    """Commands to copy, one per line, each an argv shell-quoted: one st.code block (language bash). Returns its
    text. Placeholders the reader replaces (HOST:PORT, plan.json) need no quoting: keep them free of <>|&;."""
    text = "\n".join(shlex.join(str(a) for a in argv) for argv in argvs)
    (container or st).code(text, language="bash", wrap_lines=True)
    return text


def metric_row(container: Any = None):
    """A row of metrics that wraps onto more lines when the window is narrow."""
    return (container or st).container(horizontal=True, gap="small")


def metric(row, label: str, value: Any, *, help: str | None = None, **kwargs) -> None:
    """A bordered metric as wide as its label and value (never truncated)."""
    row.metric(label, value, help=help, border=True, width="content", **kwargs)


def broker_link(broker_id: int, *, label: str | None = None, container: Any = None, help: str | None = None
                ) -> None:
    (container or st).page_link(BROKER, label=label or f"Broker {broker_id}", icon=":material/dns:",
                                query_params={"broker": str(broker_id)}, help=help)


def broker_links(broker_ids, *, alive=None, container: Any = None) -> None:
    """One link per broker, in a wrapping row: "Broker 3", "Broker 2 (down)"."""
    row = (container or st).container(horizontal=True, gap="small")
    alive = set(broker_ids) if alive is None else set(alive)
    for b in broker_ids:
        broker_link(b, label=f"Broker {b}" + ("" if b in alive else " (down)"), container=row)


def action_link(action_id: int, *, container: Any = None, label: str | None = None) -> None:
    """"Action #N in History": opens History at that action (`?action=N`)."""
    (container or st).page_link(HISTORY, label=label or f"Action #{action_id} in History", icon=":material/history:",
                                query_params={"action": str(action_id)})


def selected_row(event, df) -> dict | None:
    """The row a single-row selection of st.dataframe points at (None when nothing is selected)."""
    try:
        rows = event.selection.rows
    except AttributeError:
        return None
    if not rows or rows[0] >= len(df):
        return None
    return df.iloc[rows[0]].to_dict()


# --- number fields ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NumberField:
    """What a number field holds: `value` (None when blank and optional, or invalid) or `error`."""

    value: int | float | None
    error: NumberFormatError | None = None
    disabled: bool = False

    @property
    def invalid(self) -> bool:
        """The field blocks the page's write: its text is not a number it accepts (a disabled field never does)."""
        return self.error is not None and not self.disabled


def invalid(*fields: NumberField) -> bool:
    return any(f.invalid for f in fields)


def _number_field(parse: Callable, label: str, default: int | float | None, key: str, *, container: Any,
                  errors: Any, name: str | None, minimum, maximum, optional: bool, help: str | None,
                  placeholder: str | None, disabled: bool, width: Any) -> NumberField:
    from dashboard.text import md_text

    text = (container or st).text_input(label, value=format_number(default), key=key, help=help,
                                        placeholder=placeholder, disabled=disabled, width=width)
    try:
        value = parse(text, name or label, minimum=minimum, maximum=maximum, optional=optional)
    except NumberFormatError as e:
        if not disabled:
            (errors or container or st).error(md_text(e), icon=":material/error:")
        return NumberField(None, e, disabled)
    return NumberField(value, None, disabled)


def int_field(label: str, default: int | None, *, key: str, container: Any = None, errors: Any = None,
              name: str | None = None, min: int | None = None, max: int | None = None, optional: bool = False,
              help: str | None = None, placeholder: str | None = None, disabled: bool = False,
              width: Any = "stretch") -> NumberField:
    """A whole-number field: `.value` is exactly the int typed (None when blank and `optional`). Otherwise
    `.error` and the message under the field (in `errors`, else in `container`). `name` is the field in the message
    (default: the label). Give `min` / `max` only where the engine has no bound of its own: a value it bounds is
    passed on as typed, so the page shows the engine's message (the CLI's)."""
    return _number_field(parse_int, label, default, key, container=container, errors=errors, name=name,
                         minimum=min, maximum=max, optional=optional, help=help, placeholder=placeholder,
                         disabled=disabled, width=width)


def float_field(label: str, default: float | None, *, key: str, container: Any = None, errors: Any = None,
                name: str | None = None, min: float | None = None, max: float | None = None, optional: bool = False,
                help: str | None = None, placeholder: str | None = None, disabled: bool = False,
                width: Any = "stretch") -> NumberField:
    """As int_field, for a finite decimal number (12.5, 1e3)."""
    return _number_field(parse_float, label, default, key, container=container, errors=errors, name=name,
                         minimum=min, maximum=max, optional=optional, help=help, placeholder=placeholder,
                         disabled=disabled, width=width)
