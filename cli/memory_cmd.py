"""`cortexgraph search|list|show|edit`: the short-term memories, from the terminal.

``edit`` opens ``$EDITOR`` (else ``$VISUAL``, else ``vi``) on the record as JSON and stores it
only if it still reads as a valid memory with the same id; otherwise nothing changes and the
edited text is kept in a file whose path the error names.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cortexgraph.cli.cli_common import (
    JsonOpt,
    MemoryIdArg,
    StorageOpt,
    cli_errors,
    cli_store,
    out,
    print_json,
    report_done,
)
from cortexgraph.cli.memory_ids import resolve_memory_id
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryStatus

STATUSES = [s.value for s in MemoryStatus]


def _row(memory: Memory, score: float | None = None) -> dict[str, Any]:
    data = {
        "id": memory.id,
        "content": memory.content,
        "tags": list(memory.tags),
        "status": memory.status.value,
        "use_count": memory.use_count,
        "last_used": memory.last_used,
    }
    if score is not None:
        data["score"] = round(score, 4)
    return data


def _table(title: str, rows: list[dict[str, Any]]) -> None:
    table = Table(title=Text(title), title_justify="left")
    cols = ["id", "status", "tags", "content"] + (["score"] if rows and "score" in rows[0] else [])
    for col in cols:
        if col == "id":  # whole, on one line: it is what show/edit/undo take (or 6+ of it)
            table.add_column(
                col, no_wrap=True, min_width=max((len(r["id"]) for r in rows), default=2)
            )
        else:
            table.add_column(col, overflow="fold", max_width=70 if col == "content" else None)
    for r in rows:
        # Text, not str: stored text such as "[/INST]" is printed as it is, never as markup.
        table.add_row(*(Text(str(r[c]) if c != "tags" else ", ".join(r[c])) for c in cols))
    out.print(table)


def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="only with this tag")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="how many results")] = 10,
    embeddings: Annotated[
        bool, typer.Option("--embeddings/--no-embeddings", help="semantic similarity (MiniLM)")
    ] = True,
    storage_path: StorageOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search short-term memories (BM25 + MiniLM, re-ranked by decay). A fresh process shows
    keyword results first when the meaning model is not ready within a second, labelled so,
    then the results ranked by meaning and keywords."""
    with cli_errors():
        if as_json or not embeddings:
            _, store = cli_store(storage_path, embeddings=embeddings)
            hits = store.search(query, tags=tag, top_k=limit, now=time.time())
            _save_vectors(store)
            rows = [_row(h.memory, h.score) for h in hits]
            print_json(rows) if as_json else _table(f"search: {query!r}", rows)
            return
        _search_keywords_first(query, tag, limit, storage_path)


# The first table comes this long after the command started: by meaning when the model is
# ready by then, else the keyword results (labelled), as soon as they are ready.
FIRST_ANSWER_S = 1.0


def _search_keywords_first(
    query: str, tag: list[str] | None, limit: int, storage_path: Path | None
) -> None:
    """The keyword search answers at once; the meaning model loads (and embeds the memories it
    has not seen, kept in the store's vector cache for the next process) in a thread. Its
    answer replaces the keyword one if it comes within FIRST_ANSWER_S of the start, else
    follows it."""
    import threading

    from cortexgraph.cli.cli_common import dense_index

    started = time.monotonic()
    settings, store = cli_store(storage_path)
    full: dict[str, Any] = {}

    def by_meaning() -> None:
        try:
            dense = dense_index(settings)
            if dense is None:
                full["absent"] = True  # no model installed: the keyword answer is the answer
                return
            # The keyword answer is made: from here on only this thread uses the store (the
            # main one prints those hits), so the open store takes the index; no second read.
            store.dense = dense
            full["hits"] = store.search(query, tags=tag, top_k=limit, now=time.time())
            _save_vectors(store)
        except Exception as exc:  # the keyword answer stands; say why meaning is missing
            full["error"] = str(exc)[:200]

    keyword_hits = store.search(query, tags=tag, top_k=limit, now=time.time())
    # Started after the keyword search: its imports would otherwise hold up that answer.
    worker = threading.Thread(target=by_meaning, name="cortexgraph-meaning", daemon=True)
    worker.start()
    worker.join(max(0.0, FIRST_ANSWER_S - _process_age(started)))
    if "hits" in full or "absent" in full:
        hits = full.get("hits", keyword_hits)
        _table(f"search: {query!r}", [_row(h.memory, h.score) for h in hits])
        return
    if not worker.is_alive() and "error" in full:
        _table(
            f"search: {query!r} (keyword results; meaning unavailable: {full['error']})",
            [_row(h.memory, h.score) for h in keyword_hits],
        )
        return
    _table(
        f"search: {query!r} (keyword results; the meaning model is loading)",
        [_row(h.memory, h.score) for h in keyword_hits],
    )
    with out.status("ranking by meaning (the model loads and embeds memories it has not seen)"):
        worker.join()
    if "hits" in full:
        _table(
            f"search: {query!r} (by meaning and keywords)",
            [_row(h.memory, h.score) for h in full["hits"]],
        )
    elif "error" in full:
        out.print(Text(f"meaning unavailable: {full['error']}; the keyword results stand"))


def _process_age(fallback_start: float) -> float:
    """Seconds since this process started (Linux's /proc: interpreter start and imports
    included), else since ``fallback_start`` (a ``time.monotonic()`` reading)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: ticks after boot
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic() - fallback_start


def _save_vectors(store: Any) -> None:
    """Keep the vectors this search embedded for the next process (best effort)."""
    cache = getattr(getattr(store, "dense", None), "cache", None)
    if cache is not None:
        cache.save()


def list_memories(
    tag: Annotated[list[str] | None, typer.Option("--tag", help="only with this tag")] = None,
    status: Annotated[
        str, typer.Option("--status", help=f"{' | '.join(STATUSES)} | all")
    ] = "active",
    limit: Annotated[int, typer.Option("--limit", min=1, help="how many memories at most")] = 50,
    storage_path: StorageOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories (live ones by default), most recently used first."""
    with cli_errors():
        if status != "all" and status not in STATUSES:
            raise InvalidInputError(
                f"unknown status {status!r}; choose {', '.join(STATUSES)} or all"
            )
        _, store = cli_store(storage_path)
        chosen = None if status == "all" else MemoryStatus(status)
        found = sorted(store.list(status=chosen, tags=tag), key=lambda m: (-m.last_used, m.id))
        rows = [_row(m) for m in found[:limit]]
        print_json(rows) if as_json else _table(f"{len(found)} memories ({status})", rows)


def _stored(memory_id: str, storage_path: Path | None) -> tuple[Any, Memory]:
    """The store and the memory ``memory_id`` (a full id or a unique prefix of 6+ characters)
    names in it (NotFoundError when there is none)."""
    _, store = cli_store(storage_path)
    return store, store.get(resolve_memory_id(store, memory_id))


def show(memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False) -> None:
    """One memory in full, with its relations."""
    with cli_errors():
        store, memory = _stored(memory_id, storage_path)
        rels = [r.to_json() for r in store.relations(memory_id=memory.id)]
        if as_json:
            print_json({"memory": memory.shown_json(), "relations": rels})
            return
        # Stored text is printed as text (escaped), never read as markup or a live link.
        out.print(f"[bold]{escape(memory.id)}[/] \\[{memory.status.value}]", highlight=False)
        out.print(Text(memory.content))
        for key, value in memory.shown_json().items():
            if key not in ("id", "content"):
                out.print(Text(f"  {key}: {json.dumps(value, ensure_ascii=False)}"))
        for r in rels:
            out.print(Text(f"  ↔ {r['relation_type']} {r['from_memory_id']} → {r['to_memory_id']}"))


def editor_command() -> list[str]:
    return shlex.split(os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi")


def parse_edited(text: str, original: Memory, config: Any) -> Memory:
    """The edited record, if it is a valid memory with the same id and no key the original did
    not show (``_deleted`` would be read as a deletion); InvalidInputError if not. The document
    is ``Memory.shown_json``: the neighbour's text (a ranking signal) is not in it and the
    edited memory keeps the original's."""
    from cortexgraph.storage.validation import check_memory_fields

    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"the record is not valid JSON: {str(exc)[:200]}") from exc
    if not isinstance(obj, dict):
        raise InvalidInputError("the record must be a JSON object")
    if obj.get("id") != original.id:
        raise InvalidInputError(f"the id cannot change (was {original.id!r})")
    unknown = sorted(set(obj) - set(original.shown_json()))
    if unknown:
        names = ", ".join(repr(k[:40]) for k in unknown[:5])
        raise InvalidInputError(f"unknown field(s) {names}: only the record's own fields")
    memory = Memory.from_json(obj).with_changes(neighbour_text=original.neighbour_text)
    check_memory_fields(memory, config)
    return memory


def _read_edited(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"the edited file is not UTF-8 (byte {exc.start}); nothing changed (your text is "
            f"in {path})"
        ) from exc
    except OSError as exc:
        raise InvalidInputError(
            f"cannot read the edited file {path} ({exc.strerror}); nothing changed"
        ) from exc


def _with_edit_marker(original: Memory, edited: Memory, now: float) -> Memory:
    from cortexgraph.agents.history import EDIT_KEY
    from cortexgraph.storage.models import MemoryMeta

    before, after = original.shown_json(), edited.shown_json()
    fields = [k for k in after if k != "meta" and after[k] != before.get(k)]
    old_meta, new_meta = before.get("meta") or {}, after.get("meta") or {}
    fields += [f"meta.{k}" for k in new_meta if new_meta[k] != old_meta.get(k)]
    marker = {"at": int(now), "by": "cortexgraph edit", "fields": fields}
    meta = edited.meta
    extra = {**meta.extra, EDIT_KEY: marker}
    return edited.with_changes(meta=MemoryMeta(meta.tags, meta.source, meta.context, extra))


def edit(memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False) -> None:
    """Edit a memory's record in $EDITOR; it is stored only if it is still valid and nobody
    changed it while the editor was open (else nothing is saved and your text is kept)."""
    with cli_errors():
        store, original = _stored(memory_id, storage_path)
        memory_id = original.id
        fd, name = tempfile.mkstemp(prefix=f"cortexgraph-{memory_id[:8]}-", suffix=".json")
        path = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(original.shown_json(), fh, ensure_ascii=False, indent=2)
            fh.write("\n")
        try:
            done = subprocess.run([*editor_command(), str(path)], check=False)
        except OSError as exc:
            path.unlink(missing_ok=True)  # the stored record, unedited: nothing to keep
            raise InvalidInputError(f"cannot start the editor ({exc}); set $EDITOR") from exc
        if done.returncode != 0:
            raise InvalidInputError(
                f"the editor exited with {done.returncode}; nothing "
                f"changed (your text is in {path})"
            )
        text = _read_edited(path)
        try:
            edited = parse_edited(text, original, store.config)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{exc}; nothing changed (your text is in {path})") from exc
        changed = edited.to_json() != original.to_json()
        if changed:  # the edit records its own time (agents.history reads it)
            edited = _with_edit_marker(original, edited, time.time())

        def save_if_unchanged(current: Memory) -> Memory | None:
            # Compared and written under one hold of the store's lock: a use, an archive or a
            # merge recorded while the editor was open is never overwritten.
            if current.to_json() != original.to_json():
                raise InvalidInputError(
                    f"memory {memory_id} changed while the editor was open (now "
                    f"{current.status.value}, used {current.use_count} times); nothing "
                    f"saved: run edit again (your text is in {path})"
                )
            return edited

        if changed:
            edited = store.modify(memory_id, save_if_unchanged)
        path.unlink(missing_ok=True)
        report_done(
            {"changed": changed, "memory": edited.shown_json()},
            f"{escape(memory_id)} " + ("saved" if changed else "unchanged"),
            as_json,
        )


__all__ = ["edit", "list_memories", "parse_edited", "search", "show"]
