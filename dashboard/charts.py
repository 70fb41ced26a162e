"""Plotly figures shared by the pages. Pure functions of plain data: no streamlit, no ZooKeeper.

Colours: one fixed, colour-blind-safe colour per rack, assigned by sorted rack name so that a rack
keeps its colour on every page; brokers without a rack are grey. Pages give `rack_colors` the racks of every broker
the snapshot knows, down ones included (their last registration seen: core.zk.tree), not only the alive ones: a
broker going down then changes no rack's colour. A broker that is down is drawn hatched, with a red outline and
"(down)" in its axis label.

Rack and topic names are data from the cluster: they are escaped for plotly's HTML-like label markup (`esc`).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import plotly.graph_objects as go

from dashboard.text import plotly as esc

# Okabe-Ito + Tol "bright": distinguishable with the common colour-vision deficiencies.
RACK_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
                "#4477AA", "#228833", "#AA3377", "#66CCEE", "#CCBB44")
NO_RACK_COLOR = "#8C8C8C"
NO_RACK = "no rack"
DOWN = "down"
DOWN_COLOR = "#D62728"
DOWN_FILL = "#F2C4C4"
OK_COLOR = "#4C78A8"
OVER_COLOR = "#D62728"


def rack_colors(racks: Iterable[str | None]) -> dict[str, str]:
    """rack name -> colour; a missing rack is `NO_RACK`."""
    named = sorted({r for r in racks if r is not None})
    colors = {r: RACK_PALETTE[i % len(RACK_PALETTE)] for i, r in enumerate(named)}
    colors[NO_RACK] = NO_RACK_COLOR
    return colors


def broker_label(broker_id: int, alive: bool) -> str:
    return f"{broker_id}" if alive else f"{broker_id} (down)"


def _layout(fig: go.Figure, title: str, y_title: str, height: int) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        height=height, margin=dict(l=10, r=10, t=45, b=10), bargap=0.25,
        # the legend at the bottom of the figure (plotly grows the margin for it), not beside the title: in a narrow
        # column the two overlapped
        legend=dict(title_text="Rack", orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left",
                    x=0),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(namelength=-1),
    )
    fig.update_xaxes(title_text="Broker", type="category", showgrid=False)
    fig.update_yaxes(title_text=y_title, gridcolor="rgba(128,128,128,0.2)", rangemode="tozero")
    return fig


def per_broker_bars(
    broker_ids: Sequence[int],
    values: Sequence[float],
    racks: Sequence[str | None],
    alive: Sequence[bool],
    *,
    title: str,
    y_title: str,
    colors: dict[str, str] | None = None,
    height: int = 320,
) -> go.Figure:
    """One bar per broker, coloured by rack (one legend entry per rack); down brokers in their own
    legend entry, grey, hatched red (a down broker's rack is the one it last registered with, if known)."""
    colors = colors or rack_colors(racks)
    labels = [broker_label(b, a) for b, a in zip(broker_ids, alive)]
    fig = go.Figure()
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(racks):
        key = DOWN if not alive[i] else (r if r is not None else NO_RACK)
        groups.setdefault(key, []).append(i)
    order = sorted(k for k in groups if k not in (NO_RACK, DOWN)) + [k for k in (NO_RACK, DOWN) if k in groups]
    for group in order:
        idx = groups[group]
        down = group == DOWN
        fig.add_bar(
            name=esc(group),
            x=[labels[i] for i in idx],
            y=[values[i] for i in idx],
            marker=dict(
                color=DOWN_FILL if down else colors.get(group, NO_RACK_COLOR),
                line=dict(color=DOWN_COLOR if down else "rgba(0,0,0,0)", width=2),
                pattern=dict(shape="x" if down else "", fgcolor=DOWN_COLOR, size=6),
            ),
            customdata=[[esc(f"{racks[i]} (last seen)" if racks[i] else "unknown") if down
                         else esc(racks[i] or NO_RACK)] for i in idx],
            hovertemplate=(f"broker %{{x}}<br>{y_title}: %{{y:,}}<br>rack: %{{customdata[0]}}"
                           + ("<br><b>DOWN</b>" if down else "") + "<extra></extra>"),
        )
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    _integer_axis(fig, values)
    return _layout(fig, title, y_title, height)


def _integer_axis(fig: go.Figure, values: Sequence[float]) -> None:
    """Counts get whole-number ticks (no 0.5 replicas on a small chart)."""
    if values and all(isinstance(v, int) for v in values):
        top = max(values)
        fig.update_yaxes(tickformat=",d", **({"dtick": 1} if top <= 8 else {}))


def imbalance_chart(
    broker_ids: Sequence[int],
    ratios: Sequence[float | None],
    alive: Sequence[bool],
    threshold_percent: float,
    *,
    height: int = 340,
) -> go.Figure:
    """Preferred-leader imbalance per broker in percent, with the controller's threshold as a dashed line.

    Bars over the threshold are red, for alive brokers only: a down broker leads nothing whatever an election does
    (it is hatched and grey). A broker that is the preferred replica of nothing has nothing off its preferred
    leader: 0%.
    """
    labels = [broker_label(b, a) for b, a in zip(broker_ids, alive)]
    pct = [0.0 if r is None else r * 100.0 for r in ratios]
    over = [a and p > threshold_percent for p, a in zip(pct, alive)]
    fig = go.Figure()
    fig.add_bar(
        x=labels,
        y=[0 if p is None else p for p in pct],
        marker=dict(
            color=[OVER_COLOR if o else (OK_COLOR if a else DOWN_FILL) for o, a in zip(over, alive)],
            pattern=dict(shape=["x" if not a else "" for a in alive], fgcolor="#333333", size=6),
        ),
        text=[f"{p:.0f}%" for p in pct],
        textposition="outside",
        customdata=[["over threshold" if o else "within threshold" if a else "down: leads nothing until it returns"]
                    for o, a in zip(over, alive)],
        hovertemplate="broker %{x}<br>imbalance: %{y:.1f}%<br>%{customdata[0]}<extra></extra>",
        showlegend=False,
    )
    fig.add_hline(y=threshold_percent, line=dict(color=OVER_COLOR, dash="dash", width=2),
                  annotation_text=f"threshold {threshold_percent:g}%", annotation_position="top left",
                  annotation_font=dict(color=OVER_COLOR))
    top = max([threshold_percent, *pct])
    fig.update_yaxes(range=[0, max(top * 1.2, 10)], ticksuffix="%")
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    return _layout(fig, "Preferred-leader imbalance per broker", "Imbalance", height)


BEFORE_COLOR = "#9DB4CF"
AFTER_COLOR = "#0072B2"


def before_after_bars(
    broker_ids: Sequence[int],
    before: Sequence[float],
    after: Sequence[float],
    alive: Sequence[bool],
    *,
    title: str = "Leaders per broker, before and after the election",
    y_title: str = "Leaders",
    names: tuple[str, str] = ("now", "after the election"),
    height: int = 340,
) -> go.Figure:
    """Two bars per broker (now / after), grouped; a down broker's label says so and its bars are hatched."""
    labels = [broker_label(b, a) for b, a in zip(broker_ids, alive)]
    hatch = ["x" if not a else "" for a in alive]
    fig = go.Figure()
    for name, values, color in ((names[0], before, BEFORE_COLOR), (names[1], after, AFTER_COLOR)):
        fig.add_bar(
            name=name, x=labels, y=list(values),
            marker=dict(color=color, pattern=dict(shape=hatch, fgcolor=DOWN_COLOR, size=6)),
            text=[f"{v:,}" for v in values], textposition="outside",
            hovertemplate=f"broker %{{x}}<br>{name}: %{{y:,}}<extra></extra>",
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    top = max([1, *before, *after])
    fig.update_yaxes(range=[0, top * 1.2])
    _integer_axis(fig, [*before, *after])
    fig = _layout(fig, title, y_title, height)
    fig.update_layout(legend_title_text="")
    return fig


# --- reassignment: before / after -------------------------------------------------------------------------

HEAT_SCALE = "Blues"
CHANGE_SCALE = [[0.0, "#B2182B"], [0.5, "#F7F7F7"], [1.0, "#2166AC"]]  # losing replicas red, gaining blue
MAX_CELL_TEXT = 400  # cells per panel above which the counts are not printed in the cells


def cell_texts(z: Sequence[Sequence[int]], *, signed: bool = False) -> list[list[str]]:
    """What each heatmap cell prints: its own count ("1,234"), or its change ("+2", "-3", "0") when `signed`."""
    def one(v: int) -> str:
        if not signed or v == 0:
            return f"{v:,}"
        return f"+{v:,}" if v > 0 else f"{v:,}"
    return [[one(v) for v in row] for row in z]


def marked_label(broker_id: int, alive: bool, mark: str | None = None) -> str:
    """A broker's axis label: "3", "3 (down)", "7 (drain)", "9 (empty)"."""
    if not alive:
        return broker_label(broker_id, alive)
    return f"{broker_id} ({mark})" if mark else f"{broker_id}"


def _labels(broker_ids: Sequence[int], alive: Sequence[bool], marks) -> list[str]:
    marks = marks or {}
    return [marked_label(b, a, marks.get(b)) for b, a in zip(broker_ids, alive)]


def _topic_broker_layout(fig: go.Figure, labels: list[str], topics: Sequence[str], title: str, *,
                         top_margin: int) -> go.Figure:
    """Brokers across, topics down (first topic on top), one row of height per topic within bounds.

    The rows are drawn in the traces' own order, top down (a reversed axis), never re-sorted by a category array:
    plotly.js places a heatmap's cell texts by the trace's row index, so a category order other than the trace's
    printed each row's numbers on its mirror row (issue 16) while colours and hover texts were right."""
    # dtick 1: every broker labelled (plotly skipped every other label of a narrow heatmap); a label longer than a
    # cell is narrow ("2 (down)") stands upright, else neighbours ran into each other
    fig.update_xaxes(type="category", categoryorder="trace", title_text="Broker", showgrid=False, dtick=1,
                     automargin=True, tickangle=-90 if max(map(len, labels), default=0) > 4 else 0)
    fig.update_yaxes(type="category", categoryorder="trace", autorange="reversed", showgrid=False, automargin=True)
    height = max(260, min(900, 110 + 24 * len(topics)))
    fig.update_layout(title=dict(text=title, x=0, xanchor="left", font=dict(size=15)), height=height,
                      margin=dict(l=10, r=10, t=top_margin, b=10), plot_bgcolor="rgba(0,0,0,0)",
                      paper_bgcolor="rgba(0,0,0,0)", hoverlabel=dict(namelength=-1))
    return fig


def replica_heatmaps(
    broker_ids: Sequence[int],
    alive: Sequence[bool],
    topics: Sequence[str],
    before: Sequence[Sequence[int]],
    after: Sequence[Sequence[int]],
    *,
    marks: dict[int, str] | None = None,
    title: str = "Replicas per broker and topic",
) -> tuple[go.Figure, go.Figure]:
    """Two heatmaps, before and after (rows: topics, columns: brokers), on one colour scale, so a cell's shade means
    the same count in both; the scale is drawn beside the second. Two figures, not two panels of one: the page puts
    them side by side where they fit and one above the other in a narrow window, where two panels of 9 brokers had
    cells too small for their numbers. Callers fold the long tail of topics into one row; counts are printed in
    small grids."""
    topics = [esc(t) for t in topics]
    labels = _labels(broker_ids, alive, marks)
    top = max([1, *(v for row in before for v in row), *(v for row in after for v in row)])
    show_text = len(topics) * len(labels) <= MAX_CELL_TEXT
    figures = []
    for name, z in (("before", before), ("after", after)):
        fig = go.Figure(go.Heatmap(
            z=[list(r) for r in z], x=labels, y=list(topics), coloraxis="coloraxis", xgap=1, ygap=1,
            text=cell_texts(z) if show_text else None, texttemplate="%{text}" if show_text else None,
            hovertemplate=f"broker %{{x}}<br>topic %{{y}}<br>replicas {name}: %{{z:,}}<extra></extra>"))
        fig.update_layout(coloraxis=dict(colorscale=HEAT_SCALE, cmin=0, cmax=top, showscale=name == "after",
                                         colorbar=dict(title=dict(text="Replicas"), thickness=12)))
        figures.append(_topic_broker_layout(fig, labels, topics, f"{title}: {name}", top_margin=45))
    return figures[0], figures[1]


def replica_change_heatmap(
    broker_ids: Sequence[int],
    alive: Sequence[bool],
    topics: Sequence[str],
    before: Sequence[Sequence[int]],
    after: Sequence[Sequence[int]],
    *,
    marks: dict[int, str] | None = None,
    title: str = "Change in replicas per broker and topic (after − before)",
) -> go.Figure:
    """One diverging heatmap of after - before: blue where a broker gains replicas of a topic, red where it loses."""
    topics = [esc(t) for t in topics]
    labels = _labels(broker_ids, alive, marks)
    delta = [[a - b for a, b in zip(ra, rb)] for ra, rb in zip(after, before)]
    reach = max([1, *(abs(v) for row in delta for v in row)])
    show_text = len(topics) * len(labels) <= MAX_CELL_TEXT
    fig = go.Figure(go.Heatmap(
        z=delta, x=labels, y=list(topics), zmin=-reach, zmax=reach, zmid=0, colorscale=CHANGE_SCALE, xgap=1, ygap=1,
        text=cell_texts(delta, signed=True) if show_text else None, texttemplate="%{text}" if show_text else None,
        colorbar=dict(title=dict(text="Δ replicas"), thickness=12),
        hovertemplate="broker %{x}<br>topic %{y}<br>change: %{z:+,}<extra></extra>"))
    return _topic_broker_layout(fig, labels, topics, title, top_margin=45)


def broker_before_after(
    broker_ids: Sequence[int],
    before: Sequence[float],
    after: Sequence[float],
    alive: Sequence[bool],
    *,
    title: str,
    y_title: str,
    marks: dict[int, str] | None = None,
    unit: str | None = None,
    names: tuple[str, str] = ("before", "after"),
    height: int = 320,
) -> go.Figure:
    """Grouped bars per broker, before and after a reassignment. `unit="B"` formats bytes with SI prefixes; a down
    broker is hatched and a drained or empty broker says so in its label. Values are printed on the bars only
    while there are few brokers."""
    labels = _labels(broker_ids, alive, marks)
    marks = marks or {}
    hatch = ["x" if not a else ("/" if marks.get(b) == "drain" else "") for b, a in zip(broker_ids, alive)]
    fmt = "%{y:.3s}" + (unit or "") if unit else "%{y:,}"
    fig = go.Figure()
    for name, values, color in ((names[0], before, BEFORE_COLOR), (names[1], after, AFTER_COLOR)):
        fig.add_bar(
            name=name, x=labels, y=list(values),
            marker=dict(color=color, pattern=dict(shape=hatch, fgcolor=DOWN_COLOR, size=6)),
            texttemplate=fmt if len(labels) <= 16 else None, textposition="outside",
            hovertemplate=f"broker %{{x}}<br>{name}: {fmt}<extra></extra>",
        )
    fig.update_layout(barmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=labels)
    top = max([1, *before, *after])
    fig.update_yaxes(range=[0, top * 1.2])
    if unit:
        fig.update_yaxes(tickformat=".3s", ticksuffix=unit)
    else:
        _integer_axis(fig, [*before, *after])
    fig = _layout(fig, title, y_title, height)
    fig.update_layout(legend_title_text="")
    return fig
