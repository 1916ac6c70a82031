"""Credential vending (issue 18), one more engine: Daft, with daft-lance, on vended keys only.

Daft runs in a process with no credentials of its own (`run_client`), in front of moto behind
the S3 policy gate (`tests/support/s3_policy_gate.py`). Two ways in:

- daft-lance's own REST-namespace support (`namespace_impl="rest"`): it asks DeclareTable and
  DescribeTable with `vend_credentials: true` and hands the answer's `storage_options` to
  pylance, which writes and reads;
- a table location and the vended keys put into Daft's `IOConfig(s3=S3Config(...))`: Lance reads
  through it, and so does Daft's own S3 client (glob listing, `download()`), which is refused a
  neighbouring table's prefix with the same keys, unless the minted policy is widened.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.vending import Storage, adapter, run_client, vending_on

DAFT = r"""
import json, sys
import daft, daft_lance
from daft.io import IOConfig, S3Config
command, *rest = sys.argv[1:]
if command == "namespace":  # write, append and read through the REST namespace
    url, table = rest
    where = {"namespace_impl": "rest", "namespace_properties": {"uri": url}, "table_id": [table]}
    rows = {"id": list(range(300)), "text": [f"row {i}" for i in range(300)],
            "score": [None if i % 7 == 0 else i / 4 for i in range(300)]}
    daft_lance.write_lance(daft.from_pydict(rows), mode="create", **where)
    more = {"id": [300], "text": ["appended"], "score": [0.5]}
    daft_lance.write_lance(daft.from_pydict(more), mode="append", **where)
    print(json.dumps(daft_lance.read_lance(**where).sort("id").to_pydict()))
elif command == "io-config":  # the vended keys in Daft's own IOConfig
    location, neighbour, options = rest[0], rest[1], json.loads(rest[2])
    io = IOConfig(s3=S3Config(
        key_id=options["aws_access_key_id"], access_key=options["aws_secret_access_key"],
        session_token=options["aws_session_token"], endpoint_url=options["aws_endpoint"],
        region_name=options["aws_region"], use_ssl=False, num_tries=1))

    def files(table):  # Daft's own S3 client: list the data files and fetch them
        listed = daft.from_glob_path(f"{table}/data/*", io_config=io)
        fetched = listed.with_column("bytes", listed["path"].download(io_config=io))
        return sum(len(data) for data in fetched.to_pydict()["bytes"])

    def attempt(read):
        try:
            read()
        except Exception as error:  # what the engine raises on the gate's denial
            return f"{type(error).__name__}: {error}"
        return "read"

    print(json.dumps({
        "rows": daft.read_lance(location, io_config=io).sort("id").to_pydict(),
        "data bytes": files(location),
        "neighbour, lance": attempt(lambda: daft.read_lance(neighbour, io_config=io).collect()),
        "neighbour, daft": attempt(lambda: files(neighbour)),
    }))
"""


def describe(url: str, table: str) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/table/{table}/describe", json={"vend_credentials": True},
                        timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_daft_writes_and_reads_through_the_namespace_on_vended_keys(storage: Storage) -> None:
    """`vending.unasked` off: only requests that ask get keys, and daft-lance asks."""
    before = storage.gate.keys_used()
    with adapter(vending_on(storage.gate.url, access="read-write", unasked="false")) as url:
        answer = run_client("namespace", url, "daft1", script=DAFT, timeout=300)
    assert "error" not in answer, answer
    assert answer == {
        "id": [*range(300), 300],
        "text": [*(f"row {i}" for i in range(300)), "appended"],
        "score": [*(None if i % 7 == 0 else i / 4 for i in range(300)), 0.5],
    }
    used = storage.gate.keys_used() - before
    assert used, "Daft used vended session keys"
    assert not [d for d in storage.gate.denials() if d.access_key_id in used]


def read_pair_with_daft(storage: Storage, own: str, neighbour: str) -> dict[str, Any]:
    """Write `own` and `neighbour` (pylance), vend read keys for `own`, and let Daft use them
    on both."""
    with adapter(vending_on(storage.gate.url, access="read-write")) as url:
        assert run_client("write", url, own) == {"rows": 1000}
        assert run_client("write", url, neighbour) == {"rows": 1000}
    with adapter(vending_on(storage.gate.url)) as url:  # read access
        answer = describe(url, own)
    location, options = answer["location"], answer["storage_options"]
    assert "expires_at_millis" in options
    return run_client("io-config", location, location.replace(f"/{own}.", f"/{neighbour}."),
                      json.dumps(options), script=DAFT, timeout=300)


def test_daft_reads_its_table_on_vended_keys_and_is_refused_the_neighbour(
    storage: Storage,
) -> None:
    answer = read_pair_with_daft(storage, "daft2", "daft20")
    assert "error" not in answer, answer
    assert answer["rows"] == {"id": list(range(1000)), "text": [f"row {i}" for i in range(1000)]}
    assert answer["data bytes"] > 0
    assert "403 Forbidden" in answer["neighbour, lance"], answer
    assert "AccessDenied" in answer["neighbour, daft"], answer


def test_a_widened_policy_lets_daft_reach_the_neighbour(storage: Storage) -> None:
    """The defect the denials above catch: keys minted without the table's policy (the
    whole bucket's; the gate drops the session policy the server asks for)."""
    with storage.gate.session_policies_dropped():
        answer = read_pair_with_daft(storage, "daft3", "daft30")
    assert "error" not in answer, answer
    assert (answer["neighbour, lance"], answer["neighbour, daft"]) == ("read", "read")
