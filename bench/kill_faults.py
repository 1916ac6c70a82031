"""kill -9 at scale (issue 49's figures): for each seed and each kind of write (insert, merge,
create, rename, drop), `--kills` cycles of a `dir` server killed at a random moment of the
load and restarted on the same root, each checked (`tests/support/kill_cycles.py`): every
acknowledged write reads back exactly once, every unanswered one is whole or absent, every
listed table reads. `--storage s3` runs the root on moto's S3. Prints one line per seed and
kind: kills, writes acknowledged, writes unanswered at the kill, violations (listed after).

    .venv/bin/python bench/kill_faults.py [--seeds 1,2,3] [--kills 20] [--kinds insert,...]
        [--storage local|s3] [--replica-restarts 20]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.glue import s3_storage, start_moto
from tests.support.kill_cycles import KINDS, Server, run_kind
from tests.support.kill_replicas import run_replicas


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--storage", choices=("local", "s3"), default="local")
    parser.add_argument("--replica-restarts", type=int, default=0,
                        help="then, per seed: two replicas on one root, one restarted this "
                        "many times while the other creates and inserts")
    arguments = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's line per request
    moto = start_moto() if arguments.storage == "s3" else None
    failed = []
    try:
        for seed in (int(text) for text in arguments.seeds.split(",")):
            for kind in arguments.kinds.split(","):
                with tempfile.TemporaryDirectory(prefix="kill-faults-") as work:
                    server = _server(Path(work), moto and moto[1], f"s{seed}{kind}")
                    started = time.monotonic()
                    server.start()
                    try:
                        report = run_kind(server, kind, arguments.kills, seed)
                    finally:
                        server.kill()
                print(f"{arguments.storage} seed {seed} {kind:7s} kills {report.kills:3d} "
                      f"acknowledged {report.acked:5d} unanswered {report.unanswered:4d} "
                      f"violations {len(report.violations):3d} half-done renames "
                      f"{report.half_done} ({time.monotonic() - started:.0f} s)", flush=True)
                failed.extend(report.violations)
            if arguments.replica_restarts:
                failed.extend(_replicas(arguments, seed, moto and moto[1]))
    finally:
        if moto is not None:
            moto[0].stop()
    for violation in failed:
        print("VIOLATION", violation)
    return 1 if failed else 0


def _replicas(arguments: argparse.Namespace, seed: int, moto_url: str | None) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="kill-faults-") as work:
        steady = _server(Path(work), moto_url, f"s{seed}replicas")
        killed = Server(steady.root, steady.storage, log=Path(work) / "killed.log")
        started = time.monotonic()
        steady.start()
        killed.start()
        try:
            report = run_replicas(killed, steady, arguments.replica_restarts, seed)
        finally:
            killed.kill()
            steady.kill()
    print(f"{arguments.storage} seed {seed} replicas restarts {report.kills:3d} "
          f"acknowledged {report.acked:5d} unanswered {report.unanswered:4d} "
          f"violations {len(report.violations):3d} ({time.monotonic() - started:.0f} s)",
          flush=True)
    return report.violations


def _server(work: Path, moto_url: str | None, bucket: str) -> Server:
    if moto_url is None:
        return Server(str(work / "root"), log=work / "server.log")
    import boto3

    storage = s3_storage(moto_url)
    boto3.client("s3", endpoint_url=moto_url, region_name=storage["aws_region"],
                 aws_access_key_id=storage["aws_access_key_id"],
                 aws_secret_access_key=storage["aws_secret_access_key"]).create_bucket(
        Bucket=bucket)
    return Server(f"s3://{bucket}/root", storage, log=work / "server.log")


if __name__ == "__main__":
    sys.exit(main())
