"""Issue 15, storage side: no bad line takes the store down, no field without a bound.

Each test is one of the issue's reproductions (or a generator of them): hostile lines are
quarantined byte-exactly, every field has a size limit enforced by one rule on save and load,
a tampered embedding cache or index snapshot never distorts what the store holds.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest

from storage import (
    ContentTooLargeError,
    InvalidInputError,
    JSONLStore,
    StoreConfig,
    open_store,
    validate_new_memory,
)

NOW = 1_704_067_200
GOOD_ID = "4d1c1f52-0000-4000-8000-000000000000"


def _record(**changes) -> dict:
    base = {
        "id": GOOD_ID, "content": "fine", "meta": {"tags": [], "source": None, "context": None,
        "extra": {}}, "entities": [], "created_at": NOW, "last_used": NOW, "use_count": 0,
        "strength": 1.0, "status": "active", "promoted_at": None, "promoted_to": None,
        "review_priority": 0.0, "last_review_at": None, "review_count": 0,
        "cross_domain_count": 0,
    }  # fmt: skip
    base.update(changes)
    return base


def quarantined_bytes(directory: Path, name: str = "memories") -> list[bytes]:
    """The original bytes of every quarantined line, decoded from the quarantine file."""
    qfile = directory / f"{name}.quarantine.jsonl"
    if not qfile.exists():
        return []
    entries = [json.loads(line) for line in qfile.read_bytes().split(b"\n") if line.strip()]
    return [base64.b64decode(e["line_base64"]) for e in entries]


# -- medium 4: every field has a limit, one rule for save and load --------------------------


SMALL = StoreConfig(
    max_content_bytes=100, max_tags=3, max_tag_chars=10, max_entities=3, max_entity_chars=10,
    max_source_chars=20, max_context_chars=30, max_extra_bytes=50, max_record_bytes=1_000,
)  # fmt: skip

OVERSIZED = {
    "content": dict(content="x" * 101),
    "content multibyte": dict(content="é" * 51),
    "tag count": dict(content="c", tags=["a", "b", "c", "d"]),
    "tag length": dict(content="c", tags=["a" * 11]),
    "entity count": dict(content="c", entities=["a", "b", "c", "d"]),
    "entity length": dict(content="c", entities=["e" * 11]),
    "source": dict(content="c", source="s" * 21),
    "context": dict(content="c", context="k" * 31),
    "extra": dict(content="c", extra={"k": "v" * 60}),
    "extra nesting": dict(content="c", extra={"k": json.loads("[" * 40 + "]" * 40)}),
}  # fmt: skip


@pytest.mark.parametrize("fields", OVERSIZED.values(), ids=OVERSIZED.keys())
def test_every_field_has_a_limit_checked_before_any_write(tmp_path, fields):
    with pytest.raises(InvalidInputError) as info:
        validate_new_memory(config=SMALL, **fields)
    assert len(str(info.value)) < 300
    store = open_store(tmp_path, SMALL)
    with pytest.raises(InvalidInputError):
        store.save(**fields)
    assert not (tmp_path / "memories.jsonl").exists() or not (tmp_path / "memories.jsonl").read_bytes()


def test_content_too_large_is_its_own_error_and_limits_allow_what_fits():
    with pytest.raises(ContentTooLargeError):
        validate_new_memory("x" * 101, config=SMALL)
    validate_new_memory(
        "x" * 100, tags=["a" * 10] * 3, entities=["e" * 10] * 3, source="s" * 20,
        context="k" * 30, extra={"k": "v" * 30}, config=SMALL,
    )  # fmt: skip


def test_huge_bad_values_are_quoted_short():
    huge = "y" * 1_000_000
    for call in (
        lambda: validate_new_memory("c", tags=[huge]),
        lambda: validate_new_memory("c", tags=[3, huge]),
        lambda: validate_new_memory("c", source=huge),
    ):
        with pytest.raises(InvalidInputError) as info:
            call()
        assert len(str(info.value)) < 300


def test_settings_pass_the_limits_to_the_store(monkeypatch):
    from cortexgraph.settings import Settings

    monkeypatch.setenv("CORTEXGRAPH_MAX_TAG_CHARS", "7")
    monkeypatch.setenv("CORTEXGRAPH_MAX_RECORD_BYTES", "5000")
    config = Settings().store_config()
    assert (config.max_tag_chars, config.max_record_bytes) == (7, 5000)
    with pytest.raises(InvalidInputError, match="CORTEXGRAPH_MAX_TAG_CHARS"):
        validate_new_memory("c", tags=["12345678"], config=config)


@pytest.mark.parametrize(
    "changes",
    [
        {"meta": {"tags": ["a" * 11], "source": None, "context": None, "extra": {}}},
        {"meta": {"tags": [], "source": "s" * 21, "context": None, "extra": {}}},
        {"meta": {"tags": [], "source": None, "context": None, "extra": {"k": "v" * 60}}},
        {"entities": ["a", "b", "c", "d"]},
        {"content": "x" * 101},
        {"unknown_field": "u" * 2000},
    ],
    ids=["tag", "source", "extra", "entities", "content", "record"],
)
def test_loading_applies_the_same_limits_as_saving(tmp_path, changes):
    good = _record(id="aaaaaaaa-0000-4000-8000-000000000001")
    bad = json.dumps(_record(**changes)).encode()
    (tmp_path / "memories.jsonl").write_bytes(json.dumps(good).encode() + b"\n" + bad + b"\n")
    store = open_store(tmp_path, SMALL)
    assert [m.id for m in store.list()] == [good["id"]]
    assert quarantined_bytes(tmp_path) == [bad]
