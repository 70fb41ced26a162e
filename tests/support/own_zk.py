"""A ZooKeeper server of a test's own, for outages the session-wide server must not suffer.

Started with a short session timeout (SESSION_TIMEOUT) so that outages past it are quick; stop() / start()
keep its port and data dir (a restarted server restores its sessions from its log); pause() / resume() are
SIGSTOP / SIGCONT of the server JVM.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.processes import zkserver
from tests.support.sandbox_helpers import wait_until

SESSION_TIMEOUT = 4.0  # seconds: the server caps every session to this
SERVER_CONFIG = {"tickTime": 500, "minSessionTimeout": 1000, "maxSessionTimeout": int(SESSION_TIMEOUT * 1000)}


class OwnZooKeeper:
    def __init__(self, base: Path):
        self.dir = base / "zk"
        self.paused = False
        for _ in range(5):  # a free port can be taken before ZooKeeper binds it
            self.port = zkserver.free_port()
            try:
                self.start()
                return
            except zkserver.ZkPortInUse:
                continue
        raise RuntimeError("could not start a ZooKeeper of the test's own: 5 free ports were taken first")

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        zkserver.start(self.port, self.dir, timeout=60, detach=False, extra_config=SERVER_CONFIG)

    def stop(self) -> None:
        zkserver.stop(self.dir)

    def pause(self) -> None:
        zkserver.pause(self.dir)
        self.paused = True

    def resume(self) -> None:
        zkserver.resume(self.dir)
        self.paused = False
        wait_until(lambda: zkserver.ruok(self.port), timeout=30, message="ZooKeeper to serve after SIGCONT")

    def close(self) -> None:
        if self.paused:
            zkserver.resume(self.dir)
        zkserver.stop(self.dir)
