"""Small helpers every kind of test uses: a free loopback port and unique names."""

from __future__ import annotations

import socket
import uuid


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unique(prefix: str) -> str:
    """`prefix` with a random suffix: a name no other test (or earlier run) has used."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"
