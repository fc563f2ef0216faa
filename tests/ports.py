"""Free loopback ports for the servers tests start, and how to tell a server that lost its port.

A port found free is closed before the server binds it; in between, any process's outgoing connection
may draw it from the same range. A server that then fails to bind says so in its log, and is started
again on other ports (a few times at most).
"""

from __future__ import annotations

import socket

PORT_ATTEMPTS = 3
"""Starts of a server tried, each on ports found free just before."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports nothing listens on now."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def free_port() -> int:
    """A loopback port nothing listens on now."""
    return free_ports(1)[0]


def lost_its_port(log: str) -> bool:
    """Whether a server's log says it could not bind a port (``address already in use``: SeaweedFS, Go;
    ``The port N is already in use``: Jupyter)."""
    return "already in use" in log
