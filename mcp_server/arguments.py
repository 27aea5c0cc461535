"""Argument checks that run before a tool does anything: a rejected call writes nothing.

pydantic (the tools' ``Field``s) checks types, ranges and lengths as the SDK parses a call;
these checks need more than one field, the settings or the store (does that id exist?), and
they run at the top of a tool, before enrichment, analysis or any write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field

from cortexgraph.mcp_server.errors import quote
from cortexgraph.storage.errors import (
    ContentTooLargeError,
    InvalidInputError,
    MemoryNotFoundError,
)
from cortexgraph.storage.validation import validate_new_memory

MAX_ID_CHARS = 200  # ids are at most 128 characters; longer is refused as it is parsed
MAX_TAG_CHARS = 200  # a tag, entity or context tag (the store's default limit too)
IdText = Annotated[str, Field(max_length=MAX_ID_CHARS)]
TagText = Annotated[str, Field(max_length=MAX_TAG_CHARS)]
MAX_NESTING = 32  # dict/list depth of a JSON argument (meta, metadata, tool_input)
MAX_JSON_ARGUMENT_CHARS = 100_000  # a free-form JSON argument (tool_input) as JSON text
MAX_TAGS = 50
Tags = Annotated[
    list[TagText] | None,
    Field(description="Tags, e.g. ['project-x', 'decision']; at most 50.", max_length=MAX_TAGS),
]


def check_values(arguments: Mapping[str, Any]) -> None:
    """Every string is valid Unicode text (no lone surrogates) and nothing nests too deep.

    The wire's JSON parser already refuses both; an in-process client can still pass them, and
    a lone surrogate written to the store cannot be encoded back (the file write would fail)."""
    stack: list[tuple[str, Any, int]] = [(name, v, 0) for name, v in arguments.items()]
    while stack:
        name, value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidInputError(
                    f"{name} is not valid Unicode text ({exc.reason} at character {exc.start})"
                ) from None
        elif isinstance(value, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                raise InvalidInputError(f"{name} nests deeper than {MAX_NESTING} levels")
            items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
            for item in items:
                if isinstance(value, Mapping):
                    key, item = item
                    if not isinstance(key, str):
                        raise InvalidInputError(f"{name} has a non-string key {quote(key)}")
                    stack.append((name, key, depth + 1))
                stack.append((name, item, depth + 1))


def check_json(value: Any, name: str, max_chars: int = MAX_JSON_ARGUMENT_CHARS) -> None:
    """A free-form JSON argument: serialisable and at most ``max_chars`` as JSON."""
    if value is None:
        return
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{name} must be plain JSON: {quote(str(exc))}") from None
    if size > max_chars:
        raise InvalidInputError(
            f"{name} is {size:,} characters of JSON; keep it under {max_chars:,}"
        )


def check_content(content: str, max_bytes: int, name: str = "content") -> None:
    """Non-empty and within the store's size limit, checked before any analysis of it."""
    if not content.strip():
        raise InvalidInputError(f"{name} is empty; pass the text to remember")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise ContentTooLargeError(
            f"{name} is {size:,} bytes; the limit is {max_bytes:,} "
            "(CORTEXGRAPH_MAX_CONTENT_BYTES). Split it into smaller memories."
        )


def unique_ids(values: str | list[str], what: str = "memory_ids") -> list[str]:
    """One id or a list of them, each well-formed, duplicates dropped, at least one."""
    from cortexgraph.storage.models import validate_id

    ids = [values] if isinstance(values, str) else list(values)
    if not ids:
        raise InvalidInputError(f"{what} must name at least one memory id")
    out: list[str] = []
    for value in ids:
        validate_id(value)
        if value not in out:
            out.append(value)
    return out


def resolved_ids(store: Any, refs: Iterable[str], missing: list[str] | None = None) -> list[str]:
    """Each reference (a full id or a unique prefix of 8+ characters) as the id of a stored
    memory, in order and once each (retrieval.core.resolve_memory_id: an ambiguous prefix is
    an InvalidInputError). A reference no memory answers to goes to ``missing`` when given,
    else its MemoryNotFoundError is raised."""
    from cortexgraph.retrieval.core import resolve_memory_id

    out: list[str] = []
    for ref in refs:
        try:
            memory_id = resolve_memory_id(store, ref)
        except MemoryNotFoundError:
            if missing is None:
                raise
            missing.append(ref)
            continue
        if memory_id not in out:
            out.append(memory_id)
    return out


def existing_ids(store: Any, refs: Iterable[str] | None, what: str) -> list[str]:
    """Each reference resolved to the id of a stored memory (full id or 8+ char prefix)."""
    out = resolved_ids(store, refs or ())
    if refs and not out:
        raise InvalidInputError(f"{what} is empty")
    return out


def check_save(
    state: Any,
    *,
    content: str,
    tags: list[str] | None,
    entities: list[str] | None,
    source: str | None,
    context: str | None,
    meta: dict[str, Any] | None,
    supersedes: list[str] | None,
    max_meta_chars: int,
) -> None:
    """Everything save_memory is given, checked before enrichment and before the write: the
    store's own per-field limits (settings CORTEXGRAPH_MAX_*), then the ids it supersedes."""
    config = state.store.config
    check_content(content, config.max_content_bytes)
    check_json(meta, "meta", max_meta_chars)
    validate_new_memory(content, tags, entities, source, context, meta, config)
    existing_ids(state.store, supersedes, "supersedes")


def check_supersedes(store: Any, memory: Any, supersedes: list[str] | None) -> None:
    """record_memory_update's ids: stored, not the memory itself, not its own successor."""
    for old_id in existing_ids(store, supersedes, "supersedes"):
        if old_id == memory.id:
            raise InvalidInputError(
                "a memory cannot supersede itself; remove its own id from supersedes"
            )
        if memory.meta.extra.get("superseded_by") == old_id:
            raise InvalidInputError(
                f"{memory.id} is itself superseded by {old_id}; refusing a cycle"
            )


__all__ = [
    "MAX_ID_CHARS",
    "MAX_JSON_ARGUMENT_CHARS",
    "MAX_NESTING",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "IdText",
    "TagText",
    "Tags",
    "check_content",
    "check_json",
    "check_save",
    "check_supersedes",
    "check_values",
    "existing_ids",
    "resolved_ids",
    "unique_ids",
]
