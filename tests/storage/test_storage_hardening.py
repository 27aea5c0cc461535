"""Issue 15, storage side: no bad line takes the store down, no field without a bound.

Each test is one of the issue's reproductions (or a generator of them): hostile lines are
quarantined byte-exactly, every field has a size limit enforced by one rule on save and load,
a tampered embedding cache or index snapshot never distorts what the store holds.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from cortexgraph.storage import (
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
        "id": GOOD_ID,
        "content": "fine",
        "meta": {"tags": [], "source": None, "context": None, "extra": {}},
        "entities": [],
        "created_at": NOW,
        "last_used": NOW,
        "use_count": 0,
        "strength": 1.0,
        "status": "active",
        "promoted_at": None,
        "promoted_to": None,
        "review_priority": 0.0,
        "last_review_at": None,
        "review_count": 0,
        "cross_domain_count": 0,
    }
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
    max_content_bytes=100,
    max_tags=3,
    max_tag_chars=10,
    max_entities=3,
    max_entity_chars=10,
    max_source_chars=20,
    max_context_chars=30,
    max_extra_bytes=50,
    max_record_bytes=1_000,
)

OVERSIZED = {
    "content": {"content": "x" * 101},
    "content multibyte": {"content": "é" * 51},
    "tag count": {"content": "c", "tags": ["a", "b", "c", "d"]},
    "tag length": {"content": "c", "tags": ["a" * 11]},
    "entity count": {"content": "c", "entities": ["a", "b", "c", "d"]},
    "entity length": {"content": "c", "entities": ["e" * 11]},
    "source": {"content": "c", "source": "s" * 21},
    "context": {"content": "c", "context": "k" * 31},
    "extra": {"content": "c", "extra": {"k": "v" * 60}},
    "extra nesting": {"content": "c", "extra": {"k": json.loads("[" * 40 + "]" * 40)}},
}


@pytest.mark.parametrize("fields", OVERSIZED.values(), ids=OVERSIZED.keys())
def test_every_field_has_a_limit_checked_before_any_write(tmp_path, fields):
    with pytest.raises(InvalidInputError) as info:
        validate_new_memory(config=SMALL, **fields)
    assert len(str(info.value)) < 300
    store = open_store(tmp_path, SMALL)
    with pytest.raises(InvalidInputError):
        store.save(**fields)
    memories = tmp_path / "memories.jsonl"
    assert not memories.exists() or not memories.read_bytes()


def test_content_too_large_is_its_own_error_and_limits_allow_what_fits():
    with pytest.raises(ContentTooLargeError):
        validate_new_memory("x" * 101, config=SMALL)
    validate_new_memory(
        "x" * 100,
        tags=["a" * 10] * 3,
        entities=["e" * 10] * 3,
        source="s" * 20,
        context="k" * 30,
        extra={"k": "v" * 30},
        config=SMALL,
    )


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


# -- high 1: any failure on one line quarantines that line, byte-exactly ---------------------

try:
    from hypothesis import HealthCheck, assume, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - a dev dependency
    pytest.skip("hypothesis is not installed", allow_module_level=True)


def _bad_id(n: int) -> str:
    return f"bad-{n}"


WRONG_VALUES = {
    "id": [3, None, [], "", "a b", "x\n", "é", "a" * 200],
    "content": [3, None, [], {}, "", "   "],
    "meta": [3, [], "not json", {"tags": "t"}, {"extra": []}, {"source": 5}],
    "entities": [3, {"a": 1}, [1], [""], "[1"],
    "created_at": ["now", [], 1e400, 10**30, True],
    "use_count": [-1, 10**30, "3", 1.5e300, "x"],
    "strength": [-0.1, 2.5, "1", 1e400, []],
    "status": ["deleted", 3, []],
    "review_count": [-5, 10**13],
    "last_review_at": ["yesterday", 2**41],
}

json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@st.composite
def hostile_line(draw, n: int) -> bytes:
    """One line no store may accept, of many kinds; ``n`` keeps its id distinct."""
    kind = draw(
        st.sampled_from(
            [
                "bytes",
                "nesting",
                "wrong type",
                "huge number",
                "surrogate",
                "not an object",
                "invalid utf-8",
                "oversized",
            ]
        )
    )
    if kind == "bytes":
        raw = draw(st.binary(min_size=1, max_size=200).map(lambda b: b.replace(b"\n", b" ")))
        assume(raw.strip())
        try:
            obj = json.loads(raw)
        except Exception:  # unreadable: what we want
            return raw
        assume(not isinstance(obj, dict))
        return raw
    if kind == "nesting":
        depth = draw(st.integers(900, 5000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        middle = "1" if opener != "[" else ""
        return (opener * depth + middle + closer * depth).encode()
    if kind == "wrong type":
        field = draw(st.sampled_from(sorted(WRONG_VALUES)))
        value = draw(st.sampled_from(WRONG_VALUES[field]))
        record = _record(**{"id": _bad_id(n), field: value})
        return json.dumps(record).encode()
    if kind == "huge number":
        digits = draw(st.integers(20, 6000))
        field = draw(st.sampled_from(["use_count", "created_at", "review_count", "strength"]))
        line = json.dumps(_record(id=_bad_id(n), **{field: 0}))
        return line.replace(f'"{field}": 0', f'"{field}": 9{"9" * digits}').encode()
    if kind == "surrogate":
        where = draw(st.sampled_from(["content", "tag", "source", "extra"]))
        cp = draw(st.integers(0xD800, 0xDFFF))
        text = f"x\\u{cp:04x}y"
        line = json.dumps(_record(id=_bad_id(n), content="PLACEHOLDER"))
        if where == "tag":
            line = line.replace('"tags": []', '"tags": ["PLACEHOLDER"]')
        elif where == "source":
            line = line.replace('"source": null', '"source": "PLACEHOLDER"')
        elif where == "extra":
            line = line.replace('"extra": {}', '"extra": {"k": "PLACEHOLDER"}')
        return line.replace("PLACEHOLDER", text, 1).encode()
    if kind == "not an object":
        value = draw(json_text)
        assume(not isinstance(value, dict))
        return json.dumps(value).encode()
    if kind == "invalid utf-8":
        line = json.dumps(_record(id=_bad_id(n), content="PLACEHOLDER")).encode()
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
        return line.replace(b"PLACEHOLDER", b"a" + junk + b"b")
    extra = {"k": "v" * draw(st.integers(70_000, 120_000))}
    return json.dumps(
        _record(id=_bad_id(n), meta={"tags": [], "source": None, "context": None, "extra": extra})
    ).encode()


@st.composite
def hostile_file(draw):
    """Bad lines interleaved with the good ones, the last one possibly without a newline."""
    bad = [draw(hostile_line(n)) for n in range(draw(st.integers(1, 6)))]
    slots = [draw(st.integers(0, 3)) for _ in bad]
    return bad, slots, draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=hostile_file())
def test_hostile_lines_are_quarantined_byte_exactly_and_good_records_load(case):
    import tempfile

    bad, slots, torn_tail = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        store = open_store(path)
        good = [store.save(f"good memory {i}", tags=["g"], now=NOW) for i in range(3)]
        store.add_relation(good[0].id, good[1].id, now=NOW)
        for name in ("memories", "relations"):
            file = path / f"{name}.jsonl"
            lines = file.read_bytes().split(b"\n")[:-1]
            for line, slot in zip(bad, slots, strict=True):
                lines.insert(min(slot, len(lines)), line)
            data = b"\n".join(lines) + (b"" if torn_tail and lines[-1] in bad else b"\n")
            file.write_bytes(data)
        again = open_store(path)
        assert sorted(m.id for m in again.list()) == sorted(m.id for m in good)
        assert len(again.relations()) == 1
        for name in ("memories", "relations"):
            assert sorted(quarantined_bytes(path, name)) == sorted(bad)
        assert again.stats().quarantined_lines == 2 * len(bad)
        report = again.compact()
        assert (report.memories_kept, report.relations_kept) == (3, 1)
        assert sorted(m.id for m in open_store(path).list()) == sorted(m.id for m in good)


def test_issue_repro_deep_nesting_store_opens_and_maintenance_cli_works(tmp_path):
    from typer.testing import CliRunner

    from cortexgraph.cli.maintenance import app

    store = open_store(tmp_path)
    kept = store.save("ok", now=NOW)
    deep = b"[" * 1100 + b"]" * 1100
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(deep + b"\n")
    runner = CliRunner()
    stats = runner.invoke(app, ["stats", "--storage-path", str(tmp_path), "--json"])
    assert stats.exit_code == 0, stats.output
    data = json.loads(stats.output)
    assert (data["memories"], data["quarantined_lines"]) == (1, 1)
    compact = runner.invoke(app, ["compact", "--storage-path", str(tmp_path), "--json"])
    assert compact.exit_code == 0, compact.output
    assert json.loads(compact.output)["memories_kept"] == 1
    assert quarantined_bytes(tmp_path) == [deep]
    assert [m.id for m in open_store(tmp_path).list()] == [kept.id]


def test_quarantine_keeps_invalid_utf8_bytes_not_a_replacement_copy(tmp_path):
    store = open_store(tmp_path)
    store.save("ok", now=NOW)
    bad = json.dumps(_record(content="PLACEHOLDER")).encode().replace(b"PLACEHOLDER", b"\xff\xfe")
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(bad + b"\n")
    assert len(open_store(tmp_path).list()) == 1
    entry = json.loads((tmp_path / "memories.quarantine.jsonl").read_bytes())
    assert base64.b64decode(entry["line_base64"]) == bad
    assert "line" not in entry  # no U+FFFD copy that would pass for the original


# -- low: surrogates, strict loading, stale temp files, following a compaction ---------------


def test_escaped_lone_surrogate_is_quarantined_on_load_so_compaction_works(tmp_path):
    store = open_store(tmp_path)
    kept = store.save("ok", now=NOW)
    bad = json.dumps(_record(content="a\ud800b")).encode()  # json writes it as \\ud800
    assert b"\\ud800" in bad
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(bad + b"\n")
    again = open_store(tmp_path)
    assert [m.id for m in again.list()] == [kept.id]
    assert quarantined_bytes(tmp_path) == [bad]
    assert again.compact().memories_kept == 1
    with pytest.raises(InvalidInputError, match="surrogate"):
        again.save("a\ud800b")
    pair = again.save("emoji \U0001f600 kept")  # a real astral character is fine
    assert open_store(tmp_path).get(pair.id).content == "emoji \U0001f600 kept"


@pytest.mark.parametrize(
    "changes",
    [
        {"content": ""},
        {"content": " \n "},
        {"use_count": 10**30},
        {"id": GOOD_ID + "\n"},
        {"review_count": 10**13},
        {"created_at": 10**20},
        {"status": []},
        {"entities": 0},
    ],
    ids=["empty", "blank", "use_count", "id newline", "review_count", "time", "status", "ents"],
)
def test_loading_is_as_strict_as_saving(tmp_path, changes):
    bad = json.dumps(_record(**changes)).encode()
    (tmp_path / "memories.jsonl").write_bytes(bad + b"\n")
    assert open_store(tmp_path).list() == []
    assert quarantined_bytes(tmp_path) == [bad]


def test_stale_temp_files_of_killed_compactions_are_removed_on_open(tmp_path):
    store = open_store(tmp_path)
    store.save("ok", now=NOW)
    dead = tmp_path / ".memories.jsonl.999999.tmp"
    dead.write_bytes(b"x" * 1000)
    (tmp_path / ".relations.jsonl.12.tmp").write_bytes(b"y")
    (tmp_path / ".cortexgraph-index.pickle.999999.tmp").write_bytes(b"z")
    (tmp_path / ".embeddings-m.npz.999999.tmp.npz").write_bytes(b"v")
    import os

    live = tmp_path / f".cortexgraph-index.pickle.{os.getpid()}.tmp"  # a writer still running
    live.write_bytes(b"w")
    open_store(tmp_path)
    assert sorted(p.name for p in tmp_path.glob(".*tmp*")) == [live.name]


def test_a_writer_follows_anothers_compaction_without_a_full_reload(tmp_path, monkeypatch):
    a, b = open_store(tmp_path), open_store(tmp_path)
    first = a.save("first", now=NOW)
    a.update(first.id, content="first, edited")
    b.save("from b", now=NOW)
    reloads: list[int] = []
    real = JSONLStore._reload_all
    monkeypatch.setattr(JSONLStore, "_reload_all", lambda self: (reloads.append(1), real(self)))
    a.compact()
    later = b.save("after the compaction", now=NOW)
    assert reloads == []  # b moved its cursors to the compacted files
    assert {m.content for m in b.list()} == {"first, edited", "from b", "after the compaction"}
    fresh = open_store(tmp_path)
    assert {m.id: m for m in fresh.list()} == {m.id: m for m in b.list()}
    assert later.id in a  # and a sees b's append as usual


def test_a_writer_that_missed_lines_before_a_compaction_reloads_in_full(tmp_path):
    a, b = open_store(tmp_path), open_store(tmp_path)
    b.save("b knows this", now=NOW)
    a.save("b has not read this yet", now=NOW)
    c = open_store(tmp_path)
    c.save("nor this", now=NOW)
    c.compact()
    assert {m.content for m in b.list()} == {"b knows this", "b has not read this yet", "nor this"}


# -- one rule: the edge's check, save and load agree -----------------------------------------

any_text = st.text(st.characters(codec=None, categories=None), max_size=40) | st.text(max_size=99)
field_values = st.fixed_dictionaries(
    {"content": any_text | st.integers() | st.none()},
    optional={
        "tags": st.none() | st.lists(any_text | st.integers(), max_size=5) | any_text,
        "entities": st.none()
        | st.lists(any_text, max_size=5)
        | st.dictionaries(any_text, any_text),
        "source": st.none() | any_text | st.integers(),
        "context": st.none() | any_text,
        "extra": st.none() | st.dictionaries(st.text(max_size=5), json_text, max_size=3) | any_text,
    },
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # the profile's budget
@given(fields=field_values)
def test_the_edge_check_save_and_load_agree(fields):
    import tempfile

    from cortexgraph.storage import InMemoryStore

    try:
        validate_new_memory(config=SMALL, **fields)
        allowed = True
    except InvalidInputError as exc:
        allowed = False
        assert len(str(exc)) < 400
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(tmp, SMALL)
        try:
            saved = store.save(now=NOW, **fields)
        except InvalidInputError:
            assert not allowed
            assert not (Path(tmp) / "memories.jsonl").exists()
            return
        assert allowed
        again = open_store(tmp, SMALL)
        assert again.get(saved.id) == saved and again.quarantined_lines == 0
        assert InMemoryStore.from_files(tmp, SMALL).get(saved.id) == saved


def test_relations_are_bounded_and_loaded_by_the_same_rules(tmp_path):
    store = open_store(tmp_path, SMALL)
    a, b = store.save("a", now=NOW), store.save("b", now=NOW)
    with pytest.raises(InvalidInputError, match="MAX_EXTRA_BYTES"):
        store.add_relation(a.id, b.id, metadata={"note": "n" * 100})
    kept = store.add_relation(a.id, b.id, metadata={"note": "short"}, now=NOW)
    bad = json.dumps(kept.to_json() | {"id": "rel-2", "relation_type": "hates"}).encode()
    huge = json.dumps(kept.to_json() | {"id": "rel-3", "metadata": {"n": "n" * 100}}).encode()
    with (tmp_path / "relations.jsonl").open("ab") as f:
        f.write(bad + b"\n" + huge + b"\n")
    assert [r.id for r in open_store(tmp_path, SMALL).relations()] == [kept.id]
    assert quarantined_bytes(tmp_path, "relations") == [bad, huge]


def test_two_identical_bad_lines_are_both_quarantined(tmp_path):
    """Found by the hostile-lines property: the fast load kept only the newest line per id, so
    a repeated unbuildable line was quarantined once but removed twice."""
    store = open_store(tmp_path)
    store.save("good", now=NOW)
    line = b'{"id": "", "content": "fine", "created_at": 1704067200, "last_used": 1704067200}'
    with (tmp_path / "memories.jsonl").open("ab") as f:
        f.write(line + b"\n" + line + b"\n")
    again = open_store(tmp_path)
    assert len(again.list()) == 1
    assert quarantined_bytes(tmp_path, "memories") == [line, line]
