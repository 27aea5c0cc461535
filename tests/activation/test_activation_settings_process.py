"""The original spec's activation variables, each set in the environment of a real process.

A driver process runs ``cortexgraph analyze`` (the CLI's own app, several times in one process
so the models load once) with the variables set, and reports the answers and whether MiniLM
was loaded. The per-session window (CORTEXGRAPH_CONTEXT_WINDOW_SIZE) is checked through the MCP
server over stdio; unknown CORTEXGRAPH_* names are checked at each process edge.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from child_env import child_env, hook_process, run_module
from mcp import Client, StdioServerParameters
from mcp_common import make_settings

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PREFERENCE = "I prefer TypeScript over JavaScript for new projects"
EXPLICIT = "Remember this: the orders database runs PostgreSQL 16 on the db-2 host."
SIMILAR = "Remember this: the orders database now runs PostgreSQL 17 on the db-3 host."
RECALL = "which database did the billing team end up picking?"

DRIVER = """
import json, sys
from typer.testing import CliRunner
from cortexgraph.cli.main import app
store, msg = sys.argv[1], json.loads(sys.argv[2])
out = {}
for name, args in (("pref", ["analyze", "--json", msg["pref"]]),
                   ("explicit", ["analyze", "--json", "--store", store, msg["explicit"]]),
                   ("similar", ["analyze", "--json", "--store", store, msg["similar"]]),
                   ("recall", ["analyze", "--recall", "--json", msg["recall"]])):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    out[name] = json.loads(result.stdout)
from cortexgraph.activation import resources
out["minilm_loaded"] = resources._embedder.get("model") is not None
out["sentence_transformers_imported"] = "sentence_transformers" in sys.modules
print(json.dumps(out))
"""
MESSAGES = {"pref": PREFERENCE, "explicit": EXPLICIT, "similar": SIMILAR, "recall": RECALL}


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    defaults = {
        "CORTEXGRAPH_STORAGE_PATH": str(tmp_path / "stm"),
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
    }
    return child_env(**(defaults | extra))


def analyze_in_process(tmp_path: Path, **env: str) -> tuple[dict, str]:
    store = tmp_path / "dup-store"
    if not store.exists():
        open_store(store).save(EXPLICIT.removeprefix("Remember this: "), tags=["infra"])
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(store), json.dumps(MESSAGES)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=clean_env(tmp_path, **env),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_defaults_with_embeddings_off_never_load_minilm(tmp_path):
    out, _ = analyze_in_process(tmp_path)
    assert out["pref"]["action_recommendation"] == "SHOULD_SAVE"
    assert out["pref"]["methods"]["entities"] == "spacy+rules"  # default CORTEXGRAPH_SPACY_MODEL
    assert out["pref"]["intent_details"]["method"] == "tfidf"
    assert len(out["pref"]["suggested_tags"]) >= 2
    assert out["explicit"]["action_recommendation"] == "DUPLICATE_DETECTED"
    assert out["similar"]["action_recommendation"] == "MUST_SAVE"  # similar, below 0.85
    assert out["recall"]["should_search"] is True
    assert out["minilm_loaded"] is False and out["sentence_transformers_imported"] is False


def test_thresholds_spacy_model_tags_and_dedup_switches_apply(tmp_path):
    out, _ = analyze_in_process(
        tmp_path,
        CORTEXGRAPH_AUTO_SAVE_CONFIDENCE_THRESHOLD="0.99",
        CORTEXGRAPH_INTENT_CONFIDENCE_THRESHOLD="0.99",
        CORTEXGRAPH_SPACY_MODEL="no_such_spacy_model",
        CORTEXGRAPH_ENABLE_TAG_SUGGESTION="false",
        CORTEXGRAPH_ENABLE_DEDUP_CHECK="false",
    )
    assert out["pref"]["action_recommendation"] == "NONE"  # P(save) 0.9 < 0.99
    assert out["recall"]["should_search"] is False  # P(recall) < 0.99, no explicit phrase
    assert out["pref"]["methods"]["entities"] == "rules"
    assert out["explicit"]["action_recommendation"] == "MUST_SAVE"  # dedup check off
    assert out["explicit"]["deduplication"]["is_duplicate"] is False
    assert out["explicit"]["suggested_tags"] == [] and out["explicit"]["methods"]["tags"] == "off"


def test_tag_top_k_and_dedup_threshold_apply(tmp_path):
    out, _ = analyze_in_process(
        tmp_path,
        CORTEXGRAPH_TAG_SUGGESTION_TOP_K="1",
        CORTEXGRAPH_DEDUP_SIMILARITY_THRESHOLD="0.3",
        CORTEXGRAPH_SPACY_MODEL="no_such_spacy_model",
    )
    pref = out["pref"]
    assert len(pref["suggested_tags"]) <= max(1, len(pref["suggested_entities"]))
    assert "projects" not in pref["suggested_tags"]  # the keyword tag beyond the top 1
    assert out["similar"]["action_recommendation"] == "DUPLICATE_DETECTED"


def test_unknown_variable_is_named_with_the_closest_known_one_at_every_edge(tmp_path):
    typo = {"CORTEXGRAPH_TAG_SUGESTION_TOP_K": "1"}
    hint = (
        "CORTEXGRAPH_TAG_SUGESTION_TOP_K is ignored; did you mean CORTEXGRAPH_TAG_SUGGESTION_TOP_K?"
    )
    env = clean_env(tmp_path, **typo)
    cli = run_module("cortexgraph.cli.main", "analyze", "--json", "hello", env=env)
    assert cli.returncode == 0 and cli.stderr.count(hint) == 1, cli.stderr
    mcp = run_module("cortexgraph.mcp_server", env=env)  # EOF on stdin: it stops
    assert mcp.stderr.count(hint) == 1, mcp.stderr
    prompt = {"session_id": "s", "prompt": "what did we decide about the billing database?"}
    hook = hook_process("user-prompt-submit", prompt, env)
    assert hook.returncode == 0 and hook.stderr.count(hint) == 1, hook.stderr
    quiet = run_module(
        "cortexgraph.cli.main",
        "analyze",
        "--json",
        "hi",
        env=clean_env(tmp_path, CORTEXGRAPH_CLUSTER_THRESHOLD="0.7"),
    )
    assert "unknown setting" not in quiet.stderr  # a 1.x alias is a known name


def window_size_run(tmp_path: Path, size: str, *, process: bool = True) -> str:
    """The suggested recall query after two turns, from the MCP server over stdio with
    CORTEXGRAPH_CONTEXT_WINDOW_SIZE=size in its environment, or (``process=False``) from the
    same server built here with that setting."""
    if process:
        server: Any = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cortexgraph.mcp_server"],
            env=clean_env(
                tmp_path,
                CORTEXGRAPH_CONTEXT_WINDOW_SIZE=size,
                CORTEXGRAPH_SPACY_MODEL="no_such_spacy_model",
            ),
            cwd=str(ROOT),
        )
    else:
        settings = make_settings(
            tmp_path, context_window_size=int(size), spacy_model="no_such_spacy_model"
        )
        server = build_server(settings)

    async def go() -> str:
        with anyio.fail_after(120):
            async with Client(server) as c:
                for turn in (
                    "The billing database keeps coming up in the review.",
                    "Unrelated: lunch is at noon today.",
                ):
                    await c.call_tool("analyze_message", {"message": turn})
                r = await c.call_tool(
                    "analyze_for_recall", {"message": "what did we decide last time?"}
                )
                return json.loads(r.content[0].text)["suggested_query"]

    return anyio.run(go)


def test_context_window_size_bounds_the_turns_kept_per_session(tmp_path):
    # The default window (10 turns) for contrast, from a server built here; the variable itself
    # read where a real server process starts.
    assert "billing" in window_size_run(tmp_path, "10", process=False).split()
    assert "billing" not in window_size_run(tmp_path, "1").split()  # only the lunch turn kept
