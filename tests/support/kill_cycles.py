"""kill -9 of `lance-adapter serve` at random moments of one kind of write, then a restart on
the same root, checked each time: what was answered 200 reads back exactly once, what was not
answered is all there or not there at all, and every listed table reads and drops.

Kinds: `insert` (InsertIntoTable, three writers on one table), `merge` (MergeInsertIntoTable,
three writers each upserting its own keys), `create` (CreateTable), `rename` (RenameTable of
root and namespace tables), `drop` (DropTable) and `update` (UpdateTable, three writers each
counting up in its own rows with keyed `n = n + 1`). `run_kind` runs `kills` cycles of one
kind with a seeded random kill moment; `tests/test_kill_cycles.py` runs a few of each,
`bench/kill_faults.py` many (the figures of issue 49); two replicas on one root are
`tests/support/kill_replicas.py`."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import lance
import pyarrow as pa

from backends.directory.renames import INTENTS_DIRECTORY
from tests.support.cli import CLI, cli_environment, wait_until_serving
from tests.support.common import free_port
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
KINDS = ("insert", "merge", "create", "rename", "drop", "update")
WRITERS = 3
ROWS = 20  # rows an insert or a merge writes
MOVED = 12  # tables a rename or a drop cycle works through


@dataclass
class Server:
    """The server under test: a `dir` root (local or on S3) served by one worker."""

    root: str
    storage: dict[str, str] = field(default_factory=dict)  # pylance's options for the root
    log: Path = Path("/dev/null")
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        properties = [f"root={self.root}",
                      *(f"storage.{key}={value}" for key, value in self.storage.items())]
        flags = [part for prop in properties for part in ("--prop", prop)]
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [CLI, "serve", "--impl", "dir", *flags,
                 "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
                 "--workers", "1"],
                stdout=log, stderr=log, env=cli_environment())
        wait_until_serving(self.url, self.process)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()  # SIGKILL
            self.process.wait(timeout=30)

    def age_intents(self) -> None:
        """Date the intents of renames the kill cut off an hour back: the time a replaced
        replica takes to come back in production, past `rename_recovery_after`, without
        waiting for it (file times are the clock the server reads)."""
        intents = Path(self.root) / INTENTS_DIRECTORY
        for intent in intents.glob("*.json") if "://" not in self.root else ():
            then = time.time() - 3600
            os.utime(intent, (then, then))

    def post(self, path: str, **keywords: object) -> httpx.Response:
        if "content" not in keywords and "json" not in keywords:
            keywords["json"] = {}
        return httpx.post(f"{self.url}{path}", timeout=60, **keywords)  # type: ignore[arg-type]

    def rows(self, table: str) -> pa.Table:
        """The table's rows, read by pylance at the location the server describes."""
        location = self.post(f"/v1/table/{table}/describe").json()["location"]
        return lance.dataset(location, storage_options=self.storage or None).to_table(
            columns=["id", "name"])


@dataclass
class Ledger:
    """What one kind's cycles sent: answered 200 (`acked`) or not answered (`unanswered`),
    and the checks' findings."""

    carried: dict[object, object]  # what one cycle's check leaves to the next one's
    acked: list[object] = field(default_factory=list)
    unanswered: list[object] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # answered, not 200: status and text
    half_done: int = 0  # renames cut off with both names, as documented for object storage
    violations: list[str] = field(default_factory=list)
    first_ack: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def outcome(self, item: object, answer: httpx.Response | None) -> None:
        with self.lock:
            if answer is not None and answer.status_code == 200:
                self.acked.append(item)
                self.first_ack.set()
            elif answer is None:
                self.unanswered.append(item)
            else:
                self.refused.append(f"{answer.status_code} {answer.text[:200]}")


def _sent(ledger: Ledger, item: object, send: Callable[[], httpx.Response]) -> None:
    try:
        answer = send()
    except httpx.TransportError:
        answer = None  # killed mid-request: it may or may not have taken effect
    ledger.outcome(item, answer)


# -- the kinds: prepare (before the load), writers (threads of steps), check (after restart) --

@dataclass
class Kind:
    prepare: Callable[[Server, int], None]
    writers: Callable[[Server, int, Ledger], list[Callable[[int], bool]]]
    check: Callable[[Server, int, Ledger], None]


def insert_writers(server: Server, cycle: int, ledger: Ledger,
                    base: int = 0) -> list[Callable[[int], bool]]:
    def writer(index: int) -> Callable[[int], bool]:
        def step(attempt: int) -> bool:
            first = base + ((cycle * WRITERS + index) * 10_000 + attempt) * ROWS
            _sent(ledger, first, lambda: _keyed_insert(server, first))
            return True
        return step
    return [writer(index) for index in range(WRITERS)]


def _keyed_insert(server: Server, first: int) -> httpx.Response:
    """The insert of the rows from `first`, keyed by them (a retry is answered as done)."""
    return server.post("/v1/table/ns$t/insert", headers={**ARROW, "Idempotency-Key": f"{first}"},
                       content=arrow_stream(sample_table(ROWS, first)))


def _check_inserts(server: Server, cycle: int, ledger: Ledger) -> None:
    """Acknowledged inserts there once, unanswered ones whole or absent; then each unanswered
    one sent again with its key: all there exactly once."""
    check_inserted(server, cycle, ledger)
    if not ledger.unanswered:
        return
    sent_again(server, cycle, ledger, ledger.unanswered)
    retried = Ledger(ledger.carried, acked=[*ledger.acked, *ledger.unanswered])
    check_inserted(server, cycle, retried)
    ledger.violations.extend(f"{violation} (after the retries)" for violation in retried.violations)


def sent_again(server: Server, cycle: int, ledger: Ledger,
               unanswered: list[object]) -> list[object]:
    """Send each of the `unanswered` inserts again with its key (a violation unless 200)."""
    for first in unanswered:
        answer = _keyed_insert(server, first)  # type: ignore[arg-type]
        if answer.status_code != 200:
            ledger.violations.append(f"cycle {cycle}: the retry of {first} answered "
                                     f"{answer.status_code} {answer.text[:200]}")
    return unanswered


def check_inserted(server: Server, cycle: int, ledger: Ledger) -> None:
    ids = server.rows("ns$t").column("id").to_pylist()
    if len(ids) != len(set(ids)):
        ledger.violations.append(f"cycle {cycle}: {len(ids) - len(set(ids))} rows twice")
    present = set(ids)
    for first in ledger.acked:
        if not set(range(first, first + ROWS)) <= present:  # type: ignore[operator]
            ledger.violations.append(f"cycle {cycle}: acknowledged insert {first} lost")
    for first in ledger.unanswered:
        batch = set(range(first, first + ROWS))  # type: ignore[operator]
        if batch & present and not batch <= present:
            ledger.violations.append(f"cycle {cycle}: unanswered insert {first} half there")


def _merge_writers(server: Server, cycle: int, ledger: Ledger) -> list[Callable[[int], bool]]:
    def writer(index: int) -> Callable[[int], bool]:
        def step(attempt: int) -> bool:
            table = sample_table(ROWS, index * ROWS)
            tag = f"c{cycle}w{index}a{attempt}"
            table = table.set_column(1, "name", pa.array([tag] * ROWS))
            _sent(ledger, (index, tag), lambda: server.post(
                "/v1/table/ns$m/merge_insert?on=id&when_matched_update_all=true"
                "&when_not_matched_insert_all=true", headers=ARROW, content=arrow_stream(table)))
            return True
        return step
    return [writer(index) for index in range(WRITERS)]


def _check_merges(server: Server, cycle: int, ledger: Ledger) -> None:
    rows = server.rows("ns$m")
    ids, names = rows.column("id").to_pylist(), rows.column("name").to_pylist()
    if sorted(ids) != list(range(WRITERS * ROWS)):
        ledger.violations.append(f"cycle {cycle}: merged keys are {len(ids)} rows, not "
                                 f"{WRITERS * ROWS} once each")
    for index in range(WRITERS):
        mine = {name for key, name in zip(ids, names, strict=True)
                if index * ROWS <= key < (index + 1) * ROWS}
        acked = [tag for writer, tag in ledger.acked if writer == index]  # type: ignore[misc]
        pending = {tag for writer, tag in ledger.unanswered if writer == index}  # type: ignore[misc]
        allowed = {*(acked[-1:] or [ledger.carried.get(index, "initial")]), *pending}
        if len(mine) != 1 or not mine <= allowed:
            ledger.violations.append(f"cycle {cycle}: writer {index}'s keys read {sorted(mine)}, "
                                     f"not one of {sorted(allowed)}")
        ledger.carried[index] = next(iter(mine))


def create_writers(server: Server, cycle: int, ledger: Ledger,
                    prefix: str = "c") -> list[Callable[[int], bool]]:
    def step(attempt: int) -> bool:
        name = f"ns${prefix}{cycle}_{attempt}"
        _sent(ledger, name, lambda: server.post(
            f"/v1/table/{name}/create", headers=ARROW, content=arrow_stream(sample_table(5))))
        return True
    return [step]


def _check_creates(server: Server, cycle: int, ledger: Ledger) -> None:
    listed = {f"ns${name}" for name in listed_tables(server, "ns")}
    for name in ledger.acked:
        if name not in listed:
            ledger.violations.append(f"cycle {cycle}: acknowledged table {name} not listed")
    _check_listed_read(server, cycle, ledger, "ns", 5)


def _moved_names(cycle: int) -> list[tuple[str, str]]:
    """The tables a rename or drop cycle works through: root and namespace ones, alternately."""
    return [(f"m{cycle}_{i}", f"n{cycle}_{i}") if i % 2
            else (f"ns$m{cycle}_{i}", f"ns$n{cycle}_{i}") for i in range(MOVED)]


def _prepare_moved(server: Server, cycle: int) -> None:
    for index, (name, _) in enumerate(_moved_names(cycle)):
        server.post(f"/v1/table/{name}/create", headers=ARROW,
                    content=arrow_stream(sample_table(index + 1))).raise_for_status()


def _moving_writers(operation: str) -> Callable[[Server, int, Ledger], list[Callable[[int], bool]]]:
    def writers(server: Server, cycle: int, ledger: Ledger) -> list[Callable[[int], bool]]:
        names = _moved_names(cycle)

        def step(attempt: int) -> bool:
            if attempt >= len(names):
                return False
            old, new = names[attempt]
            if operation == "rename":
                body = {"new_table_name": new.split("$")[-1]}
                if "$" in new:
                    body["new_namespace_id"] = ["ns"]
                _sent(ledger, attempt, lambda: server.post(f"/v1/table/{old}/rename", json=body))
            else:
                _sent(ledger, attempt, lambda: server.post(f"/v1/table/{old}/drop"))
            return True
        return [step]
    return writers


def _check_half_rename(server: Server, cycle: int, ledger: Ledger, old: str, new: str,
                       rows: int) -> None:
    """A rename cut off between its two catalog calls on object storage leaves both names
    (documented in operations.md, "Faults and recovery"): the data is the new name's, so
    DropTable of the old one keeps it."""
    ledger.half_done += 1
    if server.post(f"/v1/table/{old}/drop").status_code != 200:
        ledger.violations.append(f"cycle {cycle}: the old name {old} of a half rename "
                                 "does not drop")
    check_rows(server, cycle, ledger, new, rows)


def _exists(server: Server, name: str) -> bool:
    return server.post(f"/v1/table/{name}/exists").status_code == 200


def _check_moved(operation: str) -> Callable[[Server, int, Ledger], None]:
    def check(server: Server, cycle: int, ledger: Ledger) -> None:
        for index, (old, new) in enumerate(_moved_names(cycle)):
            there = [name for name in (old, new) if _exists(server, name)]
            sent = index in ledger.acked or index in ledger.unanswered
            if operation == "rename":
                allowed = [[new]] if index in ledger.acked else [[old], [new]] if sent else [[old]]
                if there == [old, new] and index in ledger.unanswered and "://" in server.root:
                    _check_half_rename(server, cycle, ledger, old, new, index + 1)
                    there = [new]  # as documented: the old name's DropTable left the new one
            else:
                allowed = [[]] if index in ledger.acked else [[old], []] if sent else [[old]]
            if there not in allowed:
                ledger.violations.append(f"cycle {cycle}: table {index} is at {there}, not one "
                                         f"of {allowed}")
            for name in there:
                check_rows(server, cycle, ledger, name, index + 1)
        _check_listed_read(server, cycle, ledger, "ns", None)
    return check


def listed_tables(server: Server, namespace: str) -> list[str]:
    answer = httpx.get(f"{server.url}/v1/namespace/{namespace}/table/list", timeout=60)
    answer.raise_for_status()
    return answer.json()["tables"]


def check_rows(server: Server, cycle: int, ledger: Ledger, name: str, rows: int | None) -> None:
    counted = server.post(f"/v1/table/{name}/count_rows")
    if counted.status_code != 200 or (rows is not None and counted.json() != rows):
        ledger.violations.append(f"cycle {cycle}: table {name} counts {counted.status_code} "
                                 f"{counted.text[:200]}, not {rows}")


def _check_listed_read(server: Server, cycle: int, ledger: Ledger, namespace: str,
                       rows: int | None) -> None:
    for name in listed_tables(server, namespace):
        check_rows(server, cycle, ledger, f"{namespace}${name}", rows)


def prepare_table(name: str, rows: pa.Table) -> Callable[[Server, int], None]:
    def prepare(server: Server, cycle: int) -> None:
        if cycle == 0:
            server.post(f"/v1/table/{name}/create", headers=ARROW,
                        content=arrow_stream(rows)).raise_for_status()
    return prepare


def _counted_rows() -> pa.Table:
    """The rows the update writers count in: `n` 0 everywhere."""
    return sample_table(WRITERS * ROWS).append_column("n", pa.array([0] * (WRITERS * ROWS)))


def _keyed_update(server: Server, writer: int, key: str) -> httpx.Response:
    """`n = n + 1` in writer `writer`'s rows, keyed (a retry is answered as done)."""
    first = writer * ROWS
    return server.post("/v1/table/ns$u/update", headers={"Idempotency-Key": key}, json={
        "predicate": f"id >= {first} AND id < {first + ROWS}", "updates": [["n", "n + 1"]]})


def _update_writers(server: Server, cycle: int, ledger: Ledger) -> list[Callable[[int], bool]]:
    def writer(index: int) -> Callable[[int], bool]:
        def step(attempt: int) -> bool:
            key = f"c{cycle}w{index}a{attempt}"
            _sent(ledger, (index, key), lambda: _keyed_update(server, index, key))
            return True
        return step
    return [writer(index) for index in range(WRITERS)]


def _check_updates(server: Server, cycle: int, ledger: Ledger) -> None:
    """Each writer's rows all at one count (no update half done); the unanswered updates
    sent again with their keys; then each count is its acknowledged and retried updates,
    each once."""
    for index, key in ledger.unanswered:  # type: ignore[misc]
        answer = _keyed_update(server, index, key)
        if answer.status_code != 200:
            ledger.violations.append(f"cycle {cycle}: the retry of {key} answered "
                                     f"{answer.status_code} {answer.text[:200]}")
    location = server.post("/v1/table/ns$u/describe").json()["location"]
    rows = lance.dataset(location, storage_options=server.storage or None).to_table(
        columns=["id", "n"])
    if sorted(rows.column("id").to_pylist()) != list(range(WRITERS * ROWS)):
        ledger.violations.append(f"cycle {cycle}: the updated table holds {rows.num_rows} rows")
    for index in range(WRITERS):
        counts = {n for key, n in zip(rows.column("id").to_pylist(),
                                      rows.column("n").to_pylist(), strict=True)
                  if index * ROWS <= key < (index + 1) * ROWS}
        sent = sum(1 for writer, _ in [*ledger.acked, *ledger.unanswered]  # type: ignore[misc]
                   if writer == index)
        expected = int(ledger.carried.get(index, 0)) + sent  # type: ignore[call-overload]
        if counts != {expected}:
            ledger.violations.append(f"cycle {cycle}: writer {index}'s rows count "
                                     f"{sorted(counts)}, not {expected}")
        ledger.carried[index] = max(counts) if counts else expected


_MERGED = sample_table(WRITERS * ROWS).set_column(
    1, "name", pa.array(["initial"] * (WRITERS * ROWS)))


KIND_STEPS = {
    "insert": Kind(prepare_table("ns$t", sample_table(1, -1)), insert_writers, _check_inserts),
    "merge": Kind(prepare_table("ns$m", _MERGED), _merge_writers, _check_merges),
    "create": Kind(lambda server, cycle: None, create_writers, _check_creates),
    "rename": Kind(_prepare_moved, _moving_writers("rename"), _check_moved("rename")),
    "drop": Kind(_prepare_moved, _moving_writers("drop"), _check_moved("drop")),
    "update": Kind(prepare_table("ns$u", _counted_rows()), _update_writers, _check_updates),
}


@dataclass
class KindReport:
    kind: str
    kills: int
    acked: int
    unanswered: int
    violations: list[str]
    half_done: int = 0


def run_kind(server: Server, kind: str, kills: int, seed: int) -> KindReport:
    """`kills` cycles of `kind` on a started `server` of a root of its own, each killed at a
    random moment (drawn from `seed`) after its first acknowledgement, restarted and checked."""
    chooser = random.Random(f"{seed}-{kind}")
    steps = KIND_STEPS[kind]
    server.post("/v1/namespace/ns/create")  # 409 when it exists already: either is fine
    totals = [0, 0, 0]
    violations: list[str] = []
    carried: dict[object, object] = {}
    for cycle in range(kills):
        steps.prepare(server, cycle)
        ledger = Ledger(carried)
        stop = threading.Event()
        threads = [threading.Thread(target=loop, args=(stop, step))
                   for step in steps.writers(server, cycle, ledger)]
        for thread in threads:
            thread.start()
        acknowledged = ledger.first_ack.wait(timeout=120)
        stop.wait(chooser.uniform(0.0, 0.25))  # the random moment of the kill
        stop.set()  # the writers send nothing more: what is in flight meets the kill
        server.kill()
        for thread in threads:
            thread.join(timeout=120)
        server.age_intents()
        server.start()
        if not acknowledged:
            ledger.violations.append(f"cycle {cycle}: nothing acknowledged within 120 s")
        steps.check(server, cycle, ledger)
        totals[0] += len(ledger.acked)
        totals[1] += len(ledger.unanswered)
        totals[2] += ledger.half_done
        violations.extend(ledger.violations)
    return KindReport(kind, kills, totals[0], totals[1], violations, totals[2])


def loop(stop: threading.Event, step: Callable[[int], bool]) -> None:
    attempt = 0
    while not stop.is_set() and step(attempt):
        attempt += 1
