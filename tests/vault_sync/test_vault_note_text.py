"""note_text builds the YAML nodes itself (speed); the file must stay python-frontmatter's, byte
for byte, whatever a person put in the frontmatter we carry over."""

from __future__ import annotations

import frontmatter
import pytest

from cortexgraph.vault_sync.note_format import note_text

HOSTILE = [
    "",
    "null",
    "true",
    "no",
    "~",
    "1.0",
    "0x1F",
    "1e5",
    "2025-06-14",
    "2025-06-14T15:06:40+00:00",
    " lead",
    "trail ",
    "- dash",
    "a: b",
    "#x",
    "@at",
    "`tick",
    "multi\nline",
    "tab\there",
    "...",
    "---",
    "<<",
    "12:30",
    "+1",
    ".inf",
    'it\'s "quoted"',
    "unicode é中😀 and \u2028 and \x85",
    "long " * 40,
]
NUMBERS = [0, -1, 10**20, 0.0, 1.5, 1e17, -2.5e-8, 123456789.123, True, False, None]


def _frontmatter_text(metadata: dict[str, object], body: str) -> str:
    return frontmatter.dumps(frontmatter.Post(body, **metadata), sort_keys=False) + "\n"


@pytest.mark.parametrize("value", [*HOSTILE, *NUMBERS, float("nan"), float("inf")])
def test_a_value_is_written_as_python_frontmatter_writes_it(value: object) -> None:
    metadata = {"id": "m1", "title": value, "tags": [value, "x"], "nested": {"k": value}}
    body = "# Title\n\nbody text\n"
    assert note_text(metadata, body) == _frontmatter_text(metadata, body)


def test_shapes_python_frontmatter_would_anchor_or_cannot_build_are_written_alike() -> None:
    shared = ["a", "b"]
    for metadata in (
        {"a": shared, "b": shared},  # one list twice: YAML anchors it
        {"empty": [], "none": {}, "deep": [[1, [2]], {"x": {"y": None}}]},
        {},
        {"tuple": (1, 2), "set": {3}},
    ):
        assert note_text(metadata, "body") == _frontmatter_text(metadata, "body")
