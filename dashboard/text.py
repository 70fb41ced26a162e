"""Showing values that come from a cluster as text, never as markdown.

Streamlit renders markdown in almost every string a page passes it: st.markdown / caption / alerts, widget labels,
expander and tab titles, metric labels and values, help tooltips and st.table cells. A broker rack, a topic name, a
config value or an error message quoting them is data written by whoever can write to ZooKeeper: interpolated raw,
`![r](http://host/x)` makes every browser showing the page fetch that URL, `__x__` (a legal topic name) shows as a
bold "x", `:red[...]` recolours text. Every such value goes through `md` (`md_text` for whole messages) before it
meets markdown, also where it used to sit in backticks (Streamlit still expands `:material/..:` inside code spans),
and never inside a code span (its escapes show there): a command to copy is an st.code block of shell-quoted values.
Tables of cluster data are st.dataframe, whose cells are plain text.
Plotly does its own HTML-like markup in labels and hover texts: `plotly` escapes for it.

Escaping does not stop links: GFM's autolink literals (`www.x`, `http://x`, `a@b.c`) are found by remark-gfm in the
parsed text, after escapes are resolved, so a topic `www.evil-topic.example`, a cluster id `http://...` or a group
id `ops@evil.example` would be a clickable link. `md` puts an empty `:small[]` between "www" and ".", "http(s)" and "://",
"@" and its domain: Streamlit draws it as an empty <span>, which splits the text where the link would start. Nothing
of it is shown or copied (a zero-width character would be copied with the text and break a pasted topic name or
address); tests/dashboard/test_dashboard_markdown.py checks both in Chromium.
"""

from __future__ import annotations

import html
import re

# CommonMark shows a backslash-escaped ASCII punctuation character literally, whatever its context. Escaped anywhere:
# what can start emphasis (* _ ~), code (`), a link or image ([ ] ( ) !), raw HTML or an autolink (< >), an entity
# (&), math ($), a Streamlit directive, icon or emoji (:x[..], :material/..:, :smile:; Streamlit finds icons in the
# source, so their / too), an email autolink (@), a heading or table (# |) and the backslash itself. Prose
# punctuation (. , - ' " =) stays as typed, so messages read
# the same in tests and logs; where it matters, at the start of a value (lists, "1." items), it is escaped too.
_SPECIAL = re.compile(r"([\\`*_~\[\](){}!<>&$:/#|@])")
_LEADING = re.compile(r"^([-+=]|\d+(?=[.)]))")  # a list item or setext underline at the start
# where GFM would start an autolink literal, in escaped text: www. / http:// / https:// (any case), and @
_AUTOLINK = re.compile(r"www(?=\.)|https?(?=\\:\\/\\/)|\\@", re.IGNORECASE)
INERT = ":small[]"  # an empty Streamlit directive: an empty <span>, nothing shown or copied
# Control characters (newlines included) would start new blocks: show them as their escape (\n, \t, \x1b).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _control(m: re.Match) -> str:
    return repr(m.group(0))[1:-1]


def _leading(m: re.Match) -> str:
    lead = m.group(1)
    return "\\" + lead if not lead[0].isdigit() else lead + "\\"


def md(value: object) -> str:
    """`value` as markdown that renders exactly as `str(value)` reads, on one line."""
    text = _SPECIAL.sub(r"\\\1", _CONTROL.sub(_control, str(value)))
    return _AUTOLINK.sub(lambda m: m.group(0) + INERT, _LEADING.sub(_leading, text))


def md_text(text: object) -> str:
    """Plain text of several lines (an engine message, a result) as markdown: each line escaped, kept as a line."""
    return "  \n".join(md(line) for line in str(text).splitlines() or [""])


def md_cells(df):
    """A copy of the DataFrame `df` with every text cell escaped, for st.table (whose cells are markdown)."""
    return df.apply(lambda col: col.map(lambda v: md(v) if isinstance(v, str) else v) if col.dtype == object else col)


def plotly(value: object) -> str:
    """`value` for a plotly label, legend entry or hover text: its `<b>`, `<a href>`, `<br>` and entities are shown,
    not applied."""
    return html.escape(str(value), quote=False)


def unescape(markdown: str) -> str:
    """What `md` / `md_text` escaped, as it reads (for tests and for plain-text sinks)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("  \n", "\n").replace(INERT, ""))
