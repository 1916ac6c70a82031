"""`python -m app.container_probe`: exit 0 when the local adapter's /healthz answers 200.

The container HEALTHCHECK: it reads the same LANCE_ADAPTER_* settings as the server (port,
host, root_path) and imports nothing heavy, so it is cheap to run every few seconds.
"""

from __future__ import annotations

import sys
import urllib.request

from app.config import load_settings
from backends.core.settings import ConfigurationError

_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def health_url(host: str, port: int, root_path: str) -> str:
    address = _WILDCARDS.get(host, host)
    if ":" in address and not address.startswith("["):
        address = f"[{address}]"
    return f"http://{address}:{port}{root_path}/healthz"


def main(timeout: float = 3.0) -> int:
    try:
        settings = load_settings()
    except ConfigurationError as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return 1
    url = health_url(settings.host, settings.port, settings.root_path)
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(url, timeout=timeout) as answer:
            healthy = answer.status == 200
    except OSError as error:
        print(f"unhealthy: {url}: {error}", file=sys.stderr)
        return 1
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
