"""Issue 15, the MCP edge: a rejected call writes nothing, every input is bounded and checked
before any analysis, errors quote a short prefix, types are strict, every loopback spelling
gets the Host/Origin check, and a line the SDK cannot parse still gets an answer.

(The per-tool fuzz with the unchanged-store check is test_mcp_fuzz.py.)
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    INITIALIZE,
    PYTHON,
    error_text,
    folder_bytes,
    make_settings,
    payload,
    server_env,
)

from cortexgraph.mcp_server.app import build_server
from cortexgraph.mcp_server.errors import MAX_ERROR_CHARS, clip, quote
from cortexgraph.mcp_server.stdio import request_id
from cortexgraph.storage import open_store

UNKNOWN_ID = "3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"


def call(tmp_path: Path, *calls: tuple[str, dict[str, Any]], **settings: Any) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(build_server(make_settings(tmp_path, **settings))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def seeded(tmp_path: Path, *contents: str) -> list[str]:
    store = open_store(tmp_path / "stm")
    return [store.save(c, tags=["seed"], entities=["billing"]).id for c in contents]


# -- High 2: a rejected call has written nothing -------------------------------------------


@pytest.mark.parametrize("supersedes", [["not an id!"], [UNKNOWN_ID], ["3f2b8c1e"], ["x\n"]])
def test_save_memory_with_a_bad_supersedes_id_writes_nothing(tmp_path, supersedes):
    """Repro: save_memory {"content": "x", "supersedes": ["not an id!"]} wrote, then failed."""
    seeded(tmp_path, "The team uses MySQL for billing")
    before = folder_bytes(tmp_path)
    (result,) = call(tmp_path, ("save_memory", {"content": "x", "supersedes": supersedes}))
    assert any(w in error_text(result) for w in ("malformed memory id", "no memory with id"))
    assert folder_bytes(tmp_path) == before
    assert len(open_store(tmp_path / "stm")) == 1


def test_save_memory_with_a_good_supersedes_id_still_supersedes(tmp_path):
    (old,) = seeded(tmp_path, "The team uses MySQL for billing")
    (result,) = call(
        tmp_path,
        (
            "save_memory",
            {
                "content": "The team now uses Postgres for billing",
                "entities": ["billing"],
                "strength": 1.0,
                "supersedes": [old[:8]],
            },
        ),
    )
    assert payload(result)["temporal"]["superseded"][0]["memory_id"] == old


@pytest.mark.parametrize("which", ["self", "cycle", "unknown-second"])
def test_record_memory_update_checks_every_id_before_changing_any(tmp_path, which):
    a, b, c = seeded(
        tmp_path, "billing runs on MySQL", "billing runs on Oracle", "billing runs on Postgres"
    )
    if which == "cycle":  # a is already superseded by c: c cannot now be replaced by a
        store = open_store(tmp_path / "stm")
        store.update(a, extra={"superseded_by": c})
    supersedes = {"self": [b, a], "cycle": [b, c], "unknown-second": [b, UNKNOWN_ID]}[which]
    before = folder_bytes(tmp_path)
    (result,) = call(tmp_path, ("record_memory_update", {"memory_id": a, "supersedes": supersedes}))
    assert error_text(result)
    assert folder_bytes(tmp_path) == before  # b was not superseded either


def test_memory_forget_correct_refuses_an_oversized_correction_before_writing(tmp_path):
    (a,) = seeded(tmp_path, "billing runs on MySQL")
    before = folder_bytes(tmp_path)
    (result,) = call(
        tmp_path,
        ("memory_forget", {"memory_id": a, "action": "correct", "correction": "é" * 19_000}),
        max_content_bytes=10_000,
    )
    assert "the limit is 10,000" in error_text(result)
    assert folder_bytes(tmp_path) == before


# -- Medium 5: sizes are checked before any analysis ---------------------------------------


@pytest.fixture
def analysis_calls(monkeypatch):
    """Every call into activation's analysers (enrichment, analyze_message), recorded."""
    from cortexgraph import activation

    calls: list[str] = []
    real_enrich, real_analyze = activation.enrich_for_save, activation.analyze_message

    def enrich(content, **kw):
        calls.append("enrich")
        return real_enrich(content, **kw)

    def analyze(message, **kw):
        calls.append("analyze")
        return real_analyze(message, **kw)

    monkeypatch.setattr(activation, "enrich_for_save", enrich)
    monkeypatch.setattr(activation, "analyze_message", analyze)
    return calls


@pytest.mark.slow  # the control call loads spaCy
def test_oversized_text_is_refused_before_it_is_analysed(tmp_path, analysis_calls):
    """Repro: 500 KB of content was enriched (48 s, 2.25 GB) before the size refusal."""
    big = "word " * 100_000  # 500 KB
    before = folder_bytes(tmp_path)
    refused = call(
        tmp_path,
        ("save_memory", {"content": big}),
        ("save_memory", {"content": "ok", "tags": ["t" * 100_000]}),
        ("save_memory", {"content": "ok", "entities": ["x", ""]}),
        ("analyze_message", {"message": big}),
        enable_preprocessing=True,
    )
    assert "the limit is 100,000" in error_text(refused[0])
    assert all(error_text(r) for r in refused)
    assert analysis_calls == []
    assert folder_bytes(tmp_path) == before
    # The control: the same calls at a sane size do reach the analysers.
    (ok,) = call(
        tmp_path,
        ("save_memory", {"content": "We moved billing to Postgres"}),
        enable_preprocessing=True,
    )
    assert payload(ok)["success"] and analysis_calls == ["enrich"]


def test_the_stores_field_limits_apply_before_enrichment(tmp_path, analysis_calls):
    """Medium 4: every field's limit (CORTEXGRAPH_MAX_*) is checked at the top of save_memory."""
    limits = {
        "max_tag_chars": 10,
        "max_entity_chars": 10,
        "max_source_chars": 10,
        "max_context_chars": 10,
        "max_tags": 2,
        "max_extra_bytes": 20,
    }
    before = folder_bytes(tmp_path)
    refused = call(
        tmp_path,
        ("save_memory", {"content": "ok", "tags": ["t" * 11]}),
        ("save_memory", {"content": "ok", "tags": ["a", "b", "c"]}),
        ("save_memory", {"content": "ok", "entities": ["e" * 11]}),
        ("save_memory", {"content": "ok", "source": "s" * 11}),
        ("save_memory", {"content": "ok", "context": "c" * 11}),
        ("save_memory", {"content": "ok", "meta": {"k": "v" * 30}}),
        enable_preprocessing=True,
        **limits,
    )
    texts = [error_text(r) for r in refused]
    for text, setting in zip(
        texts,
        ("TAG_CHARS", "MAX_TAGS", "ENTITY_CHARS", "SOURCE_CHARS", "CONTEXT_CHARS", "EXTRA_BYTES"),
        strict=True,
    ):
        assert f"CORTEXGRAPH_{setting}" in text or f"CORTEXGRAPH_MAX_{setting}" in text, text
    assert analysis_calls == []
    assert folder_bytes(tmp_path) == before


# Free-form text checked inside the tool (against the store's settings) or JSON-size-checked.
CHECKED_IN_TOOL = {
    ("save_memory", "content"),
    ("save_memory", "meta"),
    ("create_relation", "metadata"),
    ("record_tool_call", "tool_input"),
    ("memory_retrieve", "filters"),  # four known keys, each bounded (tools_context)
    # the monitor seed's context object: JSON-size-checked (2,000 characters), known keys only
    ("query_pattern_history", "context"),
    ("request_intervention", "context"),
}


def unbounded(schema: dict[str, Any], path: str) -> list[str]:
    """The parts of a JSON schema that accept input of any size."""
    if "anyOf" in schema:
        return [u for s in schema["anyOf"] for u in unbounded(s, path)]
    kind = schema.get("type")
    if (
        kind == "string"
        and "maxLength" not in schema
        and "enum" not in schema
        and "const" not in schema
    ):
        return [path]
    if kind == "array":
        own = [] if "maxItems" in schema else [path]
        return own + unbounded(schema.get("items", {}), f"{path}[]")
    if kind == "object":
        return [path]
    return []


def test_every_tool_argument_has_a_size_bound(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return (await client.list_tools()).tools

    missing = []
    for tool in anyio.run(go):
        for name, prop in tool.input_schema.get("properties", {}).items():
            if (tool.name, name) not in CHECKED_IN_TOOL:
                missing += [f"{tool.name}.{u}" for u in unbounded(prop, name)]
    assert missing == []


def test_free_form_json_arguments_are_bounded_in_the_tool(tmp_path):
    a, b = seeded(tmp_path, "one", "two")
    before = folder_bytes(tmp_path)
    results = call(
        tmp_path,
        ("save_memory", {"content": "x", "meta": {"k": "v" * 20_000}}),
        (
            "create_relation",
            {
                "from_memory_id": a,
                "to_memory_id": b,
                "relation_type": "related",
                "metadata": {"k": ["v" * 1000] * 20},
            },
        ),
        (
            "record_tool_call",
            {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "v" * 200_000}},
        ),
    )
    assert all("characters of JSON" in error_text(r) for r in results)
    assert folder_bytes(tmp_path) == before


# -- Medium 6: errors quote a short prefix -------------------------------------------------

HUGE = "x/" * 500_000  # 1 MB, and not a valid id


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("touch_memory", {"memory_id": HUGE}),
        ("promote_memory", {"memory_id": HUGE}),
        ("set_core_memory", {"memory_id": HUGE}),
        ("open_memories", {"memory_ids": HUGE}),
        ("consolidate_memories", {"cluster_id": HUGE}),
        ("memory_retrieve", {"query": "x", "after": HUGE}),
        ("search_memory", {"query": "q", "top_k": HUGE}),
        ("save_memory", {"content": "x", "tags": [HUGE]}),
        ("save_memory", {"content": "x", "supersedes": [HUGE]}),
        ("report_outcome", {"pattern_id": HUGE, "intervention_id": "x", "worked": True}),
        (HUGE, {}),
    ],
)
def test_an_error_quotes_at_most_a_short_prefix_of_the_input(tmp_path, tool, args):
    """Repro: a 1 MB bad id came back as a 1 MB error."""
    (result,) = call(tmp_path, (tool, args))
    text = error_text(result)
    assert len(text) <= MAX_ERROR_CHARS + 40
    assert "x/x/x/" * 100 not in text


def test_quote_and_clip_say_how_long_the_input_was():
    assert quote("short") == "'short'"
    assert quote("y" * 1000) == f"{'y' * 80!r}\u2026 (1,000 chars)"
    assert clip("z" * 5000, 100) == "z" * 100 + "\u2026 (5,000 chars)"
    assert clip("fine") == "fine"


def test_a_log_line_quoting_a_huge_input_is_clipped():
    """The SDK logs every tool error text at INFO (stderr reached 134 MB during the fuzz)."""
    import logging

    from cortexgraph.mcp_server.errors import ClipLogRecords

    record = logging.LogRecord(
        "mcp", logging.INFO, __file__, 1, "Tool %r failed: %r", ("t", "x" * 1_000_000), None
    )
    assert ClipLogRecords().filter(record)
    assert len(record.getMessage()) <= MAX_ERROR_CHARS + 40


def test_a_huge_resource_uri_error_is_clipped(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            with pytest.raises(MCPError) as info:
                await client.read_resource("cortexgraph://memory/" + "x" * 1_000_000)
            return info.value

    assert len(str(anyio.run(go))) <= MAX_ERROR_CHARS + 200


# -- Low: strict integer and number fields -------------------------------------------------


def test_true_is_not_a_number_in_any_integer_or_number_field(tmp_path):
    """Repro: top_k=true was read as 1."""

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            tools = (await client.list_tools()).tools
            out = []
            for tool in tools:
                for name, prop in tool.input_schema.get("properties", {}).items():
                    kinds = {s.get("type") for s in prop.get("anyOf", [prop])}
                    if kinds & {"integer", "number"}:
                        out.append(
                            (tool.name, name, await client.call_tool(tool.name, {name: True}))
                        )
            return out

    checked = anyio.run(go)
    assert len(checked) >= 20
    for tool, name, result in checked:
        assert result.is_error, f"{tool}.{name} accepted true"
        assert f"\n{name}\n  Input should be a valid" in result.content[0].text, (tool, name)


def test_whole_numbers_are_still_numbers(tmp_path):
    seeded(tmp_path, "one")
    found, graph = call(
        tmp_path,
        ("search_memory", {"query": "one", "top_k": 5, "min_score": 0}),
        ("read_graph", {"page_size": 5}),
    )
    assert payload(found)["count"] == 1 and payload(graph)["pagination"]["page_size"] == 5


# -- Medium 9: every loopback spelling gets the Host/Origin check --------------------------


def free_port_on(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def start_http(tmp_path: Path, host: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PYTHON, "-m", "cortexgraph.mcp_server", "--http", "--host", host, "--port", str(port)],
        env=server_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode(errors="replace")[-2000:])
        with socket.socket(family) as s:
            if s.connect_ex((host, port)) == 0:
                return proc
        time.sleep(0.05)
    proc.kill()
    raise TimeoutError(f"nothing listening on {host}:{port}")


def loopback_available(host: str) -> bool:
    try:
        free_port_on(host)
    except OSError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "0:0:0:0:0:0:0:1"])
def test_http_host_and_origin_are_checked_on_every_loopback_address(tmp_path, host):
    """Repro: --host 127.0.0.2 (or 0:0:0:0:0:0:0:1) served a foreign Host with 200."""
    if not loopback_available(host):
        pytest.skip(f"{host} cannot be bound here")
    port = free_port_on(host)
    proc = start_http(tmp_path, host, port)
    url = f"http://{url_host(host)}:{port}/mcp"
    own = f"{url_host(host)}:{port}"

    def status(headers: dict[str, str]) -> int:
        r = httpx2.post(
            url,
            json=INITIALIZE,
            timeout=30,
            headers={"accept": "application/json, text/event-stream", **headers},
        )
        return r.status_code

    try:
        matrix = {
            "own host": status({"host": own}),
            "localhost": status({"host": f"localhost:{port}"}),
            "own host, own origin": status({"host": own, "origin": f"http://{own}"}),
            "foreign host": status({"host": f"evil.example:{port}"}),
            "foreign host, no port": status({"host": "evil.example"}),
            "rebound name": status({"host": f"127.0.0.1.nip.io:{port}"}),
            "foreign origin": status({"host": own, "origin": "http://evil.example"}),
            "foreign origin, own port": status(
                {"host": own, "origin": f"http://evil.example:{port}"}
            ),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert matrix == {
        "own host": 200,
        "localhost": 200,
        "own host, own origin": 200,
        "foreign host": 421,
        "foreign host, no port": 421,
        "rebound name": 421,
        "foreign origin": 403,
        "foreign origin, own port": 403,
    }


def test_loopback_spellings_cover_the_bind_address():
    from cortexgraph.mcp_server.http import loopback_spellings, rebinding_protection

    assert "[0:0:0:0:0:0:0:1]" in loopback_spellings("0:0:0:0:0:0:0:1")
    assert "[::1]" in loopback_spellings("0:0:0:0:0:0:0:1")
    assert "127.0.0.2" in loopback_spellings("127.0.0.2")
    assert rebinding_protection("127.0.0.2").enable_dns_rebinding_protection
    assert rebinding_protection("0.0.0.0") is None  # off loopback the token guards it


# -- Low: a line the SDK cannot parse is answered ------------------------------------------


def test_request_id_is_recovered_from_a_line_the_sdk_refused():
    assert request_id('{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"\\ud800"}}') == (True, 7)
    assert request_id('{"id":"s","method":"x","params":' + "[" * 300 + "]" * 300 + "}") == (
        True,
        "s",
    )
    assert request_id('{"jsonrpc":"2.0","method":"notifications/x","params":"\\ud800"}') == (
        False,
        None,
    )
    assert request_id("not json") == (True, None)
    assert request_id("[" * 5000) == (True, None)
    assert request_id('{"id": true, "method": "x"}') == (True, None)
    assert request_id('{"id": "\\ud800", "method": "x"}') == (True, None)


@pytest.mark.slow
def test_stdio_answers_lines_it_cannot_parse_and_keeps_serving(tmp_path):
    """Repro: a lone surrogate or nesting of 300 got no reply, and the client hung."""
    proc = subprocess.Popen(
        [PYTHON, "-m", "cortexgraph.mcp_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(tmp_path),
        cwd=tmp_path,
    )

    def exchange(line: str) -> dict[str, Any]:
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, f"no answer to {line[:80]}"
        return json.loads(proc.stdout.readline())

    save = (
        '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"save_memory",'
        '"arguments":{"content":%s}}}'
    )
    try:
        assert exchange(json.dumps(INITIALIZE))["id"] == 1
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        surrogate = exchange(save % ("2", '"a\\ud800b"'))
        nested = exchange(save % ('"three"', "[" * 300 + "]" * 300))
        garbage = exchange("this is not json")
        not_rpc = exchange('{"id": 5, "hello": "world"}')
        alive = exchange('{"jsonrpc":"2.0","id":6,"method":"ping"}')
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
    assert (surrogate["id"], surrogate["error"]["code"]) == (2, -32700)
    assert (nested["id"], nested["error"]["code"]) == ("three", -32700)
    assert (garbage["id"], garbage["error"]["code"]) == (None, -32700)
    assert (not_rpc["id"], not_rpc["error"]["code"]) == (5, -32600)
    assert alive == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert (
        not (tmp_path / "stm" / "memories.jsonl").exists()
        or open_store(tmp_path / "stm").list() == []
    )
