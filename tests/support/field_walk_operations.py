"""The field walk (`tests.support.field_walk`) over every other operation: for each field of a
request model, a pair of requests that differ only in that field, each sent on fresh objects (a
fresh namespace and tables, built by `Scene.build`: `tests.support.field_walk_scene`), whose
observations must differ, or the variant be refused (code 13).

An observation is the answer (its JSON without what differs from one run to the next: times,
ids, the scene's random names) and, for an operation that changes state, what the catalog and
Lance hold afterwards (`Scene.state`): the namespaces' properties, the tables listed, each
table's properties and, read with pylance, its versions, tags, indices and for every branch its
version, schema (with metadata) and rows.

`VARIANTS` maps (operation, field) to a `Variant`; `UNWALKED` holds the fields that cannot be
given a variant here, each with the reason; `UNSUPPORTED` the operations a backend answers with
code 0 (not supported), whose every field is refused. AnalyzeTableQueryPlan walks QueryTable's
variants (`tests.support.field_walk.QUERY_VARIANTS`) on the walk's tables, observed in the plan
text; ExplainTableQueryPlan walks them inside its `query`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from tests.support.field_walk import (
    BASE,
    FTS,
    INDEX_VARIANTS,
    NO_VECTOR,
    QUERY_FORM_VARIANTS,
    QUERY_VARIANTS,
    Walk,
    index_record,
)
from tests.support.field_walk_scene import (
    PAGE,
    Scene,
    Variant,
    how_many,
    local_path,
    own_items,
)

# Operations a backend answers with code 0 whatever the request: every field of theirs is
# refused there (the walk asserts the code 0 of the baseline and of the variant's refusal).
UNSUPPORTED: dict[str, frozenset[str]] = {
    "dir": frozenset({
        "AlterNamespace", "AlterTable", "AlterTableBackfillColumns", "AlterTransaction",
        "BatchCommitTables", "BatchCreateTableVersions", "CreateMaterializedView",
        "RefreshMaterializedView",
    }),
    "glue": frozenset({
        "AlterTableBackfillColumns", "AlterTransaction", "BatchCommitTables",
        "BatchCreateTableVersions", "CreateMaterializedView", "CreateTableVersion",
        "DescribeTransaction", "RefreshMaterializedView",
    }),
}

# Operations already walked by tests/contract/test_request_fields.py.
WALKED_ELSEWHERE = frozenset({"QueryTable", "CreateTableIndex"})

UNWALKED: dict[tuple[str, str], str] = {
    ("CreateTable", "storage_options"): (
        "a client may only set the object-store timeouts and retries "
        "(backends.core.properties.CLIENT_STORAGE_OPTIONS), which the walked backends' "
        "local-filesystem storage never consults; any other key is refused before the backend "
        "(app/requests.py), so no allowed value can change an answer or what Lance records here"
    ),
    ("DeclareTable", "vend_credentials"): (
        "the walked servers vend no credentials: with vending on, asking for them (or not) "
        "changes the answer's storage_options (tests/test_vending.py, "
        "tests/test_vending_daft.py); with it off the server holds none to give, and a request "
        "asking for them is answered without them rather than refused, because daft-lance asks "
        "on every table, local ones included"
    ),
    ("DescribeTable", "vend_credentials"): "see DeclareTable's vend_credentials",
    ("ListNamespaces", "page_token"): (
        "a namespace with children exists only at the root of a flat catalog (Glue), which the "
        "whole suite shares, so two scenes list different pages; paging is the shared "
        "backends.core.paging.paginate, walked on ListTables, ListTableTags, ListTableVersions, "
        "ListTableIndices and ListTableBranches"
    ),
    ("ExplainTableQueryPlan", "verbose"): (
        "passed to Lance's explain_plan(verbose), which in pylance 14 prints the same plan either "
        "way for every query of the walk (checked on pylance directly): no plan shows it"
    ),
    ("MergeInsertIntoTable", "use_index"): (
        "only chooses how Lance joins the source to the table (through a scalar index on `on` "
        "or by a hash join); the rows merged are the same by design and no answer of the "
        "adapter shows the merge's plan"
    ),
}

def T(**body: Any) -> dict[str, Any]:
    return {"id": "$T", **body}


def N(**body: Any) -> dict[str, Any]:
    return {"id": "$N", **body}


def _paged(listing: str, ids: dict[str, Any], reads: bool = True,
           observe: Callable[[Scene, Any], Any] | None = None) -> dict[str, Variant]:
    """limit and page_token of a listing: limit 1 answers fewer items than none; the first
    page's token skips the first page."""
    return {
        "limit": Variant("tables", ids, {**ids, "limit": 1}, reads=reads,
                         observe=observe),
        "page_token": Variant("tables", {**ids, "limit": 1},
                              {**ids, "limit": 1, "page_token": PAGE}, reads=reads,
                              observe=observe),
    }


UPDATE = [["text", "'changed'"]]
CLONE = {"id": "$NEW", "source_location": "$LOC_T"}


def _clone_data_files(scene: Scene, answer: Any) -> Any:
    """The data files at the clone's own location: none for a shallow clone, which reads its
    source's where they are."""
    if not isinstance(answer, dict) or "location" not in answer:
        return answer
    return len(list((local_path(answer["location"]) / "data").glob("*")))

MERGE = {"on": "id", "when_matched_update_all": "true"}
STAGED = "_versions/4.manifest-staged1"
QUERY_MV = {"id": "$NEW", "kind": "query", "source_query": "SELECT 1", "output_schema": "{}"}
BACKFILL = T(column="text")

VARIANTS: dict[tuple[str, str], Variant] = {
    # --- namespaces ---
    ("CreateNamespace", "mode"): Variant("", N(), N(mode="exist_ok")),
    ("CreateNamespace", "properties"): Variant(
        "", {"id": "$N2"}, {"id": "$N2", "properties": {"a": "b"}}),
    ("DropNamespace", "mode"): Variant("", {"id": "$N2"}, {"id": "$N2", "mode": "skip"}),
    ("DropNamespace", "behavior"): Variant("table", N(), N(behavior="cascade")),
    ("ListNamespaces", "limit"): Variant("ns2", {"id": []}, {"id": [], "limit": 1}, reads=True,
                                         observe=how_many("namespaces")),
    **{("ListTables", name): variant for name, variant in _paged("ListTables", N()).items()},
    ("ListTables", "include_declared"): Variant("tables", N(), N(include_declared=False),
                                                reads=True),
    ("ListAllTables", "limit"): Variant("tables", {}, {"limit": 1}, reads=True,
                                        observe=how_many("tables")),
    ("ListAllTables", "page_token"): Variant("tables", {"limit": 1},
                                             {"limit": 1, "page_token": PAGE}, reads=True),
    ("ListAllTables", "include_declared"): Variant(
        "tables", {}, {"include_declared": False}, reads=True, observe=own_items("tables")),
    ("AlterNamespace", "set_properties"): Variant(
        "", N(set_properties={"a": "b"}), N(set_properties={"a": "c"})),
    ("AlterNamespace", "unset_properties"): Variant(
        "nsprops", N(set_properties={"x": "1"}),
        N(set_properties={"x": "1"}, unset_properties=["a"])),
    # --- tables in the catalog ---
    ("CreateTable", "mode"): Variant("table", T(), T(mode="overwrite"), rows=(0, 4)),
    ("CreateTable", "properties"): Variant(
        "", {"id": "$NEW"}, {"id": "$NEW", "properties": json.dumps({"a": "b"})}, rows=(0, 4)),
    ("DeclareTable", "location"): Variant("table", {"id": "$NEW"},
                                          {"id": "$NEW", "location": "$LOC_NEW"}),
    ("DeclareTable", "properties"): Variant("", {"id": "$NEW"},
                                            {"id": "$NEW", "properties": {"a": "b"}}),
    ("RegisterTable", "location"): Variant(
        "table+deregistered", {"id": "$NEW", "location": "$LOC_U"},
        {"id": "$NEW", "location": "$LOC_V"}),
    ("RegisterTable", "mode"): Variant("table+deregistered", T(location="$LOC_U"),
                                       T(location="$LOC_U", mode="overwrite")),
    ("RegisterTable", "properties"): Variant(
        "deregistered", {"id": "$NEW", "location": "$LOC_U"},
        {"id": "$NEW", "location": "$LOC_U", "properties": {"a": "b"}}),
    ("RenameTable", "new_table_name"): Variant("table", T(new_table_name="r1"),
                                               T(new_table_name="r2")),
    ("RenameTable", "new_namespace_id"): Variant(
        "table+ns2", T(new_table_name="r1"), T(new_table_name="r1", new_namespace_id="$N2")),
    ("AlterTable", "set_properties"): Variant("table", T(set_properties={"a": "b"}),
                                              T(set_properties={"a": "c"})),
    ("AlterTable", "unset_properties"): Variant(
        "props", T(set_properties={"x": "1"}), T(set_properties={"x": "1"},
                                                 unset_properties=["a"])),
    ("DescribeTable", "version"): Variant("table", T(load_detailed_metadata=True),
                                          T(load_detailed_metadata=True, version=1), reads=True),
    ("DescribeTable", "tag"): Variant("table", T(load_detailed_metadata=True),
                                      T(load_detailed_metadata=True, tag="t1"), reads=True),
    ("DescribeTable", "branch"): Variant("table", T(load_detailed_metadata=True),
                                         T(load_detailed_metadata=True, branch="dev"),
                                         reads=True),
    ("DescribeTable", "with_table_uri"): Variant("table", T(), T(with_table_uri=True),
                                                 reads=True),
    # Unset, a backend decides (`dir` answers the details, as pylance's does): false and
    # true are the two answers the field asks for.
    ("DescribeTable", "load_detailed_metadata"): Variant(
        "table", T(load_detailed_metadata=False), T(load_detailed_metadata=True), reads=True),
    ("DescribeTable", "check_declared"): Variant("table", T(), T(check_declared=True),
                                                 reads=True),
    ("TableExists", "version"): Variant("table", T(), T(version=99), reads=True),
    # --- data ---
    ("InsertIntoTable", "branch"): Variant("table", T(), T(branch="dev"), rows=(500, 4)),
    ("InsertIntoTable", "mode"): Variant("table", T(), T(mode="overwrite"), rows=(500, 4)),
    ("MergeInsertIntoTable", "branch"): Variant("table", T(**MERGE),
                                                T(**MERGE, branch="dev"), rows=(10, 20)),
    ("MergeInsertIntoTable", "on"): Variant(
        "table", T(on="id", when_not_matched_insert_all="true"),
        T(on="text", when_not_matched_insert_all="true"), rows=(10, 20), renamed=True),
    ("MergeInsertIntoTable", "when_matched_update_all"): Variant(
        "table", T(on="id", when_not_matched_insert_all="true"),
        T(on="id", when_not_matched_insert_all="true", when_matched_update_all="true"),
        rows=(10, 20)),
    ("MergeInsertIntoTable", "when_matched_update_all_filt"): Variant(
        "table", T(**MERGE), T(**MERGE, when_matched_update_all_filt="target.id < 15"),
        rows=(10, 20)),
    ("MergeInsertIntoTable", "when_not_matched_insert_all"): Variant(
        "table", T(**MERGE), T(**MERGE, when_not_matched_insert_all="true"), rows=(10, 20)),
    ("MergeInsertIntoTable", "when_not_matched_by_source_delete"): Variant(
        "table", T(**MERGE), T(**MERGE, when_not_matched_by_source_delete="true"),
        rows=(10, 20)),
    ("MergeInsertIntoTable", "when_not_matched_by_source_delete_filt"): Variant(
        "table", T(**MERGE), T(**MERGE, when_not_matched_by_source_delete_filt="id >= 100"),
        rows=(10, 20)),
    # No commit conflicts here, so no timeout can elapse: a value that is no duration at all
    # must be refused if the field is read.
    ("MergeInsertIntoTable", "timeout"): Variant(
        "table", T(**MERGE), T(**MERGE, timeout="not-a-duration"), rows=(10, 20)),
    ("CountTableRows", "version"): Variant("table", T(), T(version=1), reads=True),
    ("CountTableRows", "branch"): Variant("table", T(), T(branch="dev"), reads=True),
    ("CountTableRows", "predicate"): Variant("table", T(), T(predicate="id < 3"), reads=True),
    ("DeleteFromTable", "branch"): Variant("table", T(predicate="id < 5"),
                                           T(predicate="id < 5", branch="dev")),
    ("DeleteFromTable", "predicate"): Variant("table", T(predicate="id < 5"),
                                              T(predicate="id < 10")),
    ("UpdateTable", "branch"): Variant("table", T(updates=UPDATE), T(updates=UPDATE,
                                                                     branch="dev")),
    ("UpdateTable", "predicate"): Variant("table", T(updates=UPDATE),
                                          T(updates=UPDATE, predicate="id < 2")),
    ("UpdateTable", "updates"): Variant("table", T(updates=UPDATE),
                                        T(updates=[["text", "'other'"]])),
    ("UpdateTable", "properties"): Variant("table", T(updates=UPDATE),
                                           T(updates=UPDATE, properties={"a": "b"})),
    ("GetTableStats", "branch"): Variant("table", T(), T(branch="dev"), reads=True),
    # --- schema ---
    ("AlterTableAddColumns", "branch"): Variant(
        "table", T(new_columns=[{"name": "d", "expression": "id * 2"}]),
        T(new_columns=[{"name": "d", "expression": "id * 2"}], branch="dev")),
    ("AlterTableAddColumns", "new_columns"): Variant(
        "table", T(new_columns=[{"name": "d", "expression": "id * 2"}]),
        T(new_columns=[{"name": "d", "expression": "id * 3"}])),
    ("AlterTableAlterColumns", "branch"): Variant(
        "table", T(alterations=[{"path": "text", "rename": "words"}]),
        T(alterations=[{"path": "text", "rename": "words"}], branch="dev")),
    ("AlterTableAlterColumns", "alterations"): Variant(
        "table", T(alterations=[{"path": "text", "rename": "words"}]),
        T(alterations=[{"path": "text", "rename": "letters"}])),
    ("AlterTableDropColumns", "branch"): Variant("table", T(columns=["other"]),
                                                 T(columns=["other"], branch="dev")),
    ("AlterTableDropColumns", "columns"): Variant("table", T(columns=["other"]),
                                                  T(columns=["text"])),
    ("UpdateTableSchemaMetadata", "branch"): Variant(
        "table", T(metadata={"k": "v"}), T(metadata={"k": "v"}, branch="dev")),
    ("UpdateTableSchemaMetadata", "metadata"): Variant("table", T(metadata={"k": "v"}),
                                                       T(metadata={"k": "w"})),
    ("UpdateFieldMetadata", "branch"): Variant(
        "table", T(updates=[{"path": "id", "metadata": {"k": "v"}}]),
        T(updates=[{"path": "id", "metadata": {"k": "v"}}], branch="dev")),
    ("UpdateFieldMetadata", "updates"): Variant(
        "table", T(updates=[{"path": "id", "metadata": {"k": "v"}}]),
        T(updates=[{"path": "text", "metadata": {"k": "v"}}])),
    ("AlterTableBackfillColumns", "branch"): Variant("table", BACKFILL,
                                                     {**BACKFILL, "branch": "dev"}),
    ("AlterTableBackfillColumns", "column"): Variant("table", BACKFILL, T(column="id")),
    **{("AlterTableBackfillColumns", name): Variant("table", BACKFILL, {**BACKFILL, name: value})
       for name, value in {
           "where": "id < 3", "concurrency": 2, "intra_applier_concurrency": 2,
           "min_checkpoint_size": 2, "max_checkpoint_size": 4,
           "batch_checkpoint_flush_interval_seconds": 1.5, "read_version": 1, "task_size": 2,
           "num_frags": 1, "checkpoint_size": 2, "commit_granularity": 2, "cluster": "c",
           "manifest": "m",
       }.items()},
    # --- versions, branches, tags ---
    ("RestoreTable", "version"): Variant("table", T(version=1), T(version=2)),
    ("RestoreTable", "branch"): Variant("table", T(version=4), T(version=4, branch="dev")),
    ("ListTableVersions", "branch"): Variant("table", T(), T(branch="dev"), reads=True),
    ("ListTableVersions", "descending"): Variant("table", T(), T(descending=True), reads=True),
    **{("ListTableVersions", name): variant
       for name, variant in _paged("ListTableVersions", T()).items()},
    ("DescribeTableVersion", "version"): Variant("table", T(), T(version=1), reads=True),
    ("DescribeTableVersion", "branch"): Variant("table", T(), T(branch="dev"), reads=True),
    ("BatchDeleteTableVersions", "branch"): Variant(
        "table+untagged", T(ranges=[{"start_version": 1, "end_version": 2}]),
        T(ranges=[{"start_version": 1, "end_version": 2}], branch="dev")),
    ("BatchDeleteTableVersions", "ranges"): Variant(
        "table+untagged", T(ranges=[{"start_version": 1, "end_version": 2}]),
        T(ranges=[{"start_version": 1, "end_version": 3}])),
    ("CreateTableBranch", "name"): Variant("table", T(name="b1"), T(name="b2")),
    ("CreateTableBranch", "from_branch"): Variant("table", T(name="b1"),
                                                  T(name="b1", from_branch="dev")),
    ("CreateTableBranch", "from_version"): Variant("table", T(name="b1"),
                                                   T(name="b1", from_version=1)),
    ("DeleteTableBranch", "name"): Variant("table", T(name="dev"), T(name="old")),
    **{("ListTableBranches", name): variant
       for name, variant in _paged("ListTableBranches", T()).items()},
    ("CreateTableTag", "tag"): Variant("table", T(tag="a", version=2), T(tag="b", version=2)),
    ("CreateTableTag", "version"): Variant("table", T(tag="a", version=2),
                                           T(tag="a", version=3)),
    ("CreateTableTag", "branch"): Variant("table", T(tag="a", version=2),
                                          T(tag="a", version=2, branch="dev")),
    ("DeleteTableTag", "tag"): Variant("table", T(tag="t1"), T(tag="t2")),
    ("UpdateTableTag", "tag"): Variant("table", T(tag="t1", version=3), T(tag="t2", version=3)),
    ("UpdateTableTag", "version"): Variant("table", T(tag="t1", version=3),
                                           T(tag="t1", version=2)),
    ("UpdateTableTag", "branch"): Variant("table", T(tag="t1", version=3),
                                          T(tag="t1", version=3, branch="dev")),
    ("GetTableTagVersion", "tag"): Variant("table", T(tag="t1"), T(tag="t2"), reads=True),
    **{("ListTableTags", name): variant
       for name, variant in _paged("ListTableTags", T()).items()},
    # --- manifests and transactions (dir: natively; glue: code 0) ---
    ("CreateTableVersion", "version"): Variant("staged", T(version=4, manifest_path=STAGED),
                                               T(version=5, manifest_path=STAGED)),
    ("CreateTableVersion", "manifest_path"): Variant(
        "staged", T(version=4, manifest_path=STAGED),
        T(version=4, manifest_path="_versions/4.manifest-staged2")),
    ("CreateTableVersion", "branch"): Variant("staged", T(version=4, manifest_path=STAGED),
                                              T(version=4, manifest_path=STAGED, branch="dev")),
    ("CreateTableVersion", "manifest_size"): Variant(
        "staged", T(version=4, manifest_path=STAGED),
        T(version=4, manifest_path=STAGED, manifest_size=1)),
    ("CreateTableVersion", "e_tag"): Variant(
        "staged", T(version=4, manifest_path=STAGED),
        T(version=4, manifest_path=STAGED, e_tag='"not-the-tag"')),
    ("CreateTableVersion", "metadata"): Variant(
        "staged", T(version=4, manifest_path=STAGED),
        T(version=4, manifest_path=STAGED, metadata={"k": "v"})),
    ("CreateTableVersion", "naming_scheme"): Variant(
        "staged", T(version=4, manifest_path=STAGED),
        T(version=4, manifest_path=STAGED, naming_scheme="V1")),
    ("BatchCreateTableVersions", "entries"): Variant(
        "staged", {"entries": [T(version=4, manifest_path=STAGED)]},
        {"entries": [T(version=4, manifest_path="_versions/4.manifest-staged2")]}),
    ("BatchCommitTables", "operations"): Variant(
        "table", {"operations": [{"declare_table": {"id": "$NEW"}}]},
        {"operations": [{"declare_table": {"id": "$D"}}]}),
    ("AlterTransaction", "actions"): Variant(
        "transaction", {"id": "$TX", "actions": [{"setStatusAction": {"status": "Canceled"}}]},
        {"id": "$TX", "actions": [{"setPropertyAction": {"key": "k", "value": "v"}}]}),
    # --- materialized views (a job service this adapter does not run) ---
    ("CreateMaterializedView", "kind"): Variant("", QUERY_MV, {**QUERY_MV, "kind": "chunker"}),
    ("CreateMaterializedView", "source_query"): Variant(
        "", QUERY_MV, {**QUERY_MV, "source_query": "SELECT 2"}),
    ("CreateMaterializedView", "output_schema"): Variant(
        "", QUERY_MV, {**QUERY_MV, "output_schema": '{"fields": []}'}),
    ("CreateMaterializedView", "udtf_spec"): Variant("", QUERY_MV, {**QUERY_MV, "udtf_spec": {
        "kind": "udtf", "udtf": "e30=", "udtf_sha": "0", "udtf_name": "u",
        "udtf_version": "1"}}),
    ("CreateMaterializedView", "with_no_data"): Variant("", QUERY_MV,
                                                        {**QUERY_MV, "with_no_data": True}),
    ("CreateMaterializedView", "auto_refresh"): Variant("", QUERY_MV,
                                                        {**QUERY_MV, "auto_refresh": True}),
    **{("RefreshMaterializedView", name): Variant("", {"id": "$NEW"},
                                                  {"id": "$NEW", name: value})
       for name, value in {
           "src_version": 1, "max_rows_per_fragment": 10, "concurrency": 2,
           "intra_applier_concurrency": 2, "source_task_size": 2, "cluster": "c",
           "output_limit": 5, "manifest": "m",
       }.items()},
    # --- indices (besides creating them) ---
    ("ListTableIndices", "version"): Variant("index", T(), T(version=1), reads=True),
    ("ListTableIndices", "branch"): Variant("index", T(), T(branch="dev"), reads=True),
    **{("ListTableIndices", name): Variant("index", *pair, reads=True) for name, pair in {
        "limit": (T(), T(limit=1)),
        "page_token": (T(limit=1), T(limit=1, page_token=PAGE)),
    }.items()},
    ("DropTableIndex", "index_name"): Variant("index", T(index_name="id_idx"),
                                              T(index_name="text_idx")),
    ("DropTableIndex", "branch"): Variant("index", T(index_name="id_idx"),
                                          T(index_name="id_idx", branch="dev")),
    ("DescribeTableIndexStats", "index_name"): Variant(
        "index", T(index_name="id_idx"), T(index_name="text_idx"), reads=True),
    ("DescribeTableIndexStats", "version"): Variant(
        "index", T(index_name="id_idx"), T(index_name="id_idx", version=3), reads=True),
    ("DescribeTableIndexStats", "branch"): Variant(
        "index", T(index_name="text_idx"), T(index_name="text_idx", branch="dev"), reads=True),
    ("CloneTable", "source_location"): Variant(
        "table", CLONE, {**CLONE, "source_location": "$LOC_NEW"}),
    ("CloneTable", "source_version"): Variant("table", CLONE, {**CLONE, "source_version": 1}),
    ("CloneTable", "source_tag"): Variant("table", CLONE, {**CLONE, "source_tag": "t2"}),
    ("CloneTable", "is_shallow"): Variant("table", CLONE, {**CLONE, "is_shallow": False},
                                          observe=_clone_data_files),
    ("CloneTable", "source_id"): Variant(
        "tables", {"id": "$NEW", "source_id": "$T"}, {"id": "$NEW", "source_id": "$U"}),
    ("PrewarmTableIndex", "index_name"): Variant(
        "index", T(index_name="id_idx"), T(index_name="no_such_idx"), reads=True),
}


# --- CreateTableScalarIndex: what Lance records of the index built, as for CreateTableIndex --

BTREE = {"column": "id", "index_type": "BTREE"}
SCALAR_INDEX_VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "branch": (BTREE, {**BTREE, "branch": "dev"}),
    "column": (BTREE, {**BTREE, "column": "text"}),
    "index_type": (BTREE, {**BTREE, "index_type": "BITMAP"}),
    "name": (BTREE, {**BTREE, "name": "named"}),
    "replace": ({**BTREE, "name": "again"}, {**BTREE, "name": "again", "replace": False}),
    # A vector index's options on a scalar index cannot apply: they must be refused.
    **{option: (BTREE, {**BTREE, option: value}) for option, value in {
        "distance_type": "cosine", "num_partitions": 3, "num_sub_vectors": 4, "num_bits": 4,
        "sample_rate": 3, "max_iterations": 1, "target_partition_size": 100, "m": 5,
        "ef_construction": 20,
    }.items()},
    # The full-text options, as INDEX_VARIANTS has them, on an FTS index.
    **{option: pair for option, pair in INDEX_VARIANTS.items() if pair[0] is FTS},
}


def scalar_index_record(walk: Walk, table: str, body: dict[str, Any]) -> Any:
    """What Lance records of the index CreateTableScalarIndex builds from `body`."""
    return index_record(walk, table, body, "create_scalar_index")


# --- the plans: QueryTable's fields reach AnalyzeTableQueryPlan's and ExplainTableQueryPlan's

PLAN_QUERY_VARIANTS = {**QUERY_VARIANTS, **QUERY_FORM_VARIANTS}
EXPLAIN_VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "branch": ("walk", {"query": NO_VECTOR}, {"query": NO_VECTOR, "branch": "dev"}),
    "query": ("walk", {"query": BASE}, {"query": {**BASE, "filter": "id % 2 = 0"}}),
}
# Query fields whose values no explained plan prints (it names neither the query vector nor
# ef); AnalyzeTableQueryPlan's walk and QueryTable's show them reach the same scanner.
PLAN_BLIND = frozenset({"ef", "vector"})
_TIMES = re.compile(r"\d+(\.\d+)?\s?(ns|µs|us|ms|s)\b")


def plan(walk: Walk, table: str, suffix: str, body: dict[str, Any]) -> Any:
    """The plan text (its timings and ids left out), or the refusal's code."""
    answer = walk.post(table, suffix, json=body)
    if answer.status_code != 200:
        return ("refused", answer.json().get("code"))
    text = answer.text
    text = _TIMES.sub("<time>", text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"
