"""The audit trail (app/audit.py): every operation that changes anything, at both of its routes,
leaves exactly one line in `audit_log_file` naming the identity, the operation, the id and the
outcome, whether it was served, refused or failed; reads leave none; no line holds a token.
The documented answer to "who dropped sales$orders" is read back from a real server's file.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from app.spec import load_operations
from backends.core.operations import traits_of
from tests.support.adapter import running_server
from tests.support.doc_blocks import blocks_run_by
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.operation_calls import ARROW, send_operation

TOKENS = {"platform": "platform-token-1", "etl": "etl-token-1"}
CHANGES = [op for op in load_operations() if not traits_of(op.backend_id).read_only]
READS = [op for op in load_operations() if traits_of(op.backend_id).read_only]


def audit_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def audited(tmp_path: Path):
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()))
    audit = tmp_path / "audit.jsonl"
    with running_server("dir", {"root": str(tmp_path / "root")}, auth_mode="token",
                        auth_tokens_file=str(tokens), audit_log_file=str(audit),
                        access={"platform": "admin", "etl": "read, write@sales"},
                        access_default="none") as url:
        yield url, audit


@pytest.mark.parametrize("by_id", [False, True], ids=["v1-route", "operation-route"])
def test_every_change_leaves_one_line_and_reads_none(audited, by_id: bool) -> None:
    url, audit = audited
    for operation in READS:
        send_operation(url, operation, ["sales", "t"], TOKENS["etl"], by_id)
    assert audit_lines(audit) == []
    missing = []
    for operation in CHANGES:
        before = len(audit_lines(audit))
        answer = send_operation(url, operation, ["hr", "t"], TOKENS["etl"], by_id)
        lines = audit_lines(audit)[before:]
        if len(lines) != 1 or lines[0]["operation"] != operation.operation_id:
            missing.append((operation.operation_id, answer.status_code, lines))
            continue
        line = lines[0]
        assert (line["identity"], line["event"], line["client"]) == ("etl", "call", "127.0.0.1")
        assert line["status"] == answer.status_code
        assert line["outcome"] == ("refused" if answer.status_code == 403 else line["outcome"])
        assert line["request_id"] == answer.headers["x-request-id"]
    assert not missing, missing
    assert all(token not in audit.read_text() for token in TOKENS.values())


@pytest.mark.parametrize("by_id", [False, True], ids=["v1-route", "operation-route"])
@pytest.mark.parametrize("token", ["wrong-token", "not a token at all"])
def test_a_change_refused_for_its_credential_leaves_its_line(
    audited, by_id: bool, token: str,
) -> None:
    """401 comes before the request is read: the line names no identity, and the id only
    where the route's path or query string holds it (POST /<Operation> of an operation
    carrying Arrow data); a body is not read for a caller not known."""
    url, audit = audited
    for operation in CHANGES:
        before = len(audit_lines(audit))
        answer = send_operation(url, operation, ["hr", "t"], token, by_id)
        assert answer.status_code == 401, (operation.operation_id, answer.text)
        (line,) = audit_lines(audit)[before:]
        in_path = (operation.takes_data if by_id
                   else operation.path is not None and "{id}" in operation.path)
        assert line["operation"] == operation.operation_id
        assert (line["identity"], line["outcome"], line["status"], line["code"]) == (
            None, "refused", 401, 16)
        assert line["id"] == ("hr$t" if in_path else None)
    for operation in READS:
        send_operation(url, operation, ["hr", "t"], token, by_id)
    assert len(audit_lines(audit)) == len(CHANGES)  # reads leave none, refused or not
    assert token not in audit.read_text()


def test_the_documented_question_who_dropped_a_table_is_answered(
    audited, capsys: pytest.CaptureFixture[str],
) -> None:
    url, audit = audited
    platform = {"authorization": f"Bearer {TOKENS['platform']}"}
    etl = {"authorization": f"Bearer {TOKENS['etl']}"}
    httpx.post(f"{url}/v1/namespace/sales/create", json={}, headers=platform).raise_for_status()
    httpx.post(f"{url}/v1/table/sales$orders/create", content=arrow_stream(sample_table(3)),
               headers={**etl, **ARROW}).raise_for_status()
    httpx.post(f"{url}/v1/table/sales$orders/rename", json={"new_table_name": "orders_old"},
               headers=etl).raise_for_status()
    httpx.post(f"{url}/v1/table/sales$orders_old/rename", json={"new_table_name": "orders"},
               headers=platform).raise_for_status()
    httpx.post(f"{url}/v1/table/sales$orders/drop", json={}, headers=etl).raise_for_status()
    refused = httpx.post(f"{url}/v1/namespace/sales/drop", json={}, headers=etl)
    assert refused.status_code == 403
    example, question = blocks_run_by(
        "tests/test_audit.py", "test_the_documented_question_who_dropped_a_table_is_answered")
    lines = audit_lines(audit)
    documented = json.loads(example.code)
    assert all(set(line) == set(documented) for line in lines if line["operation"] == "DropTable")
    exec(question.code.replace("/var/log/lance-adapter/audit.jsonl", str(audit)), {})
    [answer] = capsys.readouterr().out.splitlines()
    assert answer.split()[1:] == ["etl", "127.0.0.1", "ok"]
    renamed = [line for line in lines if line["operation"] == "RenameTable"]
    assert [(line["identity"], line["id"], line["new_id"]) for line in renamed] == [
        ("etl", "sales$orders", "sales$orders_old"), ("platform", "sales$orders_old",
                                                      "sales$orders")]
    assert lines[-1]["outcome"] == "refused" and lines[-1]["code"] == 15
