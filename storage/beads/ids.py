"""Issue ids as beads makes them: ``<prefix>-<base36 hash>``, 3-8 characters.

The hash length grows with the number of issues so that the birthday-paradox chance of any
collision stays under ``MAX_COLLISION_PROBABILITY`` (beads' adaptive-length rule); a collision
that happens anyway is resolved with a nonce, then a longer hash.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Container

from cortexgraph.storage.errors import InvalidInputError

MIN_LENGTH = 3
MAX_LENGTH = 8
MAX_COLLISION_PROBABILITY = 0.25
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
PREFIX_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*$")


def collision_probability(n: int, length: int) -> float:
    """P(some two of n random ids share a value) with 36**length possible ids."""
    return 1.0 - math.exp(-(n * n) / (2.0 * 36.0**length))


def hash_length(issue_count: int) -> int:
    """The shortest length whose collision chance, counting the new issue, is acceptable."""
    n = issue_count + 1
    for length in range(MIN_LENGTH, MAX_LENGTH + 1):
        if collision_probability(n, length) <= MAX_COLLISION_PROBABILITY:
            return length
    return MAX_LENGTH


def _base36(data: bytes, length: int) -> str:
    num = int.from_bytes(data, "big")
    chars = []
    for _ in range(length):  # least significant digits: uniformly distributed
        num, rem = divmod(num, 36)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_issue_id(
    prefix: str, seed: str, existing: Container[str], issue_count: int, *, tries: int = 10
) -> str:
    """A fresh id not in ``existing``; ``seed`` is the issue's content and creation time."""

    def candidate(nonce: int, length: int) -> str:
        digest = hashlib.sha256(f"{seed}\x00{nonce}".encode()).digest()
        return f"{prefix}-{_base36(digest, length)}"

    for length in range(hash_length(issue_count), MAX_LENGTH):
        for nonce in range(tries):
            if (found := candidate(nonce, length)) not in existing:
                return found
    for nonce in itertools.count():  # 36**8 ids: ends long before the space is exhausted
        if (found := candidate(nonce, MAX_LENGTH)) not in existing:
            return found
    raise AssertionError("unreachable")


def check_prefix(prefix: str) -> str:
    if not PREFIX_RE.match(prefix or ""):
        raise InvalidInputError(
            f"issue prefix must be letters/digits/underscores/hyphens: {prefix!r}"
        )
    return prefix


__all__ = ["check_prefix", "collision_probability", "hash_length", "new_issue_id"]
