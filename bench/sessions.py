"""Many sessions on one server: what idle browser sessions cost the dashboard's server, and how fast every page
draws while they are open (issue 24).

Starts (unless --zk is given) a throwaway local ZooKeeper, seeds one simulated cluster (50,000 partitions by
default, 30 brokers) with its controller emulator, serves the real app with `streamlit run`, and opens sessions in
one headless Chromium, each in its own window (a window's page is visible, as on an operator's screen):

1. idle: for each count in --levels, that many sessions sit on the Overview (then on a mix of the live pages), and
   the server's CPU is read from /proc/<pid>/stat over --window seconds: % of one core (Streamlit runs every
   session's script under one GIL, so one core is the ceiling);
2. hidden: as many sessions as tabs behind one visible tab (the Page Visibility API says "hidden");
3. draw: with --sessions sessions open on the mixed pages, each session in turn opens every page (a new Streamlit
   session, as a reload does), timed until the page's own content is drawn (bench/pages.py's conditions); the
   table gives the median and the worst over the sessions;
4. burst: every session reloads the Overview at the same moment; the time until the last one has drawn.

    .venv/bin/python bench/sessions.py [--sessions 25] [--levels 1,5,10,25] [--partitions 50000] [--zk HOST:PORT]

Targets (issue 24): 25 idle sessions cost the server under half a core; with 25 sessions open every page draws
within 3 s. The browser runs on the same machine (its CPU is printed too): on 2 cores it competes with the server.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests/ and bench/ helpers
from bench.pages import PAGES, TOPICS_PER_PARTITION, cluster, page_url, wait_for  # noqa: E402
from sandbox.processes import zkserver  # noqa: E402
from sandbox.seed import SandboxSpec  # noqa: E402
from tests.support.browser import CHROMEDRIVER, CHROMIUM, chromium, serve_dashboard  # noqa: E402

TARGET_IDLE_CORES = 0.5
TARGET_DRAW_SECONDS = 3.0
LIVE_PAGES = ["Overview", "Topics", "Brokers", "Broker", "Leaders", "Topic"]  # pages with live fragments
TICKS = os.sysconf("SC_CLK_TCK")


# --- CPU from /proc --------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """user + system CPU of a process, all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_pid(port: int) -> int:
    """The `streamlit run` process serving `port` (serve_dashboard yields its URL only)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if b"streamlit" in args and b"--server.port" in args and \
                        args[args.index(b"--server.port") + 1] == str(port).encode():
                    return int(entry)
    raise LookupError(f"no streamlit process on port {port}")


def chromium_pids(profile: str) -> list[int]:
    """The processes of the Chromium whose profile is `profile` (other Chromiums may run on the machine)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if f"--user-data-dir={profile}".encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    out.append(int(entry))
    return out


def measure_cpu(pid: int, seconds: float, profile: str = "") -> tuple[float, float]:
    """(server, browser) CPU over `seconds`, in cores (1.0 = one core busy)."""
    browsers = chromium_pids(profile) if profile else []

    def browser_cpu() -> float:
        total = 0.0
        for p in browsers:
            with contextlib.suppress(OSError):
                total += cpu_seconds(p)
        return total

    s0, b0, t0 = cpu_seconds(pid), browser_cpu(), time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - t0
    return (cpu_seconds(pid) - s0) / elapsed, (browser_cpu() - b0) / elapsed


# --- sessions ----------------------------------------------------------------------------------------------------


class Sessions:
    """Browser sessions of one Chromium, each in its own window (visible) or as tabs of one window (hidden)."""

    def __init__(self, driver, base: str, name: str, fill: dict):
        self.driver, self.base, self.name, self.fill = driver, base, name, fill
        self.handles: list[str] = [driver.current_window_handle]
        self.used = 0  # the first window is handed out first
        self.profile = driver.capabilities.get("chrome", {}).get("userDataDir", "")

    def open(self, page: str, *, kind: str = "window", timeout: float = 240) -> float:
        """A new session on `page`; returns its time to content."""
        d = self.driver
        if self.used == 0:
            self.used = 1
        else:
            d.switch_to.new_window(kind)
            self.handles.append(d.current_window_handle)
            self.used += 1
        return self.goto(d.current_window_handle, page, timeout)

    def goto(self, handle: str, page: str, timeout: float = 240) -> float:
        path, js = PAGES[page]
        d = self.driver
        if d.current_window_handle != handle:
            d.switch_to.window(handle)
        started = time.perf_counter()
        d.get(page_url(self.base, self.name, path, self.fill))
        wait_for(d, js, timeout)
        return time.perf_counter() - started

    def close_all_but_one(self) -> None:
        d = self.driver
        for h in self.handles[1:]:
            d.switch_to.window(h)
            d.close()
        self.handles = self.handles[:1]
        d.switch_to.window(self.handles[0])
        d.get("about:blank")
        self.used = 0


def idle_level(sessions: Sessions, pid: int, n: int, pages: list[str], window: float, settle: float,
               kind: str = "window") -> dict:
    opened = []
    while sessions.used < n:
        page = pages[sessions.used % len(pages)]
        opened.append(sessions.open(page, kind=kind))
    if kind == "tab":  # show one more tab: every session's tab is now behind it
        sessions.driver.switch_to.new_window("tab")
        sessions.driver.get("about:blank")
    time.sleep(settle)
    server, browser = measure_cpu(pid, window, sessions.profile)
    row = {"sessions": n, "server": server, "browser": browser,
           "slowest_open": max(opened) if opened else None}
    print(f"  {n:3} {kind}s on {'/'.join(pages) if len(pages) < 3 else 'mixed pages'}: server {server:6.1%} of a "
          f"core, browser {browser:6.1%}" + (f"; slowest of the new ones drew in {max(opened):.2f} s" if opened
                                            else ""), file=sys.stderr, flush=True)
    return row


def draw_every_page(sessions: Sessions, pid: int, pages: list[str]) -> dict[str, tuple[list[float], float]]:
    """page -> (times to content over the sessions, the server's CPU seconds per opening)."""
    out: dict[str, tuple[list[float], float]] = {}
    for page in pages:
        cpu = cpu_seconds(pid)
        ts = [sessions.goto(h, page) for h in list(sessions.handles)]
        out[page] = ts, (cpu_seconds(pid) - cpu) / len(ts)
        print(f"  {page:13} median {statistics.median(ts):5.2f} s, worst {max(ts):5.2f} s over {len(ts)} sessions; "
              f"server CPU {out[page][1]:.2f} s per opening", file=sys.stderr, flush=True)
    return out


def burst(sessions: Sessions, page: str, timeout: float = 240) -> float:
    """Every session reloads `page` at once; seconds until the last has drawn its content (the browser draws all
    of them on the same machine: on 2 cores it, not the server, sets this figure)."""
    d = sessions.driver
    path, js = PAGES[page]
    url = page_url(sessions.base, sessions.name, path, sessions.fill)
    started = time.perf_counter()
    for h in sessions.handles:
        d.switch_to.window(h)
        d.execute_script("window.location.href = arguments[0]", url)  # returns at once, unlike driver.get
    time.sleep(0.5)
    for h in sessions.handles:
        d.switch_to.window(h)
        wait_for(d, js, max(1.0, timeout - (time.perf_counter() - started)))
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk", help="ZooKeeper host:port (default: start a throwaway one)")
    ap.add_argument("--partitions", type=int, default=50_000, help="size of the cluster")
    ap.add_argument("--sessions", type=int, default=25, help="sessions open while every page is drawn")
    ap.add_argument("--levels", default="1,5,10,25", help="idle session counts to measure")
    ap.add_argument("--window", type=float, default=20.0, help="seconds of each CPU measurement")
    ap.add_argument("--settle", type=float, default=6.0, help="seconds after the last open before measuring")
    ap.add_argument("--draw-pages", default=",".join(PAGES), help="pages each session opens in turn")
    ap.add_argument("--skip", default="", help="phases to skip: idle,mixed,hidden,draw,burst")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args()
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise SystemExit("needs Debian's chromium and chromium-driver (make deps)")
    levels = [int(x) for x in args.levels.split(",") if x]
    skip = set(args.skip.split(","))
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="keel-bench-sessions-")))
        zk = args.zk or stack.enter_context(zkserver.start(zkserver.free_port(), work / "zk")).connect
        topics = max(1, round(args.partitions / TOPICS_PER_PARTITION))
        spec = SandboxSpec(brokers=30, racks=3, topics=topics, seed=11)
        seeded, seconds = stack.enter_context(cluster(zk, "/keel-bench-sessions", spec))
        print(f"large: {seeded.summary()} in {seconds:.1f} s", file=sys.stderr, flush=True)
        fill = {"topic": "orders.v1", "broker": seeded.brokers[0]}
        config = work / "keel.toml"
        config.write_text(f'[keel]\nrole = "operator"\n\n[clusters.large]\nzk = "{zk}/keel-bench-sessions"\n')
        port = zkserver.free_port()
        base = stack.enter_context(serve_dashboard(config, work, port=port))
        pid = server_pid(port)
        driver = stack.enter_context(chromium(args.width, args.height))
        sessions = Sessions(driver, base, "large", fill)
        first = sessions.open("Overview", timeout=600)
        print(f"first load (reads the cluster from ZooKeeper) {first:.2f} s", file=sys.stderr, flush=True)
        sessions.close_all_but_one()
        quiet = measure_cpu(pid, args.window)[0]
        print(f"  no session: server {quiet:.1%} of a core", file=sys.stderr, flush=True)

        idle, mixed, hidden = [], [], []
        if "idle" not in skip:
            idle = [idle_level(sessions, pid, n, ["Overview"], args.window, args.settle) for n in levels]
            sessions.close_all_but_one()
        if "mixed" not in skip:
            mixed = [idle_level(sessions, pid, n, LIVE_PAGES, args.window, args.settle) for n in levels]
            sessions.close_all_but_one()
        if "hidden" not in skip:
            hidden = [idle_level(sessions, pid, max(levels), LIVE_PAGES, args.window, args.settle, kind="tab")]
            sessions.close_all_but_one()
        draws: dict[str, tuple[list[float], float]] = {}
        burst_seconds = burst_cpu = None
        if not {"draw", "burst"} <= skip:
            while sessions.used < args.sessions:
                sessions.open(LIVE_PAGES[sessions.used % len(LIVE_PAGES)])
            if "draw" not in skip:
                draws = draw_every_page(sessions, pid, [p for p in args.draw_pages.split(",") if p])
            if "burst" not in skip:
                cpu = cpu_seconds(pid)
                burst_seconds = burst(sessions, "Overview")
                burst_cpu = cpu_seconds(pid) - cpu
                print(f"  burst: {len(sessions.handles)} sessions reload the Overview at once: the last drew after "
                      f"{burst_seconds:.2f} s; server CPU {burst_cpu:.2f} s", file=sys.stderr, flush=True)

        load = os.getloadavg()
        print(f"\n{seeded.partitions:,} partitions, {len(seeded.brokers)} brokers; headless Chromium on the same "
              f"machine ({os.cpu_count()} cores, load average {load[0]:.2f} at the end); server CPU over "
              f"{args.window:g} s per row, % of one core (no session open: {quiet:.1%}).\n")
        print("| idle sessions | Overview: server · browser | mixed live pages: server · browser |")
        print("|---|---|---|")
        for i, n in enumerate(levels):
            a = f"{idle[i]['server']:.1%} · {idle[i]['browser']:.1%}" if idle else "—"
            b = f"{mixed[i]['server']:.1%} · {mixed[i]['browser']:.1%}" if mixed else "—"
            print(f"| {n} | {a} | {b} |")
        if hidden:
            print(f"| {hidden[0]['sessions']} in hidden tabs | | {hidden[0]['server']:.1%} · "
                  f"{hidden[0]['browser']:.1%} |")
        if draws:
            print(f"\nWith {len(sessions.handles)} sessions open, each opens every page in turn (time to content):\n")
            print("| page | median | worst | server CPU per opening |")
            print("|---|---|---|---|")
            for page, (ts, cpu) in draws.items():
                mark = "" if max(ts) <= TARGET_DRAW_SECONDS else " ⚠"
                print(f"| {page} | {statistics.median(ts):.2f} s | {max(ts):.2f} s{mark} | {cpu:.2f} s |")
        if burst_seconds is not None:
            print(f"\nAll {len(sessions.handles)} sessions reload the Overview at the same moment: the last has drawn "
                  f"after {burst_seconds:.2f} s; the server spent {burst_cpu:.2f} s of CPU on them.")
        worst_idle = max((r["server"] for r in idle + mixed if r["sessions"] == max(levels)), default=0.0)
        slow = [p for p, (ts, _) in draws.items() if max(ts) > TARGET_DRAW_SECONDS]
        print(f"\nidle {max(levels)} sessions: {worst_idle:.1%} of a core (target < {TARGET_IDLE_CORES:.0%})"
              + ("" if not slow else f"; over {TARGET_DRAW_SECONDS:g} s: {', '.join(slow)}"))


if __name__ == "__main__":
    main()
