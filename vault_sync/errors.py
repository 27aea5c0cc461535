"""Errors of the vault layer; all derive from storage's CortexGraphError so edges translate them."""

from __future__ import annotations

from cortexgraph.storage.errors import CortexGraphError, InvalidInputError, StorageError


class VaultError(CortexGraphError):
    """Something about the vault itself is wrong (missing folder, unwritable file)."""


class VaultNotFoundError(VaultError, InvalidInputError):
    """The vault directory does not exist and was not asked to be created."""


class UnsafePathError(InvalidInputError):
    """A folder or file name would have landed outside the vault."""


class VaultWriteError(VaultError, StorageError):
    """A note could not be written (permissions, disk full)."""


__all__ = ["UnsafePathError", "VaultError", "VaultNotFoundError", "VaultWriteError"]
