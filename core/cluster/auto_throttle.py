"""The auto-throttle loop (issue 28, item 3): every interval, measure the receiving brokers' inbound from their log
sizes, ask core.auto_throttle.decide for a rate, write it through the engine's change_throttle (recorded in History
as kind "throttle"), beat in the audit store; when nothing is copied any more, remove the throttles (as verify does)
and say so. The CLI (`execute --auto-throttle`, `auto-throttle`) runs it in its own process; the Reassign page runs
it in a background thread of the Streamlit server (`start_background`): the same function, the same rows.

A loop that dies leaves the last rate in place: nothing here removes a throttle except at the end of the
reassignment. Ctrl-C and an error end the row as "interrupted" / "failed" (liveness: dead); a killed process ends
nothing, and its row is found dead by its pid (same host) or its stale beat (core.auto_throttle.liveness).

Each measurement costs one ListPartitionReassignments (or the /admin node and its partitions through ZooKeeper),
one describeLogDirs per receiving broker (every replica it holds: the traffic to subtract is on the others) and one
describeConfigs per receiving broker at the start (the rate in force).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from core.auto_throttle import ALIVE, DEAD, Decision, Policy, Traffic, decide, describe_loop, liveness, traffic_of
from core.audit.store import Store, ThrottleLoop, ThrottleLoops
from core.cluster import engines
from core.cluster import reassign_progress as sampler
from core.errors import ValidationError
from core.plans import FOLLOWER_RATE
from core.reassign_progress import Moving, format_bytes

Handles = Callable[[], tuple[Any, Any]]  # -> (the engine's handle, a KafkaAdmin for the log sizes)


def measure(handle, admin, *, clock: Callable[[], float] = time.time) -> tuple[tuple[Moving, ...], Traffic]:
    """The moving partitions and one Traffic: every replica's size on each broker receiving a new replica."""
    moving = tuple(m for m in sampler.running(handle, admin) if m.adding or m.removing)
    receiving = sorted({b for m in moving for b in m.adding})
    start = clock()
    sizes = {}
    if receiving:
        dirs = admin.log_dirs(receiving)
        sizes = {(d.broker, r.topic, r.partition): r.size for d in dirs.dirs if d.error is None
                 for r in d.replicas if not r.is_future}
    return moving, traffic_of((start + clock()) / 2, moving, sizes)


def rate_in_force(admin, brokers: Iterable[int]) -> int | None:
    """The follower rate set (dynamically) on the receiving brokers, the lowest when they differ; None if none is."""
    found = []
    for answer in admin.broker_configs(brokers, [FOLLOWER_RATE]).values():
        if isinstance(answer, str):
            continue
        value, source, _ = answer.get(FOLLOWER_RATE, (None, "", ()))
        if value and value.isdigit() and "DYNAMIC" in source:
            found.append(int(value))
    return min(found) if found else None


def loop_state(loop: ThrottleLoop, *, now: float | None = None) -> str:
    """ALIVE, DEAD or ENDED; a loop that ended interrupted or failed counts as dead (its rate stays)."""
    now = time.time() if now is None else now
    if loop.ended and (loop.end_reason or "").startswith(("interrupted", "failed")):
        return DEAD
    pid_alive = None
    if loop.host == socket.gethostname():
        pid_alive = _pid_alive(loop.pid)
        if pid_alive and loop.owner == "dashboard" and loop.pid == os.getpid() and not loop.ended:
            pid_alive = any(r.loop_id == loop.id for r in _REGISTRY.values() if r.thread.is_alive())
    return liveness(loop.ended, now - loop.beat, float(loop.policy.get("interval", 30.0)), pid_alive)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def loops_report(store: Store, cluster: str) -> list[tuple[ThrottleLoop, str, str]]:
    """(loop, state, line) for the loops of `cluster` not ended on their own terms (alive, or dead): what verify,
    status and the page say."""
    return _report(ThrottleLoops(store).of(cluster))


def _report(loops: list[ThrottleLoop]) -> list[tuple[ThrottleLoop, str, str]]:
    out = []
    now = time.time()
    for loop in loops:
        state = loop_state(loop, now=now)
        if state in (ALIVE, DEAD):
            out.append((loop, state, describe_loop(loop.to_dict(), state, now - loop.beat)))
    return out


def settle_dead(store: Store, cluster: str, why: str) -> None:
    """End the rows of dead loops (verify found the reassignment complete and removed the throttles)."""
    loops = ThrottleLoops(store)
    for loop, state, _ in loops_report(store, cluster):
        if state == DEAD:
            loops.end(loop.id, f"dead; {why}")


def begin(store: Store, cluster: str, pol: Policy, *, owner: str, actor: str | None = None) -> int:
    """The loop's row; refused (typed, nothing written) while another loop of `cluster` is alive. The check and
    the insert are one transaction under the cluster's lock: of two instances starting at once, one loop wins."""
    def refuse(loops: list[ThrottleLoop]) -> None:
        for loop, state, line in _report(loops):
            if state == ALIVE:
                raise ValidationError(f"another auto-throttle loop runs for {cluster}: {line}",
                                      hint="stop it first (Ctrl-C, or Stop on the Reassign page): two loops would "
                                           "fight over one throttle")
    return ThrottleLoops(store).start(cluster=cluster, owner=owner, host=socket.gethostname(), pid=os.getpid(),
                                      policy=pol.to_dict(), actor=actor, refuse=refuse)


@dataclass
class Step:
    decision: Decision
    rate: int | None  # in force after the step
    action_id: int | None  # the throttle change written, if any


def run(handles: Handles, store: Store, pol: Policy, *, cluster: str, loop_id: int, actor: str | None = None,
        plan=None, on_line: Callable[[str], None] = print, stop: threading.Event | None = None,
        on_step: Callable[[Step], None] | None = None) -> str:
    """The loop, until the reassignment completes (throttles removed; returns why it ended) or `stop` is set."""
    loops, stop = ThrottleLoops(store), stop or threading.Event()
    older: Traffic | None = None
    current: int | None = None
    topics: set[str] = set()
    try:
        while True:
            handle, admin = handles()
            moving, newer = measure(handle, admin)
            topics |= {m.topic for m in moving}
            if older is None:
                current = rate_in_force(admin, newer.receiving)
            d = decide(older, newer, pol, current)
            if d.done:
                why = _finish(handle, store, plan, topics, cluster=cluster, actor=actor)
                on_line(f"{_now()}  auto-throttle: {why}")
                loops.end(loop_id, why)
                settle_dead(store, cluster, why)  # a loop that died before this one: its rate is gone too
                return why
            action_id = None
            if d.rate is not None:
                done = engines.reassignments(handle).change_throttle(handle, store, d.rate, cluster=cluster,
                                                                     actor=actor)
                action_id, was, current = done.action_id, current, d.rate
                on_line(f"{_now()}  auto-throttle: {_rate(was)} -> {_rate(d.rate)} ({d.reason}; action "
                        f"#{action_id})")
            else:
                on_line(f"{_now()}  auto-throttle: kept {_rate(current)} ({d.reason})")
            loops.beat(loop_id, rate=current, note=d.reason)
            if on_step is not None:
                on_step(Step(d, current, action_id))
            older = newer
            if stop.wait(pol.interval):
                loops.end(loop_id, "stopped: the last rate stays in place")
                return "stopped"
    except KeyboardInterrupt:
        loops.end(loop_id, f"interrupted (Ctrl-C): the last rate stays in place ({_rate(current)})")
        raise
    except BaseException as e:
        loops.end(loop_id, f"failed: {type(e).__name__}: {e}: the last rate stays in place ({_rate(current)})")
        raise


def _finish(handle, store: Store, plan, topics: set[str], *, cluster: str, actor: str | None) -> str:
    """Nothing is copied any more: remove the throttles as verify does (verify itself when the plan is known: it
    also marks the reassignment complete)."""
    engine = engines.reassignments(handle)
    if plan is not None:
        done = engine.verify(handle, store, plan, cluster=cluster, actor=actor)
        if done.complete:
            return "the reassignment completed: " + ("throttles removed" if done.throttles_removed
                                                     else "no throttle was left")
    removed = engine.clear_throttles(handle, store, topics, cluster=cluster, actor=actor,
                                     summary="auto-throttle: nothing is copied any more: throttles removed")
    return "nothing is copied any more: " + ("throttles removed" if removed else "no throttle was left")


def _rate(rate: int | None) -> str:
    return "unthrottled" if rate is None else f"{rate:,} B/s ({format_bytes(rate)}/s)"


def _now() -> str:
    return time.strftime("%H:%M:%S")


# --- loops started from the dashboard: threads of the Streamlit server process ------------------------------------


@dataclass
class Background:
    loop_id: int
    thread: threading.Thread
    stop: threading.Event
    lines: list[str]
    error: str | None = None


_REGISTRY: dict[str, Background] = {}
_LOCK = threading.Lock()


def start_background(handles: Handles, store: Store, pol: Policy, *, cluster: str, actor: str | None = None,
                     close: Callable[[], None] | None = None) -> int:
    """Start the loop for `cluster` in a daemon thread of this process (the dashboard's); its loop id."""
    with _LOCK:
        held = _REGISTRY.get(cluster)
        if held is not None and held.thread.is_alive():
            raise ValidationError(f"an auto-throttle loop started from the dashboard already runs for {cluster}",
                                  hint="stop it first")
        loop_id = begin(store, cluster, pol, owner="dashboard", actor=actor)
        bg = Background(loop_id, threading.Thread(name=f"keel-auto-throttle-{cluster}", daemon=True,
                                                  target=lambda: None), threading.Event(), [])

        def work() -> None:
            try:
                run(handles, store, pol, cluster=cluster, loop_id=loop_id, actor=actor, stop=bg.stop,
                    on_line=lambda s: bg.lines.append(s) or bg.lines.__delitem__(slice(0, -50)))
            except Exception as e:  # recorded on its row as failed (run did); kept for the page
                bg.error = f"{type(e).__name__}: {e}"
            finally:
                if close is not None:
                    close()

        bg.thread = threading.Thread(name=f"keel-auto-throttle-{cluster}", daemon=True, target=work)
        _REGISTRY[cluster] = bg
        bg.thread.start()
        return loop_id


def background(cluster: str) -> Background | None:
    return _REGISTRY.get(cluster)


def stop_background(cluster: str, timeout: float = 5.0) -> bool:
    """Ask the dashboard's loop of `cluster` to stop (the last rate stays); True if one was running."""
    bg = _REGISTRY.get(cluster)
    if bg is None or not bg.thread.is_alive():
        return False
    bg.stop.set()
    bg.thread.join(timeout)
    return True
