"""The lines of one ``issues.jsonl``, each decoded only when it is read or replaced.

A file whose parse was kept (parse_cache.py) is held as its bytes and where each line starts
and ends: a run that reads the file to change a handful of issues no longer decodes and splits
all of it (2,364 lines, 2.3 MB at 10k memories: 4 ms before its first query), and writing it
back joins the unchanged stretches as they are instead of encoding every line again.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence

# What ``bytes.strip()`` removes: the parse skips a line that is only these.
WHITESPACE = b" \t\n\r\x0b\x0c"


def decode_line(data: bytes, start: int, end: int) -> str:
    """The text of the line ``data[start:end]``: every read of a kept line's bytes."""
    return data[start:end].decode("utf-8", "surrogateescape")


class IssueLines:
    """A list of line texts; those from ``data`` stay bytes until read (``spans`` holds each
    one's start and end offsets, flat). Only what a list of lines was used for: indexing,
    replacing, appending, iterating, comparing, copying, and ``to_bytes``."""

    __slots__ = ("_data", "_spans", "_text")

    def __init__(
        self, texts: Iterable[str] = (), *, data: bytes = b"", spans: Sequence[int] = ()
    ) -> None:
        self._data = data
        self._spans = spans
        # a line's text once replaced or appended; None: still the bytes at its span
        self._text: list[str | None] = [None] * (len(spans) // 2) if spans else list(texts)

    def __len__(self) -> int:
        return len(self._text)

    def __getitem__(self, index: int) -> str:
        text = self._text[index]
        if text is not None:
            return text
        i = index + len(self._text) if index < 0 else index
        return decode_line(self._data, self._spans[2 * i], self._spans[2 * i + 1])

    def __setitem__(self, index: int, text: str) -> None:
        self._text[index] = text

    def append(self, text: str) -> None:
        self._text.append(text)

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self._text)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (IssueLines, list)):
            return NotImplemented
        if len(self) != len(other):
            return False
        if isinstance(other, IssueLines) and other._data is self._data:
            # a line both still hold at the same span is the same bytes: it is not decoded
            same = other._spans is self._spans
            pairs = enumerate(zip(self._text, other._text, strict=True))
            return all(
                (a is b and (same or a is not None)) or self[i] == other[i] for i, (a, b) in pairs
            )
        return all(self[i] == other[i] for i in range(len(self)))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IssueLines({len(self)} lines)"

    def copy(self) -> IssueLines:
        out = IssueLines(data=self._data, spans=self._spans)
        out._text = list(self._text)
        return out

    def to_bytes(self) -> bytes:
        """Every line and its newline; runs of unchanged lines that lie one after another in
        ``data`` are copied as one stretch."""
        data, spans = memoryview(self._data), self._spans
        out: list[bytes | memoryview] = []
        start = end = -1  # the stretch of ``data`` not copied yet
        for i, text in enumerate(self._text):
            if text is None:
                s, e = spans[2 * i], spans[2 * i + 1]
                if s == end + 1 and end >= 0:
                    end = e
                    continue
                if end >= 0:
                    out.extend((data[start:end], b"\n"))
                start, end = s, e
                continue
            if end >= 0:
                out.extend((data[start:end], b"\n"))
                start = end = -1
            out.append(text.encode("utf-8", "surrogateescape") + b"\n")
        if end >= 0:
            out.extend((data[start:end], b"\n"))
        return b"".join(out)


def line_spans(data: bytes) -> array[int]:
    """(start, end) of each line of ``data`` that is not blank, flat: the lines a parse reads."""
    spans: array[int] = array("q")
    find, size, start = data.find, len(data), 0
    while start < size:
        end = find(b"\n", start)
        if end < 0:
            end = size
        if end > start and (data[start] not in WHITESPACE or data[start:end].strip()):
            spans.append(start)
            spans.append(end)
        start = end + 1
    return spans


__all__ = ["IssueLines", "decode_line", "line_spans"]
