"""What a hostile tenant writes into its own table to reach another's bytes (issue 68): a
version naming the other table's folder as a second base, with one of its data files
appended. Written with pylance alone, as a client holding keys for its own table writes.
And how the tests of it call the server as one identity (`post_as`)."""

from __future__ import annotations

from typing import Any

import httpx
import lance
import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance.fragment import DataFile, FragmentMetadata

from tests.support.lance_data import arrow_stream

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def post_as(url: str, path: str, token: str, body: pa.Table | dict[str, Any],
            timeout: float = 30) -> httpx.Response:
    """POST /v1/`path` with bearer `token`: an Arrow stream for a table, else JSON."""
    headers = {"authorization": f"Bearer {token}"}
    if isinstance(body, pa.Table):
        return httpx.post(f"{url}/v1/{path}", content=arrow_stream(body),
                          headers={**headers, **ARROW}, timeout=timeout)
    return httpx.post(f"{url}/v1/{path}", json=body, headers=headers, timeout=timeout)


def append_foreign_rows(own: str, foreign: str, own_options: dict[str, str] | None = None,
                        foreign_options: dict[str, str] | None = None) -> int:
    """Commit to the table at `own` a version that adds the table folder `foreign` as a base
    and appends its first data file; the version committed. `foreign_options` read the
    foreign table's manifest (the tenant is assumed to know a file's name)."""
    stolen = lance.dataset(foreign, storage_options=foreign_options).get_fragments()[0].metadata
    dataset = lance.dataset(own, storage_options=own_options)
    dataset = dataset.add_bases([lance.DatasetBasePath(foreign, name="other",
                                                       is_dataset_root=True)])
    base_id = max(dataset.base_paths())
    files = [DataFile(file.path, file.fields, file.column_indices, file.file_major_version,
                      file.file_minor_version, file.file_size_bytes, base_id=base_id)
             for file in stolen.files]
    fragment = FragmentMetadata(id=0, files=files, physical_rows=stolen.physical_rows)
    committed = LanceDataset.commit(own, LanceOperation.Append([fragment]),
                                    read_version=dataset.version, storage_options=own_options)
    return committed.version
