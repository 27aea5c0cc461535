"""What one record may hold: each field's limit (``StoreConfig``'s ``max_*``), the nesting of
its JSON objects, and the size and Unicode of its stored line. One rule for save and load:
storage.validation checks a record being saved by these, the loader a record read back.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.errors import ContentTooLargeError, InvalidInputError
from cortexgraph.storage.field_rules import short_repr
from cortexgraph.storage.json_text import dumps_compact, orjson
from cortexgraph.storage.models import RELATION_TYPES, Memory, Relation, validate_strength

# Nesting allowed inside meta.extra and relation metadata: deeper is damage or an attack
# (a parser's recursion limit is near 1000), never data.
MAX_JSON_DEPTH = 32
# A JSON escape of a UTF-16 surrogate: the only way a stored line can hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# What a parsed JSON object holds, exact types (bool is its own); floats also, when finite.
_JSON_LEAVES = frozenset({str, int, bool, type(None)})
_JSON_NODES = frozenset({dict, list})
_JSON_KINDS = _JSON_LEAVES | _JSON_NODES | {float}


def encode_record(record: dict[str, Any], what: str) -> str:
    try:
        return dumps_compact(record)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"{what} cannot be stored as JSON ({short_repr(str(exc), 120)}); "
            "use strings, numbers, lists and objects"
        ) from exc


def line_bytes(line: str, config: StoreConfig, what: str = "record") -> bytes:
    """The stored bytes of a record's JSON line; the rules every stored line obeys."""
    try:
        raw = line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} contains a lone surrogate (U+D800-U+DFFF): text must be valid Unicode"
        ) from exc
    _check_line_size(len(raw), config, what)
    return raw


def check_loaded_line(raw: bytes, obj: Any, config: StoreConfig) -> None:
    """The same rules for a line read from a file (``line_bytes`` is the saving side)."""
    _check_line_size(len(raw), config, "record")
    if _SURROGATE_ESCAPE.search(raw):  # only then can a string hold a lone surrogate
        line_bytes(json.dumps(obj, ensure_ascii=False), config)


def lines_pass_rules(data: bytes, lines: list[bytes], config: StoreConfig) -> bool:
    """True if every one of ``lines`` (the lines of ``data``) passes ``check_loaded_line``:
    none too big, and no surrogate escape anywhere (one search of the whole file)."""
    # No backslash (one memchr) means no escape at all; else the regex, whose literal prefix
    # scan is ~3x quicker than ``b"\\u" in data`` (0.02 s against 0.06 s over 58 MB).
    return max(map(len, lines), default=0) <= config.max_record_bytes and (
        b"\\" not in data or not _SURROGATE_ESCAPE.search(data)
    )


def _check_line_size(size: int, config: StoreConfig, what: str) -> None:
    if size > config.max_record_bytes:
        raise InvalidInputError(
            f"{what} is {size:,} bytes as stored; the limit is {config.max_record_bytes:,} "
            "(CORTEXGRAPH_MAX_RECORD_BYTES)"
        )


def utf8_over(text: str, limit: int) -> int:
    """Bytes of ``text`` in UTF-8 if over ``limit``, else 0 (encodes only when it must)."""
    if len(text) * 4 <= limit:
        return 0
    if len(text) > limit:
        return len(text.encode("utf-8", "surrogatepass"))
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else 0


def check_content(content: object, config: StoreConfig) -> None:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a string, got {type(content).__name__}")
    size = utf8_over(content, config.max_content_bytes)
    if size:
        raise ContentTooLargeError(
            f"content is {size:,} bytes; the limit is {config.max_content_bytes:,} "
            "(CORTEXGRAPH_MAX_CONTENT_BYTES). Split it into smaller memories."
        )
    if not content or content.isspace():
        raise InvalidInputError("content must be a non-empty string; nothing to remember")


def check_text(value: object, what: str, limit: int, setting: str) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string or null, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInputError(
            f"{what} is {len(value):,} characters; the limit is {limit:,} (CORTEXGRAPH_{setting})"
        )


_PLURAL = {"ENTITY": "ENTITIES"}  # CORTEXGRAPH_MAX_ENTITIES, not _ENTITYS


def check_strings(values: object, what: str, max_items: int, max_chars: int, setting: str) -> None:
    """A list of at most ``max_items`` strings of at most ``max_chars`` each (counted before
    anything iterates a huge list). ``setting``: "TAG" or "ENTITY", the settings' stem."""
    if values is None:
        return
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sized | Iterable):
        raise InvalidInputError(f"{what} must be a list of strings, got {type(values).__name__}")
    if isinstance(values, Sized) and len(values) > max_items:
        raise InvalidInputError(
            f"{what}: {len(values):,} given; the limit is {max_items:,} "
            f"(CORTEXGRAPH_MAX_{_PLURAL.get(setting, setting + 'S')})"
        )
    for value in values:  # type: ignore[union-attr]
        if isinstance(value, str) and len(value) > max_chars:
            raise InvalidInputError(
                f"{what}: {short_repr(value)} is too long; the limit is {max_chars:,} "
                f"characters (CORTEXGRAPH_MAX_{setting}_CHARS)"
            )


def check_object(value: object, what: str, config: StoreConfig) -> None:
    """A JSON object (meta.extra, relation metadata): shallow enough, small enough."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be an object (a mapping of names to values)")
    if not value:
        return
    _check_depth(value, what)
    encoded = encode_record(dict(value), what)
    size = utf8_over(encoded, config.max_extra_bytes)
    if size:
        raise InvalidInputError(
            f"{what} is {size:,} bytes as JSON; the limit is {config.max_extra_bytes:,} "
            "(CORTEXGRAPH_MAX_EXTRA_BYTES)"
        )


def plain_objects(values: Sequence[object], max_bytes: int) -> bool:
    """True if every one of ``values`` is a dict that ``check_object`` passes as it is:
    string keys, JSON values only (finite floats), nested at most ``MAX_JSON_DEPTH`` levels,
    at most ``max_bytes`` as compact JSON. False: check each with ``check_object``, which
    gives the reason (or passes it: False only means "not surely").

    Every memory carries ``meta.extra`` once entities are read (``entities_found``, a
    merge's provenance ...), and a store's open checks every one: the tests run level by
    level over all of them at once (a C loop each), and the size is orjson's, the same
    bytes ``dumps_compact`` writes for such values (0.3 us an object, against ~20 us for
    ``check_object``'s walk and encoding)."""
    if orjson is None or set(map(type, values)) != {dict}:
        return False
    objects = [v for v in values if v]
    level: list[Any] = objects
    for _ in range(MAX_JSON_DEPTH):
        dicts = [node for node in level if type(node) is dict]
        if not set(map(type, itertools.chain.from_iterable(map(dict.keys, dicts)))) <= {str}:
            return False
        children = list(itertools.chain.from_iterable(map(dict.values, dicts)))
        if len(dicts) < len(level):
            children += itertools.chain.from_iterable(n for n in level if type(n) is list)
        kinds = set(map(type, children))
        if not kinds <= _JSON_KINDS or (
            float in kinds
            and not all(map(math.isfinite, [c for c in children if type(c) is float]))
        ):
            return False
        level = [c for c in children if type(c) in _JSON_NODES] if _JSON_NODES & kinds else []
        if not level:
            break
    else:  # containers still below the deepest level allowed
        return False
    try:
        return not objects or max(map(len, map(orjson.dumps, objects))) <= max_bytes
    except TypeError:  # orjson.JSONEncodeError: an int past 64 bits, a lone surrogate
        return False


def _check_depth(value: object, what: str) -> None:
    level: list[object] = [value]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            child
            for node in level
            if isinstance(node, Mapping | list | tuple)
            for child in (node.values() if isinstance(node, Mapping) else node)
            if isinstance(child, Mapping | list | tuple)
        ]
        if not level:
            return
    raise InvalidInputError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep")


def bounded_list(values: object, max_items: int) -> object:
    """A one-shot iterable (generator) as a list, read no further than one past the limit."""
    if values is None or isinstance(values, str | bytes | Mapping | Sized):
        return values
    if isinstance(values, Iterable):
        return list(itertools.islice(values, max_items + 1))
    return values


def check_memory_fields(memory: Memory, config: StoreConfig) -> None:
    """The size rules of one memory, as saved and as loaded."""
    meta = memory.meta
    if _plainly_within(memory, meta, config):  # every load checks every record: be quick
        return
    check_content(memory.content, config)
    check_strings(meta.tags, "tags", config.max_tags, config.max_tag_chars, "TAG")
    check_strings(
        memory.entities, "entities", config.max_entities, config.max_entity_chars, "ENTITY"
    )
    check_text(meta.source, "source", config.max_source_chars, "MAX_SOURCE_CHARS")
    check_text(meta.context, "context", config.max_context_chars, "MAX_CONTEXT_CHARS")
    check_text(
        memory.neighbour_text, "neighbour_text", config.max_context_chars, "MAX_CONTEXT_CHARS"
    )
    check_object(meta.extra, "extra", config)


def _plainly_within(memory: Memory, meta: Any, c: StoreConfig) -> bool:
    """True for the common record well inside every limit (exact type tests, no encoding);
    False sends it through the full checks, which accept or reject it with a reason."""
    content, tags, entities, source, context, neighbour = (
        memory.content,
        meta.tags,
        memory.entities,
        meta.source,
        meta.context,
        memory.neighbour_text,
    )
    try:
        return (
            type(content) is str
            and 0 < len(content) * 4 <= c.max_content_bytes
            and not content.isspace()
            and len(tags) <= c.max_tags
            and len(entities) <= c.max_entities
            and (not tags or max(map(len, tags)) <= c.max_tag_chars)
            and (not entities or max(map(len, entities)) <= c.max_entity_chars)
            and (source is None or (type(source) is str and len(source) <= c.max_source_chars))
            and (context is None or (type(context) is str and len(context) <= c.max_context_chars))
            and (
                neighbour is None
                or (type(neighbour) is str and len(neighbour) <= c.max_context_chars)
            )
            and (not meta.extra or plain_objects((meta.extra,), c.max_extra_bytes))
        )
    except TypeError:  # not sized: the full checks say what is wrong
        return False


def check_relation_fields(relation: Relation, config: StoreConfig) -> None:
    """The rules of one relation, as saved and as loaded."""
    if not isinstance(relation.relation_type, str) or relation.relation_type not in RELATION_TYPES:
        raise InvalidInputError(
            f"unknown relation_type {short_repr(relation.relation_type)}; "
            f"choose one of {', '.join(sorted(RELATION_TYPES))}"
        )
    validate_strength(relation.strength, upper=1.0)
    if relation.from_memory_id == relation.to_memory_id:
        raise InvalidInputError("a relation needs two different memories")
    check_object(relation.metadata, "relation metadata", config)


__all__ = [
    "MAX_JSON_DEPTH",
    "bounded_list",
    "check_content",
    "check_loaded_line",
    "check_memory_fields",
    "check_object",
    "check_relation_fields",
    "check_strings",
    "check_text",
    "encode_record",
    "line_bytes",
    "lines_pass_rules",
    "plain_objects",
    "utf8_over",
]
