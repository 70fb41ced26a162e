"""Helpers of the sign-in end-to-end tests: the app under `streamlit run` with extra options, a real OpenID Connect
provider on loopback (oidc-provider-mock), and a small header-injecting reverse proxy (HTTP and websockets).

Everything listens on 127.0.0.1: the browser, the redirect URI and the provider use that one host name."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pytest

from tests.support.browser import HOST, DashboardDidNotStart, serve_dashboard

ROOT = Path(__file__).resolve().parents[2]
IDENTITY_HEADERS = ("x-forwarded-user", "x-forwarded-email", "x-forwarded-groups", "x-keel-proxy-secret")


@contextlib.contextmanager
def serve_app(tmp_path: Path, config_text: str, *, port: int | None = None, args: Sequence[str] = (),
              env: Mapping[str, str] | None = None) -> Iterator[str]:
    """`streamlit run` the router on `port` (free if None) with this keel.toml; yields its URL."""
    config = tmp_path / "keel.toml"
    config.write_text(config_text)
    try:
        with serve_dashboard(config, tmp_path, port=port, args=args, env=env, drop_env=("KEEL_ACTOR",)) as url:
            yield url
    except DashboardDidNotStart as e:
        pytest.fail(str(e))


@contextlib.contextmanager
def oidc_provider(users) -> Iterator[str]:
    """oidc-provider-mock (discovery, JWKS, authorization-code flow, end_session) on 127.0.0.1; yields its URL."""
    import oidc_provider_mock
    import werkzeug.serving

    server = werkzeug.serving.make_server(HOST, 0, oidc_provider_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
                              name="oidc-provider")
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class HeaderProxy:
    """A reverse proxy on 127.0.0.1 in front of `upstream` (host, port): it strips the identity headers a client
    sent (as an authenticating proxy must) and adds `inject`; plain requests are forwarded one per connection
    (Connection: close), a websocket upgrade is piped both ways once its handshake went through."""

    def __init__(self, upstream: tuple[str, int], inject: Mapping[str, str], *, strip: bool = True):
        self.upstream, self.inject, self.strip = upstream, dict(inject), strip
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="header-proxy")

    def __enter__(self) -> "HeaderProxy":
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, HOST, 0, limit=2 ** 20))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            server.close()
            self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")[:-2]
        request, headers = lines[0], lines[1:]
        upgrade = any(h.lower().startswith("upgrade:") for h in headers)
        kept = []
        for h in headers:
            name = h.split(":", 1)[0].strip().lower()
            if (self.strip and name in IDENTITY_HEADERS) or name in self.inject_names or \
                    (not upgrade and name in ("connection", "keep-alive")):
                continue
            kept.append(h)
        kept += [f"{k}: {v}" for k, v in self.inject.items()]
        if not upgrade:
            kept.append("Connection: close")
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        up_writer.write(("\r\n".join([request, *kept]) + "\r\n\r\n").encode("latin-1"))
        await up_writer.drain()

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    @property
    def inject_names(self) -> set[str]:
        return {k.lower() for k in self.inject}
