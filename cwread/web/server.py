"""`cwread serve`'s server: the reading room (cwread.web.app) on Uvicorn, bound before it is
announced, so that a port in use is one line, and its URL the first line on stdout."""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path

from cwread import api
from cwread.errors import InputError
from cwread.web.app import LOOPBACK, Room, make_app


def bound_socket(host: str, port: int) -> socket.socket:
    """A socket listening on (host, port); InputError, one line, where it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} is in use on {host}: give another with --port (0: any free one)") from None
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def run_server(
    paths: list[Path],
    session: api.SessionSettings,
    host: str,
    port: int,
    open_browser: bool,
    run: api.RunSettings | None = None,
) -> None:
    """Serve the reading room until Ctrl-C: its URL first on stdout, a host beyond this machine
    said on stderr. `run`: what a question's run is asked for (the settings file's stages)."""
    import uvicorn

    from cwread.views import console

    room = Room(paths, session, run=run or api.RunSettings())
    sock = bound_socket(host, port)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    print(url, flush=True)
    if host not in LOOPBACK:
        console.notice(f"listening on {host}: any machine that reaches it can read these books")
    allowed = (*LOOPBACK, host) if host not in ("0.0.0.0", "::") else ("*",)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(
        make_app(room, allowed), log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        sys.stdout.flush()
