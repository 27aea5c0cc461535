"""Backup and restore of a whole store directory (memories, relations, issues and their git
history, the gc graveyard, caches), taken under the store's own inter-process lock so no
writer appends halfway through the copy.

A restore swaps the directory's contents under the same lock: what was there moves to a
sibling folder ``<store>.before-restore-<time>`` (nothing is deleted), and the generation
counter is bumped so every open store reloads instead of resuming at a stale offset.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

from filelock import FileLock, Timeout

from cortexgraph.storage.config import LOCK_NAME
from cortexgraph.storage.errors import InvalidInputError, StorageError

GENERATION_NAME = ".cortexgraph.generation"
_NOT_COPIED = {LOCK_NAME}
_GEN_WIDTH = 20
_STORE_FILES = {"memories.jsonl", "relations.jsonl", GENERATION_NAME}
MAX_MEMBERS = 1_000_000
_STAGING_PREFIX = ".restore-"


def _lock(directory: Path, timeout: float) -> FileLock:
    return FileLock(str(directory / LOCK_NAME), timeout=timeout)


def backup_store(directory: Path, target: Path, *, timeout: float = 30.0) -> int:
    """Write ``directory`` as the .tar.gz ``target``; returns the number of files copied."""
    directory, target = Path(directory).expanduser(), Path(target).expanduser()
    if not (directory / "memories.jsonl").exists() and not directory.is_dir():
        raise InvalidInputError(f"no store at {directory}")
    if not target.name.endswith(".tar.gz"):
        raise InvalidInputError(f"{target}: a backup is a .tar.gz file")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with _lock(directory, timeout), tarfile.open(tmp, "w:gz") as tar:
            # The folder itself first: a store with no file yet is still a backup restore reads.
            tar.add(directory, arcname="store", recursive=False)
            for path in sorted(directory.rglob("*")):
                rel = path.relative_to(directory)
                staged = any(p.startswith(_STAGING_PREFIX) for p in rel.parts)  # a restore's
                if rel.name in _NOT_COPIED or ".tmp" in rel.name or staged:
                    continue
                if path.is_symlink() or not path.is_file():  # a store holds no links
                    continue
                tar.add(path, arcname=f"store/{rel.as_posix()}", recursive=False)
                count += 1
        os.replace(tmp, target)
    except Timeout as exc:
        raise StorageError(
            f"the store {directory} stayed locked for {timeout:.0f} s; "
            "try again when the running writer is done"
        ) from exc
    except OSError as exc:
        raise StorageError(f"cannot write the backup {target}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return count


def restore_store(
    archive: Path,
    directory: Path,
    *,
    force: bool = False,
    timeout: float = 30.0,
    max_members: int = MAX_MEMBERS,
) -> tuple[int, Path | None]:
    """Replace ``directory``'s contents with the backup ``archive``. A directory that holds
    memories is replaced only with ``force``; its old contents are moved aside (returned)."""
    archive, directory = Path(archive).expanduser(), Path(directory).expanduser()
    if not archive.is_file():
        raise InvalidInputError(f"no backup file at {archive}")
    has_data = (directory / "memories.jsonl").exists() and (
        directory / "memories.jsonl"
    ).stat().st_size > 0
    if has_data and not force:
        raise InvalidInputError(
            f"{directory} already holds memories; pass --force to "
            "replace them (its files are moved aside, not deleted)"
        )
    # The first folder of the path this restore makes: removed again if the restore fails, so
    # a file that is no backup leaves no empty store behind (a mistyped path above all).
    made = next((p for p in (*reversed(directory.parents), directory) if not p.exists()), None)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return _restore_into(archive, directory, timeout=timeout, max_members=max_members)
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def _restore_into(
    archive: Path, directory: Path, *, timeout: float, max_members: int
) -> tuple[int, Path | None]:
    # Staged inside the store folder (not beside it): the archive is checked member by member
    # first, and holds only plain files and folders, so nothing can point out of the store.
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=directory))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = _checked_members(tar, archive, directory, max_members=max_members)
            tar.extractall(staging, members=members, filter="data")
        source = staging / "store"
        _refuse_links(source, archive)
        aside = None
        with _lock(directory, timeout):
            old_gen = _read_generation(directory)
            entries = [p for p in directory.iterdir() if p.name != LOCK_NAME and p != staging]
            if entries:
                aside = directory.with_name(
                    f"{directory.name}.before-restore-{time.strftime('%Y%m%d-%H%M%S')}"
                )
                aside.mkdir()
                for p in entries:
                    os.replace(p, aside / p.name)
            count = 0
            for p in source.iterdir() if source.is_dir() else ():
                os.replace(p, directory / p.name)
                count += sum(1 for _ in (directory / p.name).rglob("*")) if p.is_dir() else 1
            gen = max(old_gen, _read_generation(directory)) + 1
            (directory / GENERATION_NAME).write_text(str(gen).rjust(_GEN_WIDTH))
    except (tarfile.TarError, OSError) as exc:
        raise StorageError(f"cannot restore {archive} into {directory}: {exc}") from exc
    except Timeout as exc:
        raise StorageError(f"the store {directory} stayed locked for {timeout:.0f} s") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return count, aside


def _checked_members(
    tar: tarfile.TarFile, archive: Path, directory: Path, *, max_members: int
) -> list[tarfile.TarInfo]:
    """The ``store/`` members, if every one is a plain file or folder with a safe name, the
    store's own files are files, and all of them fit on the disk; else InvalidInputError.
    Only the headers are read (nothing is unpacked)."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for n, m in enumerate(tar, start=1):
        if n > max_members:
            raise InvalidInputError(f"{archive} has more than {max_members:,} members")
        if not (m.name == "store" or m.name.startswith("store/")):
            continue
        parts = m.name.split("/")
        if m.issym() or m.islnk():
            raise InvalidInputError(
                f"{archive} is refused: {m.name} is a link (a store holds no links)"
            )
        if not (m.isfile() or m.isdir()):
            raise InvalidInputError(f"{archive} is refused: {m.name} is not a file or a folder")
        if any(p in ("..", "") for p in parts[1:]) or m.name.startswith("/"):
            raise InvalidInputError(f"{archive} is refused: unsafe member name {m.name!r}")
        if m.isdir() and parts[-1] in _STORE_FILES:
            raise InvalidInputError(f"{archive} is refused: {m.name} is a folder, not a file")
        total += m.size
        members.append(m)
    if not members:
        raise InvalidInputError(f"{archive} is not a cortexgraph backup")
    free = shutil.disk_usage(directory).free
    if total > free:
        raise InvalidInputError(
            f"{archive} unpacks to {total:,} bytes; {directory} has {free:,} bytes free"
        )
    return members


def _refuse_links(source: Path, archive: Path) -> None:
    """Belt and braces after unpacking: no link of any kind under ``source``."""
    for root, dirs, files in os.walk(source):
        for name in dirs + files:
            path = Path(root, name)
            st = path.lstat()
            if path.is_symlink() or (not path.is_dir() and st.st_nlink > 1):
                raise InvalidInputError(f"{archive} is refused: {name} is a link")


def _read_generation(directory: Path) -> int:
    try:
        return int((directory / GENERATION_NAME).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


__all__ = ["backup_store", "restore_store"]
