"""Secrets never reach disk (issue 30, Secrets): the well-known formats are replaced by
``[redacted: <kind>]`` before a record is written, through the store, MCP, the CLI's import and
the hooks; the save's result says what was redacted; CORTEXGRAPH_REDACT_SECRETS=false keeps
them. docs/reliability.md lists each promise."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp_common import make_settings

from cortexgraph.storage import JSONLStore, StoreConfig
from cortexgraph.storage.secrets import redact_secrets

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "x7Kq2" * 8
SECRETS = {
    "aws-access-key": f"CI deploy uses key {AWS}",
    "github-token": f"token {GITHUB} for the bot",
    "gitlab-token": "glpat-AbCdEfGhIjKlMnOpQrSt12",
    "slack-token": "xoxb-123456789012-abcdefghijKL",
    "stripe-key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1\n-----END RSA PRIVATE KEY-----",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQ",
    "password": "db password=sup3rs3cret!",
    "secret": "secret: Zm9vYmFyYmF6cXV4",
    "high-entropy-secret": "the api token is 9fQx7ZkLm2Pq8RtVw3Yb",
}
ORDINARY = [
    "The password policy requires rotation every 90 days",
    "the key insight is that caching beats batching here",
    "use the token bucket algorithm for rate limiting",
    "Python lives in /usr/local/bin/python3.11 on the build box",
    "Sam prefers PostgreSQL 16 over MySQL for the billing service",
    "commit 3f2b8c1e9d4a fixed the flaky test",
]


def _secret_part(text: str) -> str:
    return {
        "aws-access-key": AWS,
        "github-token": GITHUB,
        "password": "sup3rs3cret",
        "secret": "Zm9vYmFyYmF6cXV4",
        "high-entropy-secret": "9fQx7ZkLm2Pq8RtVw3Yb",
    }.get(next(k for k, v in SECRETS.items() if v == text), text.split()[-1][-12:])


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted_and_named(kind):
    found = redact_secrets(SECRETS[kind])
    assert found.kinds == (kind,)
    assert f"[redacted: {kind}]" in found.text
    assert _secret_part(SECRETS[kind]) not in found.text
    assert redact_secrets(found.text).kinds == ()  # a redaction is not redacted again


def test_ordinary_text_is_left_alone():
    for text in ORDINARY:
        assert redact_secrets(text).text == text


def test_the_store_writes_no_secret_and_says_what_it_redacted(tmp_path):
    store = JSONLStore(tmp_path)
    m = store.save(
        f"CI deploy uses key {AWS} and token {GITHUB}",
        tags=["deploy"],
        entities=[AWS],
        context="password=sup3rs3cret",
    )
    assert (
        m.content
        == "CI deploy uses key [redacted: aws-access-key] and token [redacted: github-token]"
    )
    assert m.meta.extra["redacted"] == ["aws-access-key", "github-token", "password"]
    raw = (tmp_path / "memories.jsonl").read_bytes()
    for secret in (AWS, GITHUB, "sup3rs3cret"):
        assert secret.encode() not in raw
    # An update or an import (put) goes through the same check.
    store.update(m.id, content=f"rotated to {AWS}")
    assert AWS.encode() not in (tmp_path / "memories.jsonl").read_bytes()
    # The setting turns it off.
    kept = JSONLStore(tmp_path / "off", config=StoreConfig(redact_secrets=False)).save(AWS)
    assert kept.content == AWS


def test_mcp_save_memory_redacts_before_analysis_and_reports_it(tmp_path):
    from cortexgraph.mcp_server.app import build_server

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            done = await client.call_tool(
                "save_memory",
                {"content": f"CI deploy uses key {AWS}; the db password=sup3rs3cret for Sam"},
            )
            return json.loads(done.content[0].text)

    out = anyio.run(go)
    assert out["redacted"] == ["aws-access-key", "password"]
    assert not any("sup3rs3cret" in e or AWS in e for e in out["entities"])
    for path in (tmp_path / "stm").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert AWS.encode() not in data and b"sup3rs3cret" not in data, path


def test_import_and_the_prompt_hook_redact_too(tmp_path):
    from cortexgraph.hooks.recall import save_reminder
    from cortexgraph.hooks.runtime import HookRuntime, PluginSettings
    from cortexgraph.storage.portable import import_bundle, read_bundle

    src = tmp_path / "x.jsonl"
    rec = {"id": "11111111-2222-4333-8444-555555555555", "content": f"key {AWS}"}
    src.write_text(
        json.dumps({"cortexgraph_export": 1})
        + "\n"
        + json.dumps({"kind": "memory", "record": rec})
        + "\n"
    )
    store = JSONLStore(tmp_path / "store")
    assert import_bundle(store, read_bundle(src)).added["memories"] == 1
    assert AWS.encode() not in (tmp_path / "store" / "memories.jsonl").read_bytes()
    runtime = HookRuntime(
        storage_path=tmp_path / "store",
        store_config=StoreConfig(),
        project_dir=None,
        state_dir=tmp_path / "state",
        plugin=PluginSettings(),
    )
    reminder = save_reminder(f"remember that the deploy key is {AWS}", runtime, 4000)
    assert AWS not in reminder and "[redacted: aws-access-key]" in reminder
