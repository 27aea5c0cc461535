"""What the merged-texts tests share (tests/flows/test_flows_merged_texts.py without a server,
tests/mcp_server/test_mcp_merged_vectors.py with one): a store a run merges, and its embedding
cache as another process reads it. Imported as ``from merged_texts import ...``."""

from __future__ import annotations

from pathlib import Path

from cortexgraph.storage.embedding_files import CacheFiles
from cortexgraph.storage.embeddings import default_cache

# Three wordings of one fact (a run merges them), and three other facts.
TEXTS = [
    "The billing service stores invoices in PostgreSQL",
    "Billing service invoices are stored in PostgreSQL",
    "Invoices of the billing service live in PostgreSQL",
    "The team lunch is on Friday at noon",
    "Deploys are frozen during the last week of the quarter",
    "Ana runs the nightly database migrations with Alembic",
]
NEW = "PostgreSQL holds the invoices of the billing service"  # near the merged memory


def embed_in_cache(store_dir: Path, texts: list[str]) -> None:
    """``texts`` in the store's embedding cache, saved, as the MCP server's background embedder
    leaves its saves."""
    cache = default_cache(store_dir)
    assert cache is not None
    cache.embed(cache.missing(texts))
    cache.save()


def cached_keys(store_dir: Path) -> set[str]:
    """The text keys of the vectors in the embedding cache's files (what another process reads)."""
    [npz] = store_dir.glob(".embeddings-*.npz")
    return set(CacheFiles(npz).read())
