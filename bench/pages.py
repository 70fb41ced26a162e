"""Page speed: time-to-content of every dashboard page, in a real browser, on the `make run` demo and on two shapes
of a 100,000-partition cluster: many small topics (the seeder's catalogue, about 19 partitions each) and 1,000 topics
of 100 partitions each (issue 24).

Starts (unless --zk is given) a throwaway local ZooKeeper (sandbox.processes.zkserver), seeds the simulated clusters with
sandbox.seed and runs the controller emulator for each (brokers register, as `make run` does), serves the real
app with `streamlit run` on a free port, and drives it in headless Chromium (Debian's chromium + chromedriver, with
the flags the workplace needs). A page's time is from the navigation to the moment its own content is drawn (a
page-specific element: the broker table and charts of the Overview, the cost metrics and the heatmap of Reassign,
...), in a new browser session each time, as a person opening a link does. The first round of each page on each
cluster is "cold" (nothing cached for it yet: the Reassign page plans then); the table shows the median of the other
rounds and the worst of all. The Reassign interactions (switching the goal; Execute until the run panel shows) are
timed on the demo.

    .venv/bin/python bench/pages.py [--rounds 4] [--large-partitions 100000] [--no-large] [--no-wide]
                                    [--zk HOST:PORT]
    .venv/bin/python bench/pages.py --first-content [--first-partitions 200000] [--rounds 3]

Targets (issues 16 and 24): under 1.5 s on the demo, under 3 s on either 100,000-partition cluster.

`--first-content` (issue 31) measures a cluster Keel has not read yet: one cluster of 200,000 partitions, configured
under `--rounds` names (each its own connection, so each opening is a first read), its Overview opened in a new
browser session: the time to first content (the brokers table and the size metrics, drawn from the outline while the
partition states are read; the sidebar must not say "Live" then) and the time to the full view. Target: first
content under 2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from core.zk.session import ZkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's sandbox/ and tests/ (not installed)
from sandbox.emulator.controller import ControllerEmulator  # noqa: E402
from sandbox.processes import zkserver  # noqa: E402
from sandbox.seed import SandboxSpec, seed_cluster  # noqa: E402
from tests.support.browser import CHROMEDRIVER, CHROMIUM, chromium, serve_dashboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOPICS_PER_PARTITION = 19.2  # the seeder's catalogue gives about this many partitions per topic
WIDE_PARTITIONS = 100  # partitions of every topic of the "wide" shape
TARGET = {"demo": 1.5, "large": 3.0, "wide": 3.0}
FIRST_CONTENT_TARGET = 2.0

# page -> (path and query, JavaScript that is true once the page's own content is drawn)
METRICS = "document.querySelectorAll('[data-testid=stMetric]')"
CANVAS = "document.querySelector('[data-testid=stDataFrame] canvas')"
PLOT = "document.querySelector('.js-plotly-plot .main-svg')"
IDLE = "!document.querySelector('[data-testid=stStatusWidget]')"


def h1(text: str) -> str:
    return f"[...document.querySelectorAll('h1')].some(h => h.innerText.trim() === {text!r})"


PAGES = {
    "Overview": ("", f"document.querySelector('table[aria-label=\"Brokers of the cluster\"]') && "
                     f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2 && {METRICS}.length >= 10"),
    "Topics": ("topics", f"{h1('Topics')} && {CANVAS} && [...document.querySelectorAll('p')].some("
                         "p => / of [0-9,]+ topics/.test(p.innerText))"),
    "Topic": ("topics?topic={topic}", f"{h1('Topics')} && {METRICS}.length >= 5 && "
                                      "document.querySelectorAll('[data-testid=stDataFrame] canvas').length >= 2"),
    "Brokers": ("brokers", f"{h1('Brokers')} && {PLOT} && {CANVAS} && {METRICS}.length >= 4"),
    "Broker": ("broker?broker={broker}", f"{h1('Broker')} && {METRICS}.length >= 6 && {CANVAS}"),
    "Leaders": ("leaders", f"{h1('Leaders')} && {PLOT} && {METRICS}.length >= 5"),
    "Create topic": ("create_topic", f"{h1('Create topic')} && document.querySelector('input[type=text]')"),
    "Reassign": ("reassign", f"{h1('Reassign')} && {METRICS}.length >= 10 && "
                             "document.querySelector('.js-plotly-plot g.heatmaplayer') && "
                             "[...document.querySelectorAll('h3')].some(h => h.innerText.startsWith('Execute'))"),
    "History": ("history", f"{h1('History')} && {IDLE}"),
}


# --- the clusters, the app, the browser ------------------------------------------------------------------


@contextlib.contextmanager
def cluster(zk: str, chroot: str, spec: SandboxSpec):
    """Seed `spec` under `chroot` and run its controller emulator; yields (seed result, seconds to seed)."""
    with ZkSession.open(zk) as root:
        root.ensure_path(chroot)
        if root.exists(chroot + "/brokers"):
            root.delete_tree(chroot)
            root.ensure_path(chroot)
    session = ZkSession.open(zk + chroot)
    try:
        started = time.perf_counter()
        seeded = seed_cluster(session, spec)
        seconds = time.perf_counter() - started
        with ControllerEmulator(session) as emulator:
            emulator.wait_idle(120)
            yield seeded, seconds
    finally:
        session.close()
        with ZkSession.open(zk) as root:
            root.delete_tree(chroot)


def serve(config: Path, workdir: Path):
    return serve_dashboard(config, workdir)


def browser(width: int, height: int):
    return chromium(width, height)


def wait_for(driver, js: str, timeout: float) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if driver.execute_script(f"return !!({js})"):
            return time.perf_counter() - started
        time.sleep(0.05)  # polling faster slows the page it measures
    raise TimeoutError(js)


def timed_open(driver, url: str, js: str, timeout: float = 120) -> float:
    started = time.perf_counter()
    driver.get(url)
    wait_for(driver, js, timeout)
    return time.perf_counter() - started


def page_url(base: str, name: str, path: str, fill: dict) -> str:
    path = path.format(**{k: urllib.parse.quote(str(v)) for k, v in fill.items()})
    sep = "&" if "?" in path else "?"
    return f"{base}/{path}{sep}cluster={urllib.parse.quote(name)}"


# --- measurements ------------------------------------------------------------------------------------------


# the Overview's first content: its brokers table (the outline's or the full one) and the size metrics
FIRST_CONTENT = f"document.querySelector('table[aria-label^=\"Brokers of the cluster\"]') && {METRICS}.length >= 4"
APP_DRAWN = "document.querySelector('[data-testid=stSidebar] h2')"  # "Keel": the router's first element
SAYS_LIVE = ("[...document.querySelectorAll('[data-testid=stSidebar] [data-testid=stMarkdownContainer]')]"
             ".some(e => /\\bLive\\b/.test(e.innerText))")


def measure_first_content(base: str, names: list[str], width: int,
                          height: int) -> list[tuple[float, float, bool, float]]:
    """(seconds to first content, seconds to the full view, whether the first content claimed "Live", seconds until
    the app drew its sidebar at all) per name, each a cluster Keel has not read yet, opened in a new browser."""
    out = []
    for name in names:
        with browser(width, height) as driver:
            started = time.perf_counter()
            driver.get(page_url(base, name, "", {}))
            wait_for(driver, APP_DRAWN, 600)
            app = time.perf_counter() - started
            wait_for(driver, FIRST_CONTENT, 600)
            first = time.perf_counter() - started
            live = bool(driver.execute_script(f"return !!({SAYS_LIVE})"))
            full_js = PAGES["Overview"][1]
            outline = not driver.execute_script(f"return !!({full_js})")
            wait_for(driver, full_js, 600)
            full = time.perf_counter() - started
        out.append((first, full, live and outline, app))
        print(f"  {name}: the app's sidebar {app:5.2f} s, first content {first:5.2f} s ({'outline' if outline else 'full view'}), "
              f"full view {full:5.2f} s", file=sys.stderr, flush=True)
    return out


def first_content_main(args) -> None:
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="keel-bench-first-")))
        zk = args.zk or stack.enter_context(zkserver.start(zkserver.free_port(), work / "zk")).connect
        topics = max(1, round(args.first_partitions / TOPICS_PER_PARTITION))
        seeded, seconds = stack.enter_context(cluster(zk, "/keel-bench-first",
                                                      SandboxSpec(brokers=30, racks=3, topics=topics, seed=11)))
        print(f"first: {seeded.summary()} in {seconds:.1f} s", file=sys.stderr, flush=True)
        names = [f"first{i}" for i in range(1, args.rounds + 1)]
        config = work / "keel.toml"
        config.write_text('[keel]\nrole = "viewer"\n\n' + "\n".join(
            f'[clusters.{n}]\nzk = "{zk}/keel-bench-first"\n' for n in names)
            + f'\n[clusters.warmup]\nzk = "{zk}/keel-bench-nothing"\n')  # no Kafka there: nothing to read
        base = stack.enter_context(serve(config, work))
        with browser(args.width, args.height) as driver:  # the app's own first run (imports), not a cluster's
            timed_open(driver, f"{base}/history?cluster=warmup", PAGES["History"][1])
        results = measure_first_content(base, names, args.width, args.height)
        warm = []  # the same opening of a cluster already read: what Streamlit and the browser cost anyway
        for _ in range(2):
            with browser(args.width, args.height) as driver:
                warm.append(timed_open(driver, page_url(base, names[0], "", {}), FIRST_CONTENT))
    firsts, fulls = [r[0] for r in results], [r[1] for r in results]
    print(f"\nA cluster of {seeded.summary()} not read yet, its Overview in a new headless Chromium session at "
          f"{args.width} px ({len(results)} openings, load average {os.getloadavg()[0]:.1f}):\n")
    print("| | median | worst |\n|---|---|---|")
    print(f"| First content (brokers, controller, topic and partition counts, progress) | "
          f"{statistics.median(firsts):.2f} s | {max(firsts):.2f} s |")
    print(f"| Full view (every partition state read) | {statistics.median(fulls):.2f} s | {max(fulls):.2f} s |")
    apps = [r[3] for r in results]
    print(f"| The app's sidebar (the router's first element, before any cluster is asked) | "
          f"{statistics.median(apps):.2f} s | {max(apps):.2f} s |")
    print(f"| First content of the same cluster once read (the browser and Streamlit alone) | "
          f"{statistics.median(warm):.2f} s | {max(warm):.2f} s |")
    claimed = [n for n, r in zip(names, results) if r[2]]
    print("\n" + ("first content under target" if max(firsts) <= FIRST_CONTENT_TARGET
                  else f"first content over target ({FIRST_CONTENT_TARGET:g} s)")
          + ("" if not claimed else f"; the outline claimed Live on {claimed}"))


def measure_pages(driver, base: str, name: str, fill: dict, rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for page, (path, js) in PAGES.items():
        out[page] = [timed_open(driver, page_url(base, name, path, fill), js) for _ in range(rounds)]
        print(f"  {name:6} {page:13} " + "  ".join(f"{t:5.2f}" for t in out[page]), file=sys.stderr, flush=True)
    return out


def click_text(driver, selector: str, text: str) -> None:
    for element in driver.find_elements("css selector", selector):
        if text in element.text and element.is_enabled():  # a button's text may start with its icon's name
            element.click()
            return
    raise LookupError(f"no {selector} reading {text!r}")


def measure_interactions(driver, base: str, operator: bool) -> dict[str, float]:
    """On the demo: switch the goal (until the new plan's cost is drawn), then Execute (until the run panel)."""
    out = {}
    timed_open(driver, page_url(base, "demo", "reassign", {}), PAGES["Reassign"][1])
    started = time.perf_counter()
    click_text(driver, "[data-testid=stRadio] label", "Fill new brokers")
    wait_for(driver, "location.search.includes('goal=Fill') && "
                     "[...document.querySelectorAll('[data-testid=stAlert]')].some(a => a.innerText.includes("
                     "'hold no replica yet')) && "
                     f"{PAGES['Reassign'][1]} && {IDLE}", 60)
    out["Reassign: switch goal"] = time.perf_counter() - started
    if operator:
        click_text(driver, "[data-testid=stCheckbox] label", "Move ")
        wait_for(driver, "[...document.querySelectorAll('button')].some(b => b.innerText.includes('Execute') "
                         "&& !b.disabled)", 30)
        started = time.perf_counter()
        click_text(driver, "button", "Execute reassignment")
        wait_for(driver, "[...document.querySelectorAll('h3')].some(h => /^Action #\\d+/.test(h.innerText)) && "
                         "document.querySelector('[data-testid=stProgress]')", 60)
        out["Reassign: Execute → run panel"] = time.perf_counter() - started
    return out


def table(results: dict[str, dict[str, list[float]]], interactions: dict[str, float]) -> str:
    names = list(results)
    head = "| Page | " + " | ".join(f"{n} (median · cold · worst)" for n in names) + " |"
    lines = [head, "|" + "---|" * (len(names) + 1)]
    for page in PAGES:
        cells = []
        for n in names:
            times = results[n][page]
            warm = times[1:] or times
            mark = "" if max(warm) <= TARGET.get(n, 99) else " ⚠"
            cells.append(f"{statistics.median(warm):.2f} s · {times[0]:.2f} s · {max(times):.2f} s{mark}")
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    for what, seconds in interactions.items():
        lines.append(f"| {what} | {seconds:.2f} s |" + " |" * (len(names) - 1))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk", help="ZooKeeper host:port (default: start a throwaway one)")
    ap.add_argument("--rounds", type=int, default=4, help="openings of each page per cluster (the first is cold)")
    ap.add_argument("--large-partitions", type=int, default=100_000, help="size of the large cluster")
    ap.add_argument("--no-large", action="store_true", help="no cluster of many small topics")
    ap.add_argument("--no-wide", action="store_true", help=f"no cluster of {WIDE_PARTITIONS}-partition topics")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1200)
    ap.add_argument("--first-content", action="store_true",
                    help="time to first content and to the full view of a cluster not read yet (issue 31)")
    ap.add_argument("--first-partitions", type=int, default=200_000, help="size of the --first-content cluster")
    args = ap.parse_args()
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise SystemExit("needs Debian's chromium and chromium-driver (make deps)")
    if args.first_content:
        first_content_main(args)
        return
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="keel-bench-pages-")))
        zk = args.zk
        if not zk:
            zk = stack.enter_context(zkserver.start(zkserver.free_port(), work / "zk")).connect
        specs = {"demo": SandboxSpec(demo=True)}
        if not args.no_large:
            topics = max(1, round(args.large_partitions / TOPICS_PER_PARTITION))
            specs["large"] = SandboxSpec(brokers=30, racks=3, topics=topics, seed=11)
        if not args.no_wide:
            specs["wide"] = SandboxSpec(brokers=30, racks=3, topics=max(1, args.large_partitions // WIDE_PARTITIONS),
                                        partitions=WIDE_PARTITIONS, seed=11)
        fill: dict[str, dict] = {}
        clusters = []
        for name, spec in specs.items():
            seeded, seconds = stack.enter_context(cluster(zk, f"/keel-bench-{name}", spec))
            print(f"{name}: {seeded.summary()} in {seconds:.1f} s", file=sys.stderr, flush=True)
            fill[name] = {"topic": "orders.v1", "broker": seeded.brokers[0]}
            clusters.append(f'[clusters.{name}]\nzk = "{zk}/keel-bench-{name}"\n')
        config = work / "keel.toml"
        config.write_text('[keel]\nrole = "operator"\n\n' + "\n".join(clusters))
        base = stack.enter_context(serve(config, work))
        driver = stack.enter_context(browser(args.width, args.height))
        results = {}
        for name in specs:
            first = timed_open(driver, page_url(base, name, "", {}), PAGES["Overview"][1], timeout=600)
            print(f"{name}: first load (reads the cluster from ZooKeeper) {first:.2f} s", file=sys.stderr, flush=True)
            results[name] = measure_pages(driver, base, name, fill[name], args.rounds)
        interactions = measure_interactions(driver, base, operator=True)
        print(f"\nTime to content, {args.width} px, headless Chromium; the median of {args.rounds - 1} warm openings, "
              "the first (cold) one and the worst:\n")
        print(table(results, interactions))
        slow = [(n, p) for n in results for p, ts in results[n].items() if max(ts[1:] or ts) > TARGET.get(n, 99)]
        print("\nall pages under target" if not slow else f"\nover target: {slow}")


if __name__ == "__main__":
    main()
