"""The real dashboard under `streamlit run` and headless Chromium: shared by the end-to-end tests and bench/pages.py.

`serve_dashboard` starts the router on 127.0.0.1 (a free port unless given) with a keel.toml, waits for Streamlit's
health endpoint and stops the process by PID afterwards; `chromium` is Debian's chromium driven by chromedriver
(selenium), with a throwaway profile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from sandbox.processes import zkserver

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync")


class DashboardDidNotStart(RuntimeError):
    """`streamlit run` exited or did not answer its health check in time; the message ends with its log."""


def have_chromium() -> bool:
    return os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)


@contextlib.contextmanager
def serve_dashboard(config: Path, workdir: Path, *, port: int | None = None, args: Sequence[str] = (),
                    env: Mapping[str, str] | None = None, drop_env: Sequence[str] = (),
                    timeout: float = 60.0) -> Iterator[str]:
    """`streamlit run dashboard/streamlit_app.py` with KEEL_CONFIG=`config` and the action history in `workdir`;
    yields the URL. `drop_env`: variables of this process the app must not see (e.g. KEEL_ACTOR)."""
    port = port or zkserver.free_port()
    full_env = {**os.environ, "KEEL_CONFIG": str(config), "KEEL_STORE": str(workdir / "keel.sqlite"),
                "PYTHONUNBUFFERED": "1", **(env or {})}
    for name in drop_env:
        full_env.pop(name, None)
    log_path = workdir / "streamlit.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard/streamlit_app.py", "--server.address", HOST,
         "--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false", *args],
        cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise DashboardDidNotStart(f"streamlit exited with {proc.returncode}:\n"
                                           f"{log_path.read_text(errors='replace')[-5000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            if time.monotonic() > deadline:
                raise DashboardDidNotStart(f"streamlit did not answer within {timeout:g} s:\n"
                                           f"{log_path.read_text(errors='replace')[-5000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@contextlib.contextmanager
def chromium(width: int = 1500, height: int = 1900):
    """A headless Chromium (selenium WebDriver) with a fresh profile, removed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="keel-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
