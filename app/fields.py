"""Every request field is honoured or refused: a field the request model does not have is
refused (code 13) naming it, at any depth, instead of being dropped by the model.

The official request models ignore keys they do not know, so a client sending an option the
server does not act on (a misspelt name, a newer spec's field, a client dialect's own) would
get a 200 that ignored it. This runs on the fields after a client's dialect has put them in
the spec's form (`app.dialect`), just before the model is built.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Union, get_args, get_origin

from lance_namespace import InvalidInputError
from pydantic import BaseModel

# How many unknown fields one refusal names at most.
NAMED_AT_MOST = 5


@functools.cache
def _field_annotations(model: type[BaseModel]) -> dict[str, Any]:
    """Each name a field of `model` is accepted under (its name and alias) -> its type."""
    accepted: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        accepted[name] = info.annotation
        if info.alias:
            accepted[info.alias] = info.annotation
    return accepted


def _alternatives(annotation: Any) -> tuple[Any, ...]:
    """The types `annotation` allows: the members of a union, else itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


@functools.cache
def _model_in(annotation: Any) -> type[BaseModel] | None:
    for option in _alternatives(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


@functools.cache
def _item_type(annotation: Any) -> Any:
    """The item type of the list `annotation` allows, when its items may hold a model (a
    list of strings or numbers, an id or a vector, holds no field to refuse), else None."""
    for option in _alternatives(annotation):
        if get_origin(option) is list and get_args(option):
            item = get_args(option)[0]
            return item if _model_in(item) is not None or _item_type(item) is not None else None
    return None


def _collect_unknown(annotation: Any, value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        model = _model_in(annotation)
        if model is None:
            return
        accepted = _field_annotations(model)
        for key, item in value.items():
            if key not in accepted:
                found.append(f"{path}{key}")
            else:
                _collect_unknown(accepted[key], item, f"{path}{key}.", found)
    elif isinstance(value, list):
        item_type = _item_type(annotation)
        if item_type is None:
            return
        for index, item in enumerate(value):
            _collect_unknown(item_type, item, f"{path.removesuffix('.')}[{index}].", found)


def unknown_fields(model: type[BaseModel], fields: dict[str, Any]) -> list[str]:
    """The dotted paths of the keys in `fields` that `model` (and its nested models) lack."""
    found: list[str] = []
    _collect_unknown(model, fields, "", found)
    return found


def refuse_unknown_fields(
    operation_id: str, model: type[BaseModel], fields: dict[str, Any]
) -> None:
    """InvalidInputError naming the fields of `fields` the operation would not act on."""
    unknown = unknown_fields(model, fields)
    if not unknown:
        return
    named = ", ".join(unknown[:NAMED_AT_MOST]) + (", ..." if len(unknown) > NAMED_AT_MOST else "")
    raise InvalidInputError(
        f"{operation_id} does not take the request field(s) {named}: the server does not act "
        "on them, so it refuses the request rather than ignore them"
    )
