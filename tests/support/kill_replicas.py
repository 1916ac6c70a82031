"""Two replicas of `lance-adapter serve` on one `dir` root, one killed with SIGKILL and
restarted again and again while the other writes (`tests/support/kill_cycles.py` for one
server): nothing either acknowledged is lost."""

from __future__ import annotations

import random
import threading

from tests.support.kill_cycles import (
    KindReport,
    Ledger,
    Server,
    check_inserted,
    check_rows,
    create_writers,
    insert_writers,
    listed_tables,
    loop,
    prepare_table,
    sent_again,
)
from tests.support.lance_data import sample_table


def run_replicas(killed: Server, steady: Server, restarts: int, seed: int) -> KindReport:
    """Two replicas on one root: `steady` creates tables and inserts into `ns$t` throughout,
    while `killed` inserts into it too and is killed at random moments (drawn from `seed`)
    and restarted `restarts` times, each of its unanswered inserts sent again with its key
    once it is back. Then: every table `steady` acknowledged is listed and reads through
    both, and every insert acknowledged (first or on its retry) reads back exactly once."""
    chooser = random.Random(f"{seed}-replicas")
    steady.post("/v1/namespace/ns/create")
    prepare_table("ns$t", sample_table(1, -1))(steady, 0)
    kept, dying = Ledger({}), Ledger({})
    kept_stop = threading.Event()
    # `steady` never pauses, also while `killed` is down and retrying: its retries look
    # through every commit made since their first attempts (`backends.tables.keys`).
    kept_threads = [threading.Thread(target=loop, args=(kept_stop, step)) for step in
                    [*create_writers(steady, 0, kept, "r"),
                     *insert_writers(steady, 0, kept, base=500_000_000)]]
    for thread in kept_threads:
        thread.start()
    retried: list[int] = []
    try:
        for cycle in range(restarts):
            dying.first_ack.clear()
            stop = threading.Event()
            threads = [threading.Thread(target=loop, args=(stop, step))
                       for step in insert_writers(killed, cycle, dying)]
            for thread in threads:
                thread.start()
            if not dying.first_ack.wait(timeout=120):
                dying.violations.append(f"restart {cycle}: nothing acknowledged within 120 s")
            stop.wait(chooser.uniform(0.0, 0.25))
            stop.set()
            killed.kill()
            for thread in threads:
                thread.join(timeout=120)
            killed.start()
            # As a client would, at once: each unanswered insert sent again with its key.
            retried.extend(sent_again(killed, cycle, dying, dying.unanswered[len(retried):]))
    finally:
        kept_stop.set()
        for thread in kept_threads:
            thread.join(timeout=120)
    tables = [name for name in kept.acked if isinstance(name, str)]
    inserts = [first for first in kept.acked if isinstance(first, int)]
    merged = Ledger({}, acked=[*inserts, *dying.acked, *dying.unanswered])
    check_inserted(steady, restarts, merged)
    for server in (killed, steady):
        listed = {f"ns${name}" for name in listed_tables(server, "ns")}
        merged.violations.extend(f"table {name} not listed by {server.url}"
                                 for name in tables if name not in listed)
        for name in tables:
            check_rows(server, restarts, merged, name, 5)
    merged.violations.extend(f"the steady replica answered {refusal}" for refusal in kept.refused)
    return KindReport("replicas", restarts, len(kept.acked) + len(dying.acked),
                      len(dying.unanswered), [*dying.violations, *merged.violations])
