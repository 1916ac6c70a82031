"""What checking OpenID Connect tokens costs: DescribeTable at the metadata benchmark's load
(`rest_adapter_bench.py`: 1,000 tables, wrk -t2 -c32) on this server with auth off and with
`auth_mode: oidc` against a real Keycloak (tests/support/keycloak.py), taking turns on copies
of one root, every request carrying the same bearer token (a client's token is reused until it
expires: after its first request, its check is a lookup). Prints requests/s and p50 of each,
the time a request costs more with oidc (from the throughput at saturation: CPUs / rate), and,
in-process, what one check costs with the token remembered and without (a new token).

    .venv/bin/python bench/oidc_bench.py [--tables 1000] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from app.oidc import TokenVerifier
from app.settings import Settings
from bench.rest_adapter_bench import (
    CHECKOUT,
    build_root,
    free_port,
    ours,
    parse_arguments,
    run_wrk,
    serving,
    workloads,
)
from tests.support.keycloak import AUDIENCE, PASSWORDS, Keycloak, running_keycloak


def oidc_environment(keycloak: Keycloak) -> dict[str, str]:
    return {**CHECKOUT, "LANCE_ADAPTER_AUTH_MODE": "oidc",
            "LANCE_ADAPTER_OIDC_ISSUER": keycloak.issuer,
            "LANCE_ADAPTER_OIDC_AUDIENCE": AUDIENCE,
            "LANCE_ADAPTER_OIDC_IDENTITY_CLAIM": "preferred_username",
            "LANCE_ADAPTER_ACCESS_GROUPS": '{"lance-admins": "admin"}'}


def check_costs(keycloak: Keycloak, count: int = 2000) -> tuple[float, float]:
    """Microseconds of one check: the token remembered, and a token not seen before."""
    settings = Settings(auth_mode="oidc", oidc_issuer=keycloak.issuer, oidc_audience=AUDIENCE)
    token = keycloak.password_token("alice", PASSWORDS["alice"]).encode()

    async def timed() -> tuple[float, float]:
        verifier = TokenVerifier(settings)
        await verifier.verify(token)
        started = time.perf_counter()
        for _ in range(count):
            await verifier.verify(token)
        remembered = (time.perf_counter() - started) / count
        started = time.perf_counter()
        for _ in range(count // 10):
            verifier._passed.clear()  # as if every request brought a new token
            await verifier.verify(token)
        return remembered, (time.perf_counter() - started) / (count // 10)

    remembered, new = asyncio.run(timed())
    return remembered * 1e6, new * 1e6


def main() -> None:
    args = parse_arguments(__doc__, rounds=3)
    cpus = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as scratch, running_keycloak(Path(scratch)) as keycloak:
        keycloak.set_access_token_lifespan(3600)
        token = keycloak.password_token("alice", PASSWORDS["alice"])
        template = Path(scratch) / "template"
        identifiers = build_root(template, args.tables)
        method, paths, body = workloads(identifiers)["DescribeTable"]
        rates: dict[str, list[float]] = {"auth off": [], "oidc": []}
        for round_number in range(args.rounds):
            for name, environment in (("auth off", CHECKOUT), ("oidc", oidc_environment(
                    keycloak))):
                root = Path(scratch) / f"{name}-{round_number}".replace(" ", "-")
                shutil.copytree(template, root)
                port = free_port()
                with serving(ours(root, port, args.workers), port, environment) as url:
                    result = run_wrk(url, method, paths, body, args,
                                     {"Authorization": f"Bearer {token}"})
                assert result.errors == 0, f"{name}: {result.errors} errors"
                rates[name].append(result.requests_per_second)
                print(f"round {round_number + 1} {name:<9} {result.requests_per_second:>8.0f} "
                      f"req/s  p50 {result.p50_ms:.2f} ms  p99 {result.p99_ms:.2f} ms")
        remembered, new = check_costs(keycloak)
    for off, oidc in zip(rates["auth off"], rates["oidc"], strict=True):
        added = (cpus / oidc - cpus / off) * 1000
        print(f"oidc/off {oidc / off:.2f}x; added per request {added:.3f} ms of CPU")
    print(f"one check in-process: {remembered:.1f} us remembered, {new:.1f} us a new token")


if __name__ == "__main__":
    main()
