"""Heatmaps of the Fleet page, from the fleet jobs' outputs (pandas DataFrames read by core.fleet.outputs).

Pure functions: no streamlit, no Spark. The `*_grid` functions turn an output into a `Grid` (the cells, their
labels and hover texts); `heatmap` draws a Grid with plotly.

Every grid is bounded so that a browser draws it at ease: at most MAX_ROWS rows and MAX_COLS columns.
* Too many brokers for the columns: consecutive brokers (by id) share a column, a "bin". A bin shows its most
  extreme broker (the largest deviation, up or down), so one hot or empty broker is not averaged away; the hover
  text names it and gives the bin's range and mean.
* Too many clusters: a window of MAX_ROWS ranks (the caller picks it; rank 1 first).
* Too many topics: the TOP_TOPICS most skewed, and one "other" row summing the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.balance.metrics import excess_over_even
from dashboard.text import plotly as esc  # cluster, topic and rack names are data: plotly must not apply their tags

MAX_ROWS = 40
MAX_COLS = 100
TOP_TOPICS = 30
NO_RACK = "no rack"

DIVERGING = "RdBu_r"  # blue below the mean, white at it, red above (readable with common colour-vision deficiencies)
SEQUENTIAL = "Viridis"


@dataclass(frozen=True)
class Grid:
    """Cells of a heatmap: z[row][col] (None = no broker there), labels, hover text per cell."""

    z: list[list[float | None]]
    x: list[str]
    y: list[str]
    text: list[list[str]]
    x_title: str = ""
    note: str | None = None  # what was binned, cut or summed
    bin_size: int = 1  # brokers per column
    rows_total: int = 0  # rows before the cut (clusters, topics, racks)
    extra: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.y), len(self.x)

    @property
    def empty(self) -> bool:
        return not self.y or not self.x


def bin_size(n: int, max_cols: int = MAX_COLS) -> int:
    """Brokers per column so that n brokers fit in max_cols columns."""
    return max(1, math.ceil(n / max_cols)) if n else 1


def _extreme(values: np.ndarray) -> int | None:
    """Index of the value farthest from 0 (ties: the first); None when every value is NaN."""
    if values.size == 0 or np.all(np.isnan(values)):
        return None
    return int(np.nanargmax(np.abs(values)))


def _col_labels(width: int, size: int) -> list[str]:
    if size == 1:
        return [str(i) for i in range(width)]
    return [f"{lo}–{min(lo + size, width) - 1}" for lo in range(0, width, size)]


def _down(alive) -> str:
    return "" if bool(alive) else " (down)"


def _signed(v: float, fmt: str = "+.2f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def _plain(z: np.ndarray) -> list[list[float | None]]:
    return [[None if math.isnan(v) else float(v) for v in row] for row in z]


# --- clusters x brokers -------------------------------------------------------------------------------


def cluster_broker_grid(scores: pd.DataFrame, metrics: pd.DataFrame, *, start: int = 0,
                        max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS, value: str = "replica_dev") -> Grid:
    """Clusters (by rank, `max_rows` of them from position `start`) x brokers (index 0..n-1 in id order),
    coloured by `value` of broker_metrics. Brokers are binned when the widest cluster shown has more than
    `max_cols` of them."""
    ranked = scores.sort_values("rank", kind="stable")
    total = len(ranked)
    window = ranked.iloc[max(0, start): max(0, start) + max_rows]
    names = list(window["cluster"])
    shown = metrics[metrics["cluster"].isin(names)]
    groups = {c: g.sort_values("broker", kind="stable") for c, g in shown.groupby("cluster", sort=False)}
    width = max((len(g) for g in groups.values()), default=0)
    size = bin_size(width, max_cols)
    ncols = math.ceil(width / size) if width else 0
    z = np.full((len(names), ncols), np.nan)
    text = [[""] * ncols for _ in names]
    for i, (cluster, rank) in enumerate(zip(names, window["rank"])):
        g = groups.get(cluster)
        if g is None:
            continue
        ids = g["broker"].to_numpy()
        vals = g[value].to_numpy(dtype=float, na_value=np.nan)
        reps = g["replicas"].to_numpy()
        alive = g["alive"].to_numpy()
        racks = g["rack"].to_numpy()
        for j in range(math.ceil(len(ids) / size)):
            lo, hi = j * size, min((j + 1) * size, len(ids))
            k = _extreme(vals[lo:hi])
            head = f"<b>#{rank} {esc(cluster)}</b>"
            if k is None:
                text[i][j] = f"{head}<br>broker{'s' if hi - lo > 1 else ''} {ids[lo]}" + (
                    f"–{ids[hi - 1]}" if hi - lo > 1 else "") + f"<br>{value}: n/a (no alive broker to compare with)"
                continue
            b = lo + k
            z[i, j] = vals[b]
            who = (f"broker {ids[b]}{_down(alive[b])} · rack {esc(racks[b] or NO_RACK)}<br>{reps[b]:,} replicas · "
                   f"{value} {_signed(vals[b])}")
            if size == 1:
                text[i][j] = f"{head}<br>#{b} {who}"
            else:
                mean = float(np.nanmean(vals[lo:hi]))
                text[i][j] = (f"{head}<br>brokers #{lo}–#{hi - 1} (ids {ids[lo]}–{ids[hi - 1]})<br>most extreme: "
                              f"{who}<br>mean {value} of the bin {_signed(mean)}")
    notes = []
    if size > 1:
        notes.append(f"{size} brokers per column (the widest cluster shown has {width:,}): each cell shows the "
                     f"bin's most extreme broker")
    if total > len(names):
        notes.append(f"ranks {start + 1}–{start + len(names)} of {total:,} clusters")
    return Grid(z=_plain(z), x=_col_labels(width, size), y=[f"#{r} {esc(c)}" for c, r in zip(names, window["rank"])],
                text=text, x_title="Broker index (by broker id)" + (" — binned" if size > 1 else ""),
                note="; ".join(notes) or None, bin_size=size, rows_total=total,
                extra={"clusters": names, "width": width})


# --- brokers x topics of one cluster ------------------------------------------------------------------


def topic_excess(counts: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """core.balance.metrics.excess_over_even (the engine's definition) over a topics x brokers array."""
    return np.asarray(excess_over_even(counts.tolist(), [bool(a) for a in alive]), dtype=float).reshape(counts.shape)


def topic_broker_grid(topic_broker: pd.DataFrame, metrics: pd.DataFrame, *, top_n: int = TOP_TOPICS,
                      max_cols: int = MAX_COLS) -> Grid:
    """One cluster's topics x brokers, coloured by replicas above / below an even spread (`topic_excess`).

    Rows: the `top_n` topics with the most replicas above an even spread (ties: bigger topics first), then one
    row summing the excess of every other topic. Columns: every broker of broker_metrics (empty ones too),
    binned above `max_cols`.
    """
    brokers = metrics.sort_values("broker")
    ids = brokers["broker"].to_numpy()
    extra_ids = sorted(set(topic_broker["broker"]) - set(ids.tolist()))
    alive = np.concatenate([brokers["alive"].fillna(True).to_numpy(dtype=bool), np.ones(len(extra_ids), bool)])
    ids = np.concatenate([ids, np.array(extra_ids, dtype=ids.dtype)])
    if topic_broker.empty or len(ids) == 0:
        return Grid(z=[], x=[], y=[], text=[], rows_total=0)
    pivot = topic_broker.pivot_table(index="topic", columns="broker", values="replicas", aggfunc="sum",
                                     fill_value=0).reindex(columns=ids, fill_value=0)
    topics = pivot.index.to_numpy()
    counts = pivot.to_numpy(dtype=float)
    excess = topic_excess(counts, alive)
    above = np.clip(excess, 0, None).sum(axis=1)
    totals = counts.sum(axis=1)
    order = np.lexsort((topics.astype(str), -totals, -above))  # last key first: excess desc, size desc, name
    top, rest = order[:top_n], order[top_n:]
    n_alive = int(alive.sum())

    rows_counts = [counts[t] for t in top]
    rows_excess = [excess[t] for t in top]
    labels = [esc(topics[t]) for t in top]
    hovers_head = [f"<b>{esc(topics[t])}</b> · {int(totals[t]):,} replicas, {int(above[t]):,} above an even spread"
                   + (f" (even: {int(math.floor(totals[t] / n_alive))}–{int(math.ceil(totals[t] / n_alive))} "
                      f"per alive broker)" if n_alive else "") for t in top]
    if len(rest):
        rows_counts.append(counts[rest].sum(axis=0))
        rows_excess.append(excess[rest].sum(axis=0))
        labels.append(f"other {len(rest):,} topics")
        hovers_head.append(f"<b>other {len(rest):,} topics</b> (summed) · {int(totals[rest].sum()):,} replicas, "
                           f"{int(above[rest].sum()):,} above their even spreads")

    size = bin_size(len(ids), max_cols)
    ncols = math.ceil(len(ids) / size)
    z = np.full((len(labels), ncols), np.nan)
    text = [[""] * ncols for _ in labels]
    for i in range(len(labels)):
        for j in range(ncols):
            lo, hi = j * size, min((j + 1) * size, len(ids))
            k = _extreme(rows_excess[i][lo:hi])
            b = lo + (k or 0)
            z[i, j] = rows_excess[i][b]
            who = (f"broker {ids[b]}{_down(alive[b])}: {int(rows_counts[i][b]):,} replicas, "
                   f"{_signed(rows_excess[i][b], '+,.0f')} vs even")
            if size == 1:
                text[i][j] = f"{hovers_head[i]}<br>{who}"
            else:
                text[i][j] = (f"{hovers_head[i]}<br>brokers {ids[lo]}–{ids[hi - 1]}: "
                              f"{int(rows_counts[i][lo:hi].sum()):,} replicas<br>most extreme: {who}")
    top_abs = float(np.nanmax(np.abs(z[: len(top)]))) if len(top) and ncols else 0.0
    notes = []
    if len(rest):
        notes.append(f"the {len(top)} of {len(topics):,} topics with the most replicas above an even spread; "
                     f"the last row sums the other {len(rest):,}")
    if size > 1:
        notes.append(f"{size} brokers per column (of {len(ids):,}): each cell shows the bin's most extreme broker")
    x = [str(b) + ("" if a else " (down)") for b, a in zip(ids, alive)] if size == 1 else \
        [f"{ids[lo]}–{ids[min(lo + size, len(ids)) - 1]}" for lo in range(0, len(ids), size)]
    return Grid(z=_plain(z), x=x, y=labels, text=text, x_title="Broker" + (" (binned by id)" if size > 1 else ""),
                note="; ".join(notes) or None, bin_size=size, rows_total=len(topics),
                extra={"zmax": max(1.0, top_abs), "topics": [str(topics[t]) for t in top]})


# --- racks x brokers of one cluster -------------------------------------------------------------------


def rack_broker_grid(metrics: pd.DataFrame, *, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> Grid:
    """One cluster's racks x brokers (each rack's brokers in id order), coloured by replicas per broker."""
    if metrics.empty:
        return Grid(z=[], x=[], y=[], text=[])
    m = metrics.assign(rack=metrics["rack"].fillna(NO_RACK)).sort_values("broker")
    alive_reps = m.loc[m["alive"].fillna(False).astype(bool), "replicas"]
    mean = float(alive_reps.mean()) if len(alive_reps) else float(m["replicas"].mean())
    groups = dict(tuple(m.groupby("rack", sort=False)))
    racks = sorted(groups, key=lambda r: (r == NO_RACK, r))
    total = len(racks)
    if total > max_rows:  # keep the biggest racks
        racks = sorted(sorted(racks, key=lambda r: -len(groups[r]))[:max_rows], key=lambda r: (r == NO_RACK, r))
    width = max(len(groups[r]) for r in racks)
    size = bin_size(width, max_cols)
    ncols = math.ceil(width / size)
    z = np.full((len(racks), ncols), np.nan)
    text = [[""] * ncols for _ in racks]
    labels = []
    for i, rack in enumerate(racks):
        g = groups[rack]
        ids = g["broker"].to_numpy()
        reps = g["replicas"].to_numpy(dtype=float)
        leaders = g["leaders"].to_numpy()
        alive = g["alive"].to_numpy()
        labels.append(f"{esc(rack)} ({len(ids)})")
        head = (f"<b>rack {esc(rack)}</b>: {len(ids)} brokers, {int(reps.sum()):,} replicas "
                f"({reps.mean():,.0f} per broker)")
        for j in range(math.ceil(len(ids) / size)):
            lo, hi = j * size, min((j + 1) * size, len(ids))
            b = lo + (_extreme(reps[lo:hi] - mean) or 0)
            z[i, j] = reps[b]
            dev = (reps[b] / mean - 1) if mean else float("nan")
            who = (f"broker {ids[b]}{_down(alive[b])}: {int(reps[b]):,} replicas ({_signed(dev, '+.0%')} vs the "
                   f"cluster mean), {int(leaders[b]):,} leaders")
            text[i][j] = f"{head}<br>{who}" if size == 1 else \
                f"{head}<br>brokers {ids[lo]}–{ids[hi - 1]}<br>most extreme: {who}"
    notes = []
    if total > len(racks):
        notes.append(f"the {len(racks)} largest of {total} racks")
    if size > 1:
        notes.append(f"{size} brokers per column: each cell shows the bin's most extreme broker")
    return Grid(z=_plain(z), x=_col_labels(width, size), y=labels, text=text,
                x_title="Broker position in the rack (by id)", note="; ".join(notes) or None, bin_size=size,
                rows_total=total, extra={"mean": mean})


# --- drawing ------------------------------------------------------------------------------------------


def fit_width(grid: Grid, *, labels_px: int = 200, cell_px: int = 70, most: int = 1100) -> int | None:
    """A width in pixels for a grid of few columns (so its cells are not stretched across the page), or None
    (use the full width)."""
    px = labels_px + 110 + cell_px * len(grid.x)
    return px if px < most else None


def heatmap(grid: Grid, *, title: str, colorbar: str, colorscale: str = DIVERGING, zmin: float | None = None,
            zmax: float | None = None, zmid: float | None = None, cell_text: str | None = None,
            row_height: int = 22, min_height: int = 240) -> go.Figure:
    """A plotly heatmap of `grid`; rows top-down in grid order. `cell_text` (a texttemplate such as "%{z:,}")
    is only drawn when the cells are few enough to read."""
    rows, cols = grid.shape
    few = rows * cols <= 400
    fig = go.Figure(go.Heatmap(
        z=grid.z, x=grid.x, y=grid.y, text=grid.text, hovertemplate="%{text}<extra></extra>", hoverongaps=False,
        colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid, xgap=1 if cols <= 60 else 0,
        ygap=1 if rows <= 60 else 0, colorbar=dict(title=dict(text=colorbar, side="right"), thickness=14),
        texttemplate=cell_text if cell_text and few else None, textfont=dict(size=10),
    ))
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        height=max(min_height, 110 + row_height * rows), margin=dict(l=10, r=10, t=45, b=10),
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)", hoverlabel=dict(namelength=-1, align="left"),
    )
    fig.update_xaxes(title_text=grid.x_title, type="category", showgrid=False, tickangle=0 if cols <= 40 else -45)
    fig.update_yaxes(type="category", autorange="reversed", showgrid=False, automargin=True)
    return fig


def cluster_broker_heatmap(grid: Grid) -> go.Figure:
    return heatmap(grid, title="Replica deviation per broker, clusters by rank",
                   colorbar="replica_dev", zmin=-1.0, zmax=1.0, zmid=0.0)


def topic_broker_heatmap(grid: Grid, cluster: str) -> go.Figure:
    m = float(grid.extra.get("zmax", 1.0))
    return heatmap(grid, title=f"{esc(cluster)}: replicas per broker and topic, above (+) or below (−) an even "
                               "spread", colorbar="replicas vs even", zmin=-m, zmax=m, zmid=0.0, cell_text="%{z:+,.0f}")


def rack_broker_heatmap(grid: Grid, cluster: str) -> go.Figure:
    return heatmap(grid, title=f"{esc(cluster)}: replicas per broker, grouped by rack", colorbar="replicas",
                   colorscale=SEQUENTIAL, zmin=0.0, cell_text="%{z:,}", row_height=34, min_height=200)
