"""File names for notes: safe on Linux, macOS and Windows, unique, and always inside the vault."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from cortexgraph.vault_sync.errors import UnsafePathError

MAX_NAME_BYTES = 120  # of the stem; leaves room for " 99", ".md" and conflict suffixes under 255
# Windows forbids <>:"/\|?* and control characters; Obsidian links break on #^[]|.
_FORBIDDEN = re.compile(r'[<>:"/\\|?*#^\[\]\x00-\x1f\x7f]')
_SPACES = re.compile(r"\s+")
# Device names Windows opens instead of a file, whatever the extension ("nul.txt"), trailing
# spaces ("nul .md") or superscript digit ("COM¹": NFKC folds it to "COM1").
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)
SKIPPED_DIRS = frozenset({".obsidian", ".trash", ".cortexgraph", ".git"})


def safe_filename(title: str, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A file stem (no extension) for ``title``; unicode kept, never empty, never a path."""
    name = unicodedata.normalize("NFC", title or "")
    name = _FORBIDDEN.sub(" ", name)
    name = _SPACES.sub(" ", name).strip(" .-")  # leading dot hides; trailing dot/space: Windows
    name = _truncate_utf8(name, max_bytes).rstrip(" .-")
    if not name:
        return "untitled"
    head, dot, tail = name.partition(".")
    if unicodedata.normalize("NFKC", head).rstrip(" ").lower() in _WINDOWS_DEVICES:
        name = f"{head.rstrip(' ')}_{dot}{tail}"  # "nul.txt" -> "nul_.txt"
    return name


# "c#", "f#": the one forbidden character entity names often hold, spelled out, so their notes
# do not share "c" and "f" with the letters.
_SHARP = re.compile(r"(?<=\w)#")


def entity_note_stem(entity: str) -> str:
    """The file stem of ``entity``'s note: its safe file name, unless making it safe dropped a
    character that tells it apart ("c#" would share "c" with "c"), then spelled out ("c sharp")
    or, failing that, marked with a short hash of the name ("a|b" -> "a b ~3f9c1e"). Two names
    that differ in any character other than spacing never share a note."""
    stem = safe_filename(entity)
    plain = _SPACES.sub(" ", unicodedata.normalize("NFC", entity or "")).strip(" .-")
    if stem == plain:
        return stem
    spelled = _SHARP.sub(" sharp", plain)
    if safe_filename(spelled) == spelled:
        return spelled
    digest = hashlib.sha1(plain.encode("utf-8")).hexdigest()[:6]
    return f"{safe_filename(entity, MAX_NAME_BYTES - 8)} ~{digest}"


def safe_folder(folder: str) -> Path:
    """A relative folder inside the vault; '..', absolute paths and drive letters are refused."""
    text = (folder or "").replace("\\", "/").strip()
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise UnsafePathError(f"the notes folder must be relative to the vault, got {folder!r}")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePathError(f"the notes folder must stay inside the vault, got {folder!r}")
    cleaned = [safe_filename(p) for p in parts]
    return Path(*cleaned) if cleaned else Path()


def ensure_inside(vault: Path, path: Path) -> Path:
    """``path`` resolved, if it lies inside ``vault`` (symlinks followed); else UnsafePathError."""
    root = _resolved_root(vault)
    full = (root / path).resolve()
    if full != root and root not in full.parents:
        raise UnsafePathError(f"{path} resolves outside the vault {root}")
    return full


def unique_note_path(
    directory: Path, stem: str, *, suffix: str = ".md", taken: set[str] | None = None
) -> Path:
    """``directory/stem.md``, or ``stem 2.md``, ``stem 3.md``... if taken. Case-insensitive,
    because macOS and Windows file systems are. ``taken``: the folder's lower-cased names when
    the caller keeps them (else the folder is listed)."""
    if taken is None:
        try:
            taken = {entry.lower() for entry in os.listdir(directory)}
        except FileNotFoundError:
            taken = set()
    candidate = f"{stem}{suffix}"
    n = 2
    while candidate.lower() in taken:
        candidate = f"{stem} {n}{suffix}"
        n += 1
    return directory / candidate


def relative_posix(vault: Path, path: Path) -> str:
    """Vault-relative path with forward slashes (what Obsidian and the index store)."""
    return path.resolve().relative_to(_resolved_root(vault)).as_posix()


@lru_cache(maxsize=64)
def _absolute_root(vault: Path) -> Path:
    return vault.resolve()


def _resolved_root(vault: Path) -> Path:
    """``vault.resolve()``, once per process for an absolute root. Promoting one note resolved
    its vault's root 4-8 times (the note, each link, the ledger's path): ~8% of a re-promotion
    (bench/vault_promote_bench.py). The sink and the index pin their roots when they start
    anyway, so a root moved under a running process is followed by neither. A relative root
    depends on the working directory: resolved each time."""
    return _absolute_root(vault) if vault.is_absolute() else vault.resolve()


def _truncate_utf8(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


__all__ = [
    "MAX_NAME_BYTES",
    "SKIPPED_DIRS",
    "ensure_inside",
    "relative_posix",
    "safe_filename",
    "safe_folder",
    "unique_note_path",
]
