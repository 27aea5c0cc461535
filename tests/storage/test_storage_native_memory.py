"""storage.native_memory: freed heap goes back to the system after a one-off large job."""

from __future__ import annotations

import platform
import weakref

import pytest

from cortexgraph.storage import native_memory


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_release_collects_unreachable_cycles() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    native_memory.release()
    assert gone() is None


glibc = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)


@glibc
def test_release_trims_the_heap_on_glibc() -> None:
    blocks = [bytearray(4096) for _ in range(20_000)]  # ~80 MB of small heap blocks
    del blocks
    native_memory.release()
    assert native_memory._malloc_trim()  # glibc's malloc_trim was found and is used


@glibc
def test_the_server_tuning_applies_on_glibc() -> None:
    assert native_memory.tune_for_server() is True


def test_numpy_blas_threads_can_be_limited_and_given_back() -> None:
    """The server runs numpy's OpenBLAS on one thread (one packing buffer kept, not one per
    core); None where numpy's BLAS is not an OpenBLAS."""
    import numpy as np

    before = native_memory.limit_blas_threads(1)
    if before is None:
        config = str(np.show_config(mode="dicts")).lower()  # type: ignore[no-untyped-call]
        assert "openblas" not in config
        return
    try:
        assert native_memory.limit_blas_threads(1) == 1  # the count it set
    finally:
        native_memory.limit_blas_threads(before)
    assert native_memory.limit_blas_threads(before) == before
