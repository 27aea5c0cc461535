"""One Prefect database migrated per test session; each Prefect server the tests start opens a
copy of it (imported by name, like child_env).

A Prefect server migrates its SQLite database when it starts (alembic, 114 revisions from an
empty file): about 5 of the 11 CPU-seconds a server start costs on two cores. On a copy of a
database already at the head revision the same start-up migration finds nothing to do, as on a
user's second run. The copy is made by SQLite's backup API, which reads through the
write-ahead log: a plain copy of a database a server had open can miss its last tables.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import sqlite3
from importlib import metadata, util
from pathlib import Path


def _migrations_key() -> str:
    """Prefect's version and its SQLite migrations' file names: a template made by another
    Prefect, or for other migrations, is never used."""
    spec = util.find_spec("prefect")
    assert spec is not None and spec.submodule_search_locations
    versions = Path(spec.submodule_search_locations[0], "server/database/_migrations/versions")
    names = sorted(p.name for p in (versions / "sqlite").glob("*.py"))
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:12]
    return f"{metadata.version('prefect')}-{digest}"


def _migrate(database: Path) -> None:
    """Prefect's own start-up migration (what its server runs first), in this process: the
    tests' workers have Prefect's server modules imported already, a child would import them
    again."""
    from prefect.server.database import provide_database_interface
    from prefect.server.database.dependencies import temporary_database_interface
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL, temporary_settings

    async def upgrade() -> None:
        db = provide_database_interface()
        await db.create_db()
        await (await db.engine()).dispose()  # closed: the log is folded into the file

    url = f"sqlite+aiosqlite:///{database}"
    with (
        temporary_settings(updates={PREFECT_SERVER_DATABASE_CONNECTION_URL: url}),
        temporary_database_interface(),
    ):
        asyncio.run(upgrade())


def migrated_template(folder: Path) -> Path:
    """The session's migrated database in ``folder``, made by the first process that asks
    (the others wait on a file lock)."""
    template = folder / f"prefect-template-{_migrations_key()}.db"
    with (folder / "prefect-template.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = template.with_suffix(".building")
            for leftover in folder.glob(building.name + "*"):
                leftover.unlink()
            _migrate(building)
            os.replace(building, template)
    return template


def copy_database(template: Path, target: Path) -> Path:
    """A copy of ``template`` at ``target`` (its folder made if need be)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(template) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    source.close()
    copy.close()
    return target
