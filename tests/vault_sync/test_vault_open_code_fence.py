"""A memory's text that opens a code block and never closes it (a snippet cut off, a paste
without its last line) ran on as code to the end of the note, as CommonMark and Obsidian read
it: the Context section and the Related list showed as code, and their links left Obsidian's
graph, the entity notes' backlinks and the LTM index."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import LTMIndex, ObsidianNoteSink, promote_memory
from cortexgraph.vault_sync.markdown_parse import strip_code

NOW = 1_750_000_000.0


@pytest.mark.parametrize(
    "snippet",
    [
        "Deploy billing with:\n```bash\nkubectl apply -f billing.yaml",
        "Deploy billing with:\n~~~\nkubectl apply -f billing.yaml\n```",
        "```\nkubectl apply -f billing.yaml\n```\nThen:\n  ```\n  kubectl rollout status",
    ],
)
def test_an_open_code_block_in_a_memory_ends_before_the_notes_own_sections(
    tmp_path: Path, snippet: str
) -> None:
    vault, store = tmp_path / "vault", InMemoryStore()
    manifests = store.save("Kubernetes manifests live in infra-live", now=NOW)
    deploy = store.save(snippet, entities=["Kubernetes"], context="```\nrelease checklist", now=NOW)
    store.add_relation(deploy.id, manifests.id, "related", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        promote_memory(store, sink, manifests.id, now=NOW, force=True)
        rel = promote_memory(store, sink, deploy.id, now=NOW, force=True).path

    text = (vault / rel).read_text(encoding="utf-8")
    outside_code = strip_code(text)
    assert "## Context" in outside_code and "## Related" in outside_code
    assert "kubectl apply" not in outside_code and "release checklist" not in outside_code
    record = LTMIndex.open(vault).get(rel)
    assert record is not None
    assert list(record.wikilinks) == ["Kubernetes manifests live in infra-live", "Kubernetes"]
