"""Committing one file through GitPython, leaving the rest of a user's repository alone.

A commit of ours is built from HEAD's tree with only our file's blob replaced, so staged or
unstaged changes the user has elsewhere are never swept in (what ``git commit -- <file>``
does). Within our file too, only our change is committed: given ``rebase``, the committed blob
is HEAD's version of the file with our change made to it, so a person's uncommitted edit of
the file stays uncommitted (and, if it was staged, staged). Objects are written with GitPython's
pure-Python object database, so a change starts no process (GitPython runs ``git version`` at
import, ``git init`` for a new repository, and ``git repack`` once the loose objects our commits
wrote pass a threshold: pack.py). The index entry of our file is then updated so
``git status`` shows only the person's own edits and a later ``git commit`` by them cannot
revert our change. The author is set explicitly: a fresh machine has no git identity.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortexgraph.storage.beads.errors import CommitError, TrackerUnavailableError
from cortexgraph.storage.beads.pack import (
    PACK_THRESHOLD,
    PackReport,
    note_written,
    pack_now,
    refresh,
)
from cortexgraph.storage.beads.parse_cache import bytes_key

if TYPE_CHECKING:
    from git import Repo

log = logging.getLogger(__name__)

_TREE_MODE = b"40000"
_BLOB_MODE = b"100644"


@dataclass(frozen=True, slots=True)
class GitIdentity:
    name: str = "cortexgraph"
    email: str = "cortexgraph@localhost"


def _import_git() -> Any:
    # GitPython refuses to import when no git executable is found; quiet that (we only use its
    # pure-Python parts) and report any failure as an unusable tracker, not a crash at import.
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    try:
        import git
        from gitdb import GitDB  # noqa: F401  (checked here, used in open_repo)
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise TrackerUnavailableError(f"GitPython is not usable here: {e}") from e
    return git


# Any of these makes GitPython look for the repository elsewhere: it decides (open_repo).
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
_BARE = re.compile(r"^\s*bare\s*=\s*(true|yes|on|1)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class RepoPlace:
    """A repository's work tree and ``.git`` directory, found without importing GitPython."""

    root: Path
    git_dir: Path


def find_repo(location: Path, *, search_parents: bool) -> RepoPlace | None:
    """The plain case of ``open_repo``, without GitPython (0.05 s to import): ``location``
    (or, with ``search_parents``, the nearest folder above it) holds a ``.git`` directory
    that is a non-bare repository of its own. None: let ``open_repo`` decide (no repository
    yet, a ``.git`` file of a worktree or submodule, a bare repository, a ``core.worktree``
    or ``core.bare`` setting, or GIT_DIR and its kin in the environment)."""
    if any(os.environ.get(name) for name in _GIT_ENV):
        return None
    for folder in (location, *location.parents) if search_parents else (location,):
        dot = folder / ".git"
        if _is_git_dir(dot):
            return RepoPlace(folder, dot) if _plain_config(dot) else None
        if dot.exists() or os.path.lexists(dot) or _is_git_dir(folder):
            return None
    return None


def _is_git_dir(path: Path) -> bool:
    # what GitPython's is_git_dir checks (objects and refs folders, a HEAD)
    return (path / "objects").is_dir() and (path / "refs").is_dir() and (path / "HEAD").exists()


def _plain_config(git_dir: Path) -> bool:
    """No setting that moves the work tree or makes the repository bare."""
    try:
        text = (git_dir / "config").read_text(encoding="utf-8", errors="replace").lower()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return "worktree" not in text and not _BARE.search(text)


def open_repo(location: Path, *, search_parents: bool, init: bool = True) -> Repo:
    """The repository at (or, with ``search_parents``, above) ``location``; created if asked."""
    git = _import_git()
    from gitdb import GitDB

    if not location.exists():
        if not init:
            raise TrackerUnavailableError(f"{location} does not exist")
        location.mkdir(parents=True, exist_ok=True)
    try:
        repo: Repo = git.Repo(location, search_parent_directories=search_parents, odbt=GitDB)
        if (
            not search_parents
            and repo.working_tree_dir is not None
            and Path(repo.working_tree_dir).resolve() != location.resolve()
        ):
            raise git.InvalidGitRepositoryError(location)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        if not init:
            raise TrackerUnavailableError(f"{location} is not inside a git repository") from None
        repo = _init_repo(git, location)
    except git.GitError as e:
        raise TrackerUnavailableError(f"cannot open the git repository at {location}: {e}") from e
    if repo.bare or repo.working_tree_dir is None:
        raise TrackerUnavailableError(
            f"{repo.git_dir} is a bare repository; issues need a work tree"
        )
    return repo


def _init_repo(git: Any, location: Path) -> Repo:
    try:
        repo: Repo = git.Repo.init(location, odbt=__import__("gitdb").GitDB)
    except (git.GitError, OSError) as e:
        raise TrackerUnavailableError(f"cannot create a git repository at {location}: {e}") from e
    log.info("created git repository %s for beads issues", location)
    return repo


def _read_tree(repo: Repo, binsha: bytes | None) -> list[tuple[bytes, bytes, bytes]]:
    """(mode, name, sha) entries of a tree, raw bytes so odd names round-trip exactly."""
    if binsha is None:
        return []
    data = repo.odb.stream(binsha).read()
    entries, i = [], 0
    while i < len(data):
        space = data.index(b" ", i)
        nul = data.index(b"\0", space)
        entries.append((data[i:space], data[space + 1 : nul], data[nul + 1 : nul + 21]))
        i = nul + 21
    return entries


def _store(repo: Repo, kind: bytes, data: bytes) -> bytes:
    from gitdb.base import IStream

    binsha: bytes = repo.odb.store(IStream(kind, len(data), BytesIO(data))).binsha
    return binsha


def _write_tree(repo: Repo, entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    # git orders tree entries by name, comparing a directory's name as if it ended with "/"
    entries = sorted(entries, key=lambda e: e[1] + (b"/" if e[0] == _TREE_MODE else b""))
    return _store(repo, b"tree", b"".join(m + b" " + n + b"\0" + s for m, n, s in entries))


def _replace_path(
    repo: Repo, tree: bytes | None, parts: list[bytes], blob: bytes, made: list[bytes]
) -> bytes:
    """A new tree equal to ``tree`` except that ``parts`` points at ``blob``; the trees it
    stores are added to ``made``."""
    entries = _read_tree(repo, tree)
    name, rest = parts[0], parts[1:]
    current = next((e for e in entries if e[1] == name), None)
    entries = [e for e in entries if e[1] != name]
    if rest:
        sub = current[2] if current is not None and current[0] == _TREE_MODE else None
        entries.append((_TREE_MODE, name, _replace_path(repo, sub, rest, blob, made)))
    else:
        mode = current[0] if current is not None and current[0] != _TREE_MODE else _BLOB_MODE
        entries.append((mode, name, blob))
    made.append(_write_tree(repo, entries))
    return made[-1]


class GitFileCommitter:
    """Commits single files of one repository; callers hold the tracker's lock.

    Given a ``RepoPlace`` the repository is opened (GitPython imported) on first use: a
    process that only reads issues never pays for it. Past ``pack_threshold`` bytes of loose
    objects written by commits, the repository is packed (pack.py; None: never)."""

    def __init__(
        self,
        repo: Repo | RepoPlace,
        identity: GitIdentity | None = None,
        *,
        pack_threshold: int | None = PACK_THRESHOLD,
    ) -> None:
        self.identity = identity or GitIdentity()
        self.pack_threshold = pack_threshold
        self._repo: Repo | None
        if isinstance(repo, RepoPlace):
            self._repo, self.root, self._git_dir = None, repo.root.resolve(), repo.git_dir
        else:
            self._repo, self._git_dir = repo, Path(repo.git_dir)
            self.root = Path(repo.working_tree_dir).resolve()  # type: ignore[arg-type]
        # The blob this committer stored last and its bytes: the next commit's HEAD holds it
        # unless someone else committed since, and then needs no inflating (15 MB at 100k).
        self._last_blob: tuple[bytes, bytes] | None = None

    @property
    def repo(self) -> Repo:
        """The repository, opened now if it was not yet."""
        if self._repo is None:
            repo = open_repo(self.root, search_parents=False, init=False)
            if Path(repo.git_dir).resolve() != self._git_dir.resolve():
                raise TrackerUnavailableError(
                    f"{self.root} now opens {repo.git_dir}, not {self._git_dir}"
                )
            self._repo = repo
        return self._repo

    @property
    def lock_path(self) -> Path:
        return self._git_dir / "cortexgraph-beads.lock"

    @property
    def loose_counter(self) -> Path:
        """Bytes of loose objects our commits wrote since the last pack (pack.py)."""
        return self.lock_path.with_suffix(".loose")

    def pack(self) -> PackReport:
        """Pack the repository now; the caller holds the tracker's lock. PackError if git
        fails, TrackerUnavailableError if the repository cannot be opened."""
        return pack_now(self.repo, self.loose_counter)

    def commit_file(
        self,
        path: Path,
        message: str,
        rebase: Callable[[bytes], bytes] | None = None,
        *,
        known: Sequence[tuple[bytes, bytes | None]] = (),
    ) -> str | None:
        """Commit the file; the new commit's sha, or None if nothing changed.

        Without ``rebase`` the file's current bytes are committed. With it, ``rebase(HEAD's
        bytes of the file)`` is: our change alone, whatever else the work tree holds.
        ``known``: versions of the file the caller holds (read or written), one of which is
        likely HEAD's, each with its blob sha if the caller hashed it: matched by blob sha,
        it is not inflated from the object store.
        """
        git = _import_git()
        from git.objects.tree import Tree
        from gitdb.exc import ODBError

        rel = path.resolve().relative_to(self.root)
        if self._repo is not None:  # another process may have packed since we last looked
            refresh(self._repo)
        try:
            self.repo  # noqa: B018  (opened here when it was not yet)
        except TrackerUnavailableError as e:
            raise CommitError(f"wrote {rel} but could not commit it: {e}") from e
        made: list[bytes] = []
        try:
            work = path.read_bytes()
            try:
                head = self.repo.head.commit
            except ValueError:  # no commits yet
                head = None
            parts = [os.fsencode(p) for p in rel.parts]
            old = _blob_at(self.repo, head.tree.binsha if head else None, parts)
            if rebase is None:
                content = work
            else:
                content = rebase(self._blob_bytes(old, known) if old is not None else b"")
            blob = _store(self.repo, b"blob", content)
            self._last_blob = (blob, content)
            made.append(blob)
            tree_sha = _replace_path(
                self.repo, head.tree.binsha if head else None, parts, blob, made
            )
            if head is not None and tree_sha == head.tree.binsha:
                return None
            actor = git.Actor(self.identity.name, self.identity.email)
            commit = git.Commit.create_from_tree(
                self.repo,
                Tree(self.repo, tree_sha),
                message,
                parent_commits=[head] if head is not None else [],
                head=True,
                author=actor,
                committer=actor,
            )
        except (git.GitError, ODBError, OSError, ValueError) as e:
            # ODBError: an object HEAD needs is gone (a person's `git gc --prune=now` meanwhile,
            # a damaged repository): the ids are kept as pending, the next commit carries them.
            raise CommitError(f"wrote {rel} but could not commit it: {e}") from e
        self._update_index(rel, old, blob, content == work, rebase)
        note_written(self.repo, self.loose_counter, [*made, commit.binsha], self.pack_threshold)
        return str(commit.hexsha)

    def _blob_bytes(self, binsha: bytes, known: Sequence[tuple[bytes, bytes | None]] = ()) -> bytes:
        if self._last_blob is not None and self._last_blob[0] == binsha:
            return self._last_blob[1]
        if known:  # a process's first commit: HEAD is most often the file as it read it
            size = self.repo.odb.info(binsha).size  # the object's header only
            for candidate, key in known:  # a sha1 of 15 MB: 0.011 s, its inflating 0.045
                if len(candidate) == size and (key or bytes_key(candidate)) == binsha:
                    return candidate
        data: bytes = self.repo.odb.stream(binsha).read()
        return data

    def _update_index(
        self,
        rel: Path,
        old: bytes | None,
        blob: bytes,
        matches_work: bool,
        rebase: Callable[[bytes], bytes] | None,
    ) -> None:
        """Our file's index entry after our commit: our blob, or, if the person had staged an
        edit of the file, their staged version with our change made to it too."""
        git = _import_git()
        from git.index.fun import stat_mode_to_index_mode
        from git.index.typ import BaseIndexEntry, IndexEntry
        from git.objects.blob import Blob

        name = rel.as_posix()
        try:
            index = self.repo.index
            if any((name, stage) in index.entries for stage in (1, 2, 3)):
                log.warning("committed %s; left its index entry alone (a merge is under way)", rel)
                return
            entry = index.entries.get((name, 0))
            mode = entry.mode if entry is not None else int(_BLOB_MODE, 8)
            if entry is not None and entry.binsha != old and rebase is not None:
                staged = rebase(self.repo.odb.stream(entry.binsha).read())
                matches_work = staged == Path(self.root, rel).read_bytes()
                blob = _store(self.repo, b"blob", staged)
            if matches_work:
                # What `index.add` records (the file's mode, no stat data, so `git status`
                # hashes the file), from the blob just stored: add would read, hash and
                # deflate the file again (0.1 s a commit at 100k memories).
                st = os.stat(Path(self.root, rel))
                base = BaseIndexEntry((stat_mode_to_index_mode(st.st_mode), blob, 0, name))
                index.entries[(name, 0)] = IndexEntry.from_base(base)
            else:
                index.entries[(name, 0)] = IndexEntry.from_blob(Blob(self.repo, blob, mode, name))
            # Without the cached trees read in (git's TREE extension), as `index.add` writes
            # it: they may still name the old `.beads` tree.
            index.write(ignore_extension_data=True)
        except (git.GitError, OSError, ValueError, AssertionError) as e:
            # The commit stands; only `git status` will show the file as changed in the index.
            log.warning("committed %s but could not update the git index: %s", rel, e)


def _blob_at(repo: Repo, tree: bytes | None, parts: list[bytes]) -> bytes | None:
    """The sha of the blob at ``parts`` under ``tree``; None if there is none."""
    for i, name in enumerate(parts):
        entry = next((e for e in _read_tree(repo, tree) if e[1] == name), None)
        if entry is None:
            return None
        is_tree = entry[0] == _TREE_MODE
        if is_tree != (i < len(parts) - 1):
            return None
        tree = entry[2]
    return tree


__all__ = ["GitFileCommitter", "GitIdentity", "RepoPlace", "find_repo", "open_repo"]
