"""Where the server listens, and running it there.

The address comes from the command line only (no config key, no environment variable), so the
server is reachable from other machines only when the command that starts it says so.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

import uvicorn
from starlette.applications import Starlette

from localagent.errors import LocalagentError


class ListenError(LocalagentError):
    exit_code = 1


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 takes a free one (read it back with `sock.getsockname()`)."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
    except OSError as error:
        raise ListenError(f"cannot listen on {host}: {error.strerror or error}") from None
    sock = socket.socket(family, kind, protocol)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def run(app: Starlette, sock: socket.socket) -> None:
    """Serve until Ctrl-C or SIGTERM; requests still running get a few seconds to finish."""
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5, lifespan="on")
    # uvicorn shuts down on Ctrl-C, then raises it again; stopping is what was asked for.
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.Server(config).run(sockets=[sock])
