"""The tracker's inter-process lock: ``flock`` on a file descriptor kept open.

filelock's ``FileLock`` costs about half a millisecond an acquire (fork tracking, path
resolution, opening the file each time), which a batch of 10,000 changes pays 10,000 times.
Here an acquire is one ``flock`` call. The descriptor is reopened in a forked child (a shared
open file description would share the lock too). filelock's Unix lock is the same ``flock`` on
the same file, so a process still using it and one using this exclude each other. Where
``fcntl`` is missing (Windows) filelock does the work.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from cortexgraph.storage.errors import StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class LockTimeoutError(StorageError):
    """Another process held the issue lock longer than the timeout."""


class IssueLock:
    """Reentrant within a thread of one process; exclusive across processes."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._pid = 0
        self._depth = 0
        self._mutex = threading.RLock()
        self._fallback = None
        if fcntl is None:  # pragma: no cover - Windows
            from filelock import FileLock

            self._fallback = FileLock(str(path), timeout=timeout)

    def acquire(self) -> None:
        self._mutex.acquire()
        if self._depth:
            self._depth += 1
            return
        try:
            self._take()
        except BaseException:
            self._mutex.release()
            raise
        self._depth = 1

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                if self._fallback is not None:  # pragma: no cover - Windows
                    self._fallback.release()
                elif self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._mutex.release()

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None

    def __del__(self) -> None:
        # Not contextlib.suppress: __del__ can run at interpreter shutdown, after module globals go.
        try:  # noqa: SIM105
            self.close()
        except OSError:
            pass

    def _take(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            from filelock import Timeout

            try:
                self._fallback.acquire()
            except Timeout as e:
                raise LockTimeoutError(f"timed out waiting for the issue lock {self.path}") from e
            return
        if self._fd is None or self._pid != os.getpid():
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise StorageError(f"cannot open the issue lock {self.path}: {e}") from e
            self._pid = os.getpid()
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"timed out waiting for the issue lock {self.path}"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)


__all__ = ["IssueLock", "LockTimeoutError"]
