"""Fixtures for the storage tests: one ``store`` fixture over both implementations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore, JSONLStore, StoreConfig

# A fixed clock (2024-01-01T00:00:00Z): no test sleeps or reads the wall clock.
NOW = 1_704_067_200.0


def make_store(kind: str, path: Path, config: StoreConfig | None = None):
    if kind == "memory":
        return InMemoryStore(config)
    if kind == "jsonl-snapshot":  # every open writes or reads the index snapshot
        config = replace(config or StoreConfig(), snapshot_min_bytes=1)
    return JSONLStore(path / "stm", config=config)


@pytest.fixture(params=["memory", "jsonl", "jsonl-snapshot"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(store_kind: str, tmp_path: Path):
    return make_store(store_kind, tmp_path)


@pytest.fixture
def reopen(store_kind: str, tmp_path: Path):
    """Open the same store again (a fresh process's view); the in-memory store is itself."""

    def _reopen(current):
        if store_kind == "memory":
            return current
        if store_kind == "jsonl-snapshot":  # this open writes a snapshot, the next reads it
            JSONLStore(tmp_path / "stm", config=current.config)
        return JSONLStore(tmp_path / "stm", config=current.config)

    return _reopen


def _file_bytes(directory: Path) -> dict[str, bytes]:
    if not directory.exists():
        return {}
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


@pytest.fixture
def folder_bytes(tmp_path: Path):
    """Every file's bytes under the test's directory (to prove an operation changed nothing)."""
    return lambda: _file_bytes(tmp_path)


@pytest.fixture
def now() -> float:
    return NOW


@pytest.fixture
def parse_counter(monkeypatch: pytest.MonkeyPatch):
    """``count(build)``: a list that gets, for each JSONL parse the store does with ``build``
    (validation's ``loaded_memory`` or ``loaded_relation``), how many records it parsed; an
    open the snapshot served adds nothing."""
    import cortexgraph.storage.jsonl_store as jsonl_store

    real = jsonl_store.live_records
    counts: dict[object, list[int]] = {}

    def counting(data, build, check=None, **bulk):
        records, bad = real(data, build, check, **bulk)
        calls = counts.get(getattr(build, "func", None))
        if calls is not None:
            calls.append(len(records))
        return records, bad

    monkeypatch.setattr(jsonl_store, "live_records", counting)
    return lambda build: counts.setdefault(build, [])


@pytest.fixture
def json_loads(parse_counter) -> list[int]:
    """How many memory records each open parses from JSONL (0 when the snapshot served)."""
    from cortexgraph.storage.validation import loaded_memory

    return parse_counter(loaded_memory)
