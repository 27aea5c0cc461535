"""A running MCP server's search, reachable from a Claude Code hook on the same machine.

Claude Code starts the MCP server (stdio) and each hook as separate processes. The server has
the store open, the dense index warm and the embedding model loaded; a hook process has none of
that and a few hundred milliseconds to answer, so on its own it can only rank by keywords. So
the server also listens on a Unix socket named after its storage directory and answers one
request, the same search as ``search_unified`` (short-term memories and the vault's long-term
notes in one ranking; archived memories left out). A hook asks it first and falls back to its own
keyword search over the JSONL file when no server answers in time (bench/locomo_hook.py measures
both).

The socket lives in a folder only this user can enter (``<tmp>/cortexgraph-<uid>``, mode
0700, checked before every use), so another account can neither read the answers nor plant a
socket that would put text in the user's prompt.

Wire format, one JSON object per line each way:
request ``{"v": 1, "op": "search", "query": str, "top_k": int}``;
reply ``{"v": 1, "results": [{"memory": {...}, "note": {...}, "score": float}], "embeddings":
str}`` or ``{"v": 1, "error": str}``. The search is ``search_unified``'s, so a result is a
memory, a long-term note (``{"path", "title", "text"}``: a note a person wrote in the vault;
``text`` its first ``NOTE_TEXT_CHARS`` characters of words), or
both (a promoted memory and its note, whose text is what long-term memory says now). A reader
skips a result without the part it understands (an older hook: those without "memory").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.storage.errors import InvalidInputError

VERSION = 1
MAX_REQUEST_BYTES = 16 * 1024  # a query is at most a few KB (MCP caps it lower)
MAX_REPLY_BYTES = 8 * 1024 * 1024
MAX_TOP_K = 20
# A note's words in a reply are cut here: a hook shows a few hundred characters of each, and a
# vault's notes are indexed up to 1 MB (five of those were ~5 MB of JSON on every prompt).
NOTE_TEXT_CHARS = 10_000
DEFAULT_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    top_k: int


@dataclass(frozen=True, slots=True)
class RecalledNote:
    """A long-term note as a hook shows it: vault-relative path, title, its words on one line."""

    path: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Recalled:
    """One result: a memory record (``Memory.shown_json``), its note, or both."""

    memory: dict[str, Any] | None
    note: RecalledNote | None
    score: float


@dataclass(frozen=True, slots=True)
class SearchReply:
    """What the server found, best first."""

    results: list[Recalled]
    embeddings: str


def endpoint_folder() -> Path | None:
    """This user's private folder for sockets, created if needed; None if it is not private."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None  # no Unix sockets here (Windows): hooks keep their own search
    folder = Path(tempfile.gettempdir()) / f"cortexgraph-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
    return folder if private and info.st_uid == os.getuid() else None


def endpoint_path(storage_path: Path, folder: Path | None = None) -> Path | None:
    """The socket of the server that has ``storage_path`` open (short: sockets allow ~100 bytes)."""
    folder = folder or endpoint_folder()
    if folder is None:
        return None
    key = hashlib.blake2b(str(storage_path.expanduser().resolve()).encode(), digest_size=10)
    return folder / f"{key.hexdigest()}.sock"


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps({"v": VERSION, **message}, ensure_ascii=False).encode() + b"\n"


def parse_request(line: bytes) -> SearchRequest:
    """A request line as the server accepts it; InvalidInputError says what is wrong."""
    if len(line) > MAX_REQUEST_BYTES:
        raise InvalidInputError(f"request over {MAX_REQUEST_BYTES} bytes")
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise InvalidInputError(f"request is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("v") != VERSION or data.get("op") != "search":
        raise InvalidInputError(f'expected {{"v": {VERSION}, "op": "search", ...}}')
    query, top_k = data.get("query"), data.get("top_k", 5)
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query must be non-empty text")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidInputError(f"top_k must be a whole number from 1 to {MAX_TOP_K}")
    return SearchRequest(query, top_k)


def ask_running_server(
    storage_path: Path, query: str, top_k: int, timeout_s: float = DEFAULT_TIMEOUT_S
) -> SearchReply | None:
    """The running server's search results, or None when none answers well within the time."""
    path = endpoint_path(storage_path)
    if path is None or not path.exists():
        return None
    deadline = time.monotonic() + timeout_s
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            sock.connect(str(path))
            sock.sendall(encode({"op": "search", "query": query, "top_k": top_k}))
            data = _read_line(sock, deadline)
    except OSError:  # no server (a stale socket), or it was too slow: the caller's own search
        return None
    return _parse_reply(data) if data is not None else None


def _read_line(sock: socket.socket, deadline: float) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)
        if size > MAX_REPLY_BYTES:
            return None


def _parse_reply(data: bytes) -> SearchReply | None:
    try:
        reply = json.loads(data)
        results = [
            Recalled(memory, note, float(r["score"]))
            for r in reply["results"]
            if isinstance(r, dict)
            for memory, note in [(r.get("memory"), _note(r.get("note")))]
            if isinstance(memory, dict) or note is not None
        ]
        return SearchReply(results, str(reply.get("embeddings", "")))
    except (ValueError, KeyError, TypeError):
        return None  # an error reply or another version: the caller's own search


def _note(data: Any) -> RecalledNote | None:
    if not isinstance(data, dict):
        return None
    path, title, text = data.get("path"), data.get("title", ""), data.get("text")
    if not (isinstance(path, str) and isinstance(title, str) and isinstance(text, str)):
        return None
    return RecalledNote(path, title, text)


def claim(path: Path) -> bool:
    """True when ``path`` is free for a new server (a stale socket is removed); False when a
    live server already answers there (it has the same store open: the hook may ask it)."""
    if not path.exists():
        return True
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.2)
        try:
            probe.connect(str(path))
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return True
    return False


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_TOP_K",
    "NOTE_TEXT_CHARS",
    "Recalled",
    "RecalledNote",
    "SearchReply",
    "SearchRequest",
    "ask_running_server",
    "claim",
    "encode",
    "endpoint_folder",
    "endpoint_path",
    "parse_request",
]
