"""Processes sharing one embedding cache (the MCP server saving each background batch while a
consolidation run, another process, reads, appends or rewrites the same files) lose no vector
and serve no torn one; a long-running process takes in what another saved."""

from __future__ import annotations

import json
import multiprocessing

import embedding_workers as w
from fakes import HashingEmbedder

from cortexgraph.storage.embedding_cache import EmbeddingCache

BASE = w.texts("base", 40)


def _in_another_process(target, *args) -> None:
    proc = multiprocessing.get_context("spawn").Process(target=target, args=args)
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 0


def _saved_base(folder) -> EmbeddingCache:
    cache = EmbeddingCache(HashingEmbedder(w.WIDTH), folder)
    cache.embed(BASE)
    cache.save()
    return cache


def _embedded_again(folder, texts: list[str]) -> list[str]:
    """What a fresh reader of the folder must embed itself: the vectors not on disk."""
    model = HashingEmbedder(w.WIDTH)
    EmbeddingCache(model, folder).embed(texts)
    return model.texts


def test_a_rewrite_keeps_what_another_process_appended_since_the_cache_was_read(tmp_path):
    run = _saved_base(tmp_path)  # a run's cache, read at its start
    server = w.texts("server", 3)
    _in_another_process(w.save_texts, str(tmp_path), server)  # appended by the server
    run.embed(w.texts("run", 30))  # more than a quarter: the run rewrites the .npz
    run.save()
    assert _embedded_again(tmp_path, [*BASE, *server, *w.texts("run", 30)]) == []


def test_a_rewrite_keeps_what_another_process_rewrote_since_the_cache_was_read(tmp_path):
    run = _saved_base(tmp_path)
    other = w.texts("other", 30)
    _in_another_process(w.save_texts, str(tmp_path), other)  # its own rewrite of the .npz
    run.embed(w.texts("run", 30))
    run.save()
    assert _embedded_again(tmp_path, [*BASE, *other, *w.texts("run", 30)]) == []


def test_a_running_process_takes_in_what_another_saved_instead_of_embedding_it(tmp_path):
    model = HashingEmbedder(w.WIDTH)
    server = EmbeddingCache(model, tmp_path)
    server.embed(BASE)
    server.save()
    run_texts = w.texts("run", 5)  # e.g. a merged memory's text, embedded by the run
    _in_another_process(w.save_texts, str(tmp_path), run_texts)
    before = len(model.texts)
    assert server.missing(run_texts) == []
    server.embed(run_texts)
    assert len(model.texts) == before  # served from the file, not embedded again
    server.embed(["the server's own new text"])
    server.save()  # not appending the run's vectors a second time
    assert _embedded_again(tmp_path, [*BASE, *run_texts, "the server's own new text"]) == []
    assert (tmp_path / ".embeddings-hashing-test.added.bin").stat().st_size == 12 + 6 * (16 + 32)


def test_concurrent_appends_rewrites_and_reads_lose_no_vector_and_tear_none(tmp_path):
    _saved_base(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    appenders = [("server", 40, 3), ("hook", 40, 3)]  # many small saves: appends
    rewriters = [("run", 6, 30)]  # a few large ones: rewrites of the .npz
    everyone = [*BASE]
    for who, rounds, per in appenders + rewriters:
        everyone += w.texts(who, rounds * per)
    start = ctx.Barrier(len(appenders) + len(rewriters) + 1)  # together, after the imports
    report = tmp_path / "reader.json"
    procs = [
        ctx.Process(target=w.save_in_rounds, args=(str(tmp_path), who, rounds, per, start))
        for who, rounds, per in appenders + rewriters
    ]
    procs.append(
        ctx.Process(target=w.read_in_rounds, args=(str(tmp_path), everyone, 60, str(report), start))
    )
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        assert p.exitcode == 0
    seen = json.loads(report.read_text())
    assert seen["bad"] == 0  # every vector a reader was served was whole and right
    assert seen["seen"][0] >= len(BASE)
    assert _embedded_again(tmp_path, everyone) == []  # every process's vectors on disk


def test_a_cache_made_before_a_fork_saves_in_the_child(tmp_path):
    """A process pool forked from a process holding the cache (filelock refuses a lock object
    made before a fork): the child's save still lands."""
    added = "a text the forked child embedded"
    _in_another_process(w.save_in_a_forked_child, str(tmp_path), BASE, added)
    assert _embedded_again(tmp_path, [*BASE, added]) == []
