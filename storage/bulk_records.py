"""Memories of many well-formed records at once: the record-building half of opening a store.

``plain_memories`` checks a whole block of parsed records column by column (each test one C
loop over the block: ``map``, ``min``/``max``, type sets) and builds the memories only if every
record is one that ``loaded_memory`` would build on its fast path (``well_formed_memory``)
and finds plainly within every limit (``_plainly_within``). Then the memories are exactly
those. Otherwise it returns None and the caller builds that block one record at a time, with
the full rules and their reasons (tests/storage/test_storage_bulk_records.py holds both ways
to the same memories).
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from itertools import chain, repeat
from typing import Any, TypeVar

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.field_rules import ID_RE, MAX_COUNT, MAX_STRENGTH, MAX_TIME
from cortexgraph.storage.memory_fields import MEMORY_FIELDS, NEIGHBOUR_FIELD, MemoryMeta
from cortexgraph.storage.models import Memory
from cortexgraph.storage.record_fast_path import FAST_KEYS, META_KEYS, STATUS_OF, plain_keys
from cortexgraph.storage.record_limits import plain_objects

_ROW = operator.itemgetter(*MEMORY_FIELDS)
_META_ROW = operator.itemgetter("tags", "source", "context", "extra")
_NONE = type(None)
_T = TypeVar("_T")


def _types(column: Sequence[Any]) -> set[type]:
    return set(map(type, column))


def _within(column: Sequence[int], low: int, high: int) -> bool:
    return not column or (low <= min(column) and max(column) <= high)


def _clean_lists(column: Sequence[Any], max_items: int, max_chars: int) -> bool:
    """Every value a list of distinct, stripped, non-empty strings (``clean_strings``), at
    most ``max_items`` of them, none longer than ``max_chars``."""
    if _types(column) != {list}:
        return False
    sizes = list(map(len, column))
    if max(sizes) > max_items:
        return False
    flat = list(chain.from_iterable(column))
    return not flat or (
        _types(flat) == {str}
        and all(flat)
        and list(map(str.strip, flat)) == flat
        and max(map(len, flat)) <= max_chars
        and list(map(len, map(set, column))) == sizes
    )


def _optional_text(column: Sequence[Any], max_chars: int) -> bool:
    types = _types(column)
    if not types <= {str, _NONE}:
        return False
    return str not in types or max(len(v) for v in column if v is not None) <= max_chars


def dataclass_instances(cls: type[_T], n: int, **columns: Iterable[Any]) -> list[_T]:
    """``n`` instances of the frozen slotted dataclass ``cls``, one column per field.

    What its ``__init__`` does (``object.__setattr__`` of each field, in bytecode: 2.3 us a
    memory) as one C loop per field. The loops fill instances of a plain class with the same
    slots and none of ``cls``'s methods (``setattr`` goes straight to the slot, where ``cls``'s
    frozen ``__setattr__`` refuses), then make each a ``cls`` (``__class__`` assignment): the
    same object ``cls`` would have built. A field costs ~28 ns that way against ~40 ns
    through the slot's own ``__set__`` (a bound wrapper: an argument tuple per call): 13.4
    against 15.0 ms for a 10k store's 12.3k memories and their metas."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(columns):
        raise TypeError(f"{cls.__name__} needs exactly the columns {names}")
    plain = _same_slots(cls)
    if plain is None:  # a layout no plain class shares: through the slots' own setters
        objs = list(map(object.__new__, repeat(cls, n)))
        for name in names:
            deque(map(getattr(cls, name).__set__, objs, columns[name]), maxlen=0)
        return objs
    built: list[Any] = list(map(object.__new__, repeat(plain, n)))
    for name in names:
        deque(map(setattr, built, repeat(name), columns[name]), maxlen=0)
    deque(map(setattr, built, repeat("__class__"), repeat(cls, n)), maxlen=0)
    return built


_SAME_SLOTS: dict[type, type | None] = {}


def _same_slots(cls: type) -> type | None:
    """A plain class with ``cls``'s slots whose instances may become ``cls`` instances
    (``__class__`` assignment checks that the two layouts are the same); None if none may
    (``cls`` has a base with slots of its own, say)."""
    if cls in _SAME_SLOTS:
        return _SAME_SLOTS[cls]
    slots = cls.__dict__.get("__slots__")
    plain: type | None = None
    if type(slots) is tuple and cls.__bases__ == (object,):
        plain = type(f"_{cls.__name__}Slots", (), {"__slots__": slots, "__module__": __name__})
        probe: Any = object.__new__(plain)
        try:
            probe.__class__ = cls
        except TypeError:
            plain = None
    _SAME_SLOTS[cls] = plain
    return plain


def plain_memories(records: Sequence[Any], config: StoreConfig) -> list[Memory] | None:
    """The memories of ``records`` (parsed JSON objects), or None if any one of them is not
    a plain well-formed record within the limits (build those one at a time)."""
    if not records or _types(records) != {dict}:
        return None
    if not all(map(operator.eq, map(dict.keys, records), repeat(FAST_KEYS))):
        if not all(map(plain_keys, records)):  # some with a neighbour's text: as plain
            return None
        neighbours: Sequence[Any] = list(map(dict.get, records, repeat(NEIGHBOUR_FIELD)))
    else:
        neighbours = [None] * len(records)
    (
        ids,
        contents,
        metas,
        entities,
        created,
        used,
        uses,
        strengths,
        statuses,
        promoted_at,
        promoted_to,
        priorities,
        reviewed_at,
        reviews,
        cross,
    ) = zip(*map(_ROW, records), strict=True)
    if not (
        _types(ids) == {str}
        and all(map(ID_RE.fullmatch, ids))
        and _types(contents) == {str}
        and all(contents)
        and not any(map(str.isspace, contents))
        and max(map(len, contents)) * 4 <= config.max_content_bytes
        and _types(strengths) == {float}
        and all(map(math.isfinite, strengths))
        and _within(strengths, 0, MAX_STRENGTH)  # type: ignore[arg-type]
        and _types(priorities) == {float}
        and all(map(math.isfinite, priorities))
        and _types(statuses) == {str}
        and all(map(STATUS_OF.__contains__, statuses))
        and _types(created + used + uses + reviews + cross) == {int}
        and _within(uses + reviews + cross, 0, MAX_COUNT)
        and _within(created + used, -MAX_TIME, MAX_TIME)
        and _types(promoted_at + reviewed_at) <= {int, _NONE}
        and _within([t for t in promoted_at + reviewed_at if t is not None], -MAX_TIME, MAX_TIME)
        and _types(promoted_to) <= {str, _NONE}
        and _types(metas) == {dict}
        and all(map(operator.eq, map(dict.keys, metas), repeat(META_KEYS)))
        and _optional_text(neighbours, config.max_context_chars)
    ):
        return None
    tags, sources, contexts, extras = zip(*map(_META_ROW, metas), strict=True)
    if not (
        _optional_text(sources, config.max_source_chars)
        and _optional_text(contexts, config.max_context_chars)
        and _clean_lists(tags, config.max_tags, config.max_tag_chars)
        and _clean_lists(entities, config.max_entities, config.max_entity_chars)
        and plain_objects(extras, config.max_extra_bytes)  # entities_found, merge ...
    ):
        return None
    n = len(records)
    # Equal tag tuples as one object (tuples are immutable): memories share a few tag sets,
    # and each tuple less is memory and a visit less for the collector after the open.
    tag_tuples = list(map(tuple, tags))
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}
    built_metas = dataclass_instances(
        MemoryMeta,
        n,
        tags=map(shared.setdefault, tag_tuples, tag_tuples),
        source=sources,
        context=contexts,
        extra=map(dict, extras),
    )
    return dataclass_instances(
        Memory,
        n,
        id=ids,
        content=contents,
        meta=built_metas,
        entities=map(tuple, entities),
        created_at=created,
        last_used=used,
        use_count=uses,
        strength=strengths,
        status=map(STATUS_OF.__getitem__, statuses),
        promoted_at=promoted_at,
        promoted_to=promoted_to,
        review_priority=priorities,
        last_review_at=reviewed_at,
        review_count=reviews,
        cross_domain_count=cross,
        neighbour_text=neighbours,
        unknown=map(dict, repeat((), n)),  # a dict each, as the default factory gives
    )


# The index snapshot keeps memories as one list per field (meta's as "meta.tags" ...): the
# C unpickler reads lists of plain values about 4x quicker than 100k constructor calls, each
# of which sets a frozen dataclass's fields one by one in bytecode (__reduce__ on Memory).
_MEMORY_COLUMNS = tuple(f.name for f in fields(Memory) if f.name != "meta")
_META_COLUMNS = tuple(f.name for f in fields(MemoryMeta))
_META = operator.attrgetter("meta")


def memory_columns(memories: Sequence[Memory]) -> dict[str, list[Any] | tuple[Any]]:
    """One list per field of ``memories``, a 1-tuple for a field all of them hold the same
    (``memories_from_columns`` builds them back).

    Equal entity tuples, and the strings in them and in ``extra`` (its keys and values, and
    theirs a few levels down), are one object each: pickle writes an object it has seen as a
    reference to it, so the snapshot unpickles them once (at 10k memories half the entity
    lists are repeats, and every ``extra`` holds the same few keys: 2 ms less of every open,
    0.8 MB less to read). Memory ids in ``extra`` (``merged_into``, a merge's sources) are the
    id column's own strings: 0.3 MB and ~0.7 ms less of a 10k store's open.
    """
    metas = list(map(_META, memories))
    columns = {name: list(map(operator.attrgetter(name), memories)) for name in _MEMORY_COLUMNS}
    for name in _META_COLUMNS:
        columns[f"meta.{name}"] = list(map(operator.attrgetter(name), metas))
    one: dict[Any, Any] = {i: i for i in columns["id"]}
    shared = one_string_each(one)

    def shared_tuple(values: Any) -> Any:
        if type(values) is not tuple or not all(type(v) is str for v in values):
            return values
        t = tuple(map(shared, values))
        return one.setdefault(t, t)

    columns["entities"] = list(map(shared_tuple, columns["entities"]))
    columns["meta.extra"] = [_shared_json(x, shared) for x in columns["meta.extra"]]
    return {name: column if name == "id" else _folded(column) for name, column in columns.items()}


def one_string_each(one: dict[Any, Any]) -> Callable[[Any], Any]:
    """A function giving, for a string, the one object of its value kept in ``one`` (any
    other value as it is): what a snapshot pickles through it, pickle writes once and then
    refers to."""

    def shared(value: Any) -> Any:
        # str only: 1, 1.0 and True are equal keys of one dict, but not the same value
        return one.setdefault(value, value) if type(value) is str else value

    return shared


def _shared_json(value: Any, shared: Callable[[Any], Any], depth: int = 0) -> Any:
    """``value`` (JSON-like) with its strings through ``shared``: the dict keys and the
    strings of dicts and lists down to a merge provenance's sources (a few levels; deeper
    ones, unusual, as they are)."""
    kind = type(value)
    if kind is str:
        return shared(value)
    if depth > 4:
        return value
    if kind is dict:
        return {shared(k): _shared_json(v, shared, depth + 1) for k, v in value.items()}
    if kind is list:
        return [_shared_json(v, shared, depth + 1) for v in value]
    return value


_ONE_VALUE_TYPES = (type(None), bool, int, str)


def _folded(column: list[Any]) -> list[Any] | tuple[Any]:
    """``column`` as a 1-tuple of its one value when every value is the same immutable value
    (or every one an empty dict): a snapshot then unpickles one value, not a list of 12k. At
    10k memories eight columns are (no review, no neighbour, source or context, no unknown
    fields): ~3 ms and 0.5k page faults of every open."""
    if len(column) < 2:
        return column
    first = column[0]
    kind = type(first)
    if set(map(type, column)) != {kind}:
        return column
    if kind is dict:
        return ({},) if not any(column) else column  # each memory gets a dict of its own
    if kind is float:  # bit for bit: 0.0 and -0.0 are equal, not the same value
        return (first,) if set(map(float.hex, column)) == {first.hex()} else column
    if kind in _ONE_VALUE_TYPES and column.count(first) == len(column):
        return (first,)
    return column


def _unfolded(column: Any, n: int) -> Iterable[Any]:
    """A column of ``n`` values from what ``memory_columns`` wrote; TypeError if it is not."""
    if type(column) is tuple and len(column) == 1:
        value = column[0]
        if type(value) is dict:
            if value:
                raise TypeError("only an empty dict is folded")
            return map(dict, repeat(value, n))
        if type(value) not in (*_ONE_VALUE_TYPES, float):
            raise TypeError(f"a folded column of {type(value).__name__}")
        return repeat(value, n)
    if type(column) is not list or len(column) != n:
        raise TypeError("memory columns of different lengths")
    return column


def memories_from_columns(columns: Mapping[str, Sequence[Any]]) -> list[Memory]:
    """The memories ``memory_columns`` took apart; TypeError if the columns are not those
    (a snapshot written by another version: the caller loads the JSONL instead)."""
    names = {*_MEMORY_COLUMNS, *(f"meta.{name}" for name in _META_COLUMNS)}
    if set(columns) != names:
        raise TypeError(f"memory columns must be exactly {sorted(names)}")
    if type(columns["id"]) is not list:
        raise TypeError("memory ids must be a list")
    n = len(columns["id"])
    full = {name: _unfolded(column, n) for name, column in columns.items()}
    metas = dataclass_instances(
        MemoryMeta, n, **{name: full[f"meta.{name}"] for name in _META_COLUMNS}
    )
    return dataclass_instances(
        Memory, n, meta=metas, **{name: full[name] for name in _MEMORY_COLUMNS}
    )


__all__ = [
    "dataclass_instances",
    "memories_from_columns",
    "memory_columns",
    "one_string_each",
    "plain_memories",
]
