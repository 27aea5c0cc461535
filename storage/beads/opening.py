"""Opening a beads tracker: where its repository and ``.beads/`` folder are (``open_tracker``),
and reopening one shipped to another process by path (``reopen_tracker``, what
``BeadsTracker.__reduce__`` names)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cortexgraph.storage.beads.git_repo import GitIdentity, RepoPlace, find_repo, open_repo
from cortexgraph.storage.beads.pack import PACK_THRESHOLD
from cortexgraph.storage.beads.tracker import BEADS_DIR, BeadsTracker

if TYPE_CHECKING:
    from git import Repo


def reopen_tracker(
    root: str,
    beads_dir: str,
    prefix: str,
    identity: GitIdentity,
    clock: Callable[[], float],
    pack_threshold: int | None = PACK_THRESHOLD,
) -> BeadsTracker:
    place = find_repo(Path(root), search_parents=False)
    repo = place or open_repo(Path(root), search_parents=False, init=False)
    return BeadsTracker(
        repo,
        Path(beads_dir),
        prefix=prefix,
        identity=identity,
        clock=clock,
        pack_threshold=pack_threshold,
    )


def open_tracker(
    storage_dir_or_repo: str | Path,
    prefix: str = "cg",
    *,
    search_parents: bool = True,
    init: bool = True,
    identity: GitIdentity | None = None,
    clock: Callable[[], float] = time.time,
    pack_threshold: int | None = PACK_THRESHOLD,
) -> BeadsTracker:
    """The tracker whose issues live in ``<location>/.beads/issues.jsonl``.

    With ``search_parents`` (a project directory) the repository containing ``location`` is
    used, and like bd the nearest existing ``.beads/`` between ``location`` and the work tree
    root (else the root's). Without it (the storage directory) ``location`` must be its own
    repository's root. A missing repository is created when ``init``; a location that cannot
    be used raises TrackerUnavailableError. Past ``pack_threshold`` bytes of loose objects
    written by its commits the repository is packed (storage/beads/pack.py; None: never).
    """
    location = Path(storage_dir_or_repo).expanduser().resolve()
    # The plain case is found without GitPython, which is then imported at the first commit.
    place = find_repo(location, search_parents=search_parents)
    if place is not None:
        repo: Repo | RepoPlace = place
        root = place.root
    else:
        repo = open_repo(location, search_parents=search_parents, init=init)
        root = Path(repo.working_tree_dir).resolve()  # type: ignore[arg-type]
    beads_dir = root / BEADS_DIR
    for folder in (location, *location.parents):
        if (folder / BEADS_DIR).is_dir():
            beads_dir = folder / BEADS_DIR
            break
        if folder == root:
            break
    return BeadsTracker(
        repo,
        beads_dir,
        prefix=prefix,
        identity=identity,
        clock=clock,
        pack_threshold=pack_threshold,
    )


__all__ = ["open_tracker", "reopen_tracker"]
