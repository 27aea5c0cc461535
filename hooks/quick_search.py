"""A read-only keyword search straight over ``memories.jsonl``, for hooks that run per prompt.

Opening a ``JSONLStore`` validates and indexes every record (about 0.4 s for 10k memories), too
slow for a hook that runs before every prompt. This reader parses each line once (orjson when
available), keeps the last version of every id (updates append, tombstones delete, as the store
does), and tokenises only the records whose text can contain a query term, using the store's own
tokenizer. Ranking is BM25 (k1 1.2, b 0.75) re-ranked by decay like ``store.search``; it differs
from it in that avgdl is estimated on a sample, the context field and entity boost are not used
and no review items are blended in. It never writes and never takes the store's lock: a line
being appended at that moment is simply not seen yet.

What it finds is what recall shows (``RECALLED``): active memories and promoted ones, whose
notes are long-term memory (promotion needs much use: they are the ones most relied on).
Archived memories (merged away, or faded and archived by gc) stay out.
"""

from __future__ import annotations

import gc
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortexgraph.storage.config import LTM_WEIGHT, StoreConfig
from cortexgraph.storage.decay import DAY, decay_score
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.storage.models import Memory, MemoryStatus
from cortexgraph.storage.text_index import tokenize

_loads: Callable[[bytes], Any]
try:  # a prefect dependency; ~5x faster than json for this
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised only without orjson
    _loads = json.loads


def _drop_monitor_records(records: dict[str, dict[str, Any]], raw: dict[str, bytes]) -> list[str]:
    """Remove the monitor's ``bm.*`` records; the id test is all the common case pays."""
    candidates = [rid for rid in records if rid.startswith("bm.")]
    if not candidates:
        return []
    from cortexgraph.activation.monitor.ledger_store import is_monitor_record

    dropped = [rid for rid in candidates if is_monitor_record(records[rid])]
    for rid in dropped:
        records.pop(rid)
        raw.pop(rid, None)
    return dropped


RECALLED = frozenset({MemoryStatus.ACTIVE.value, MemoryStatus.PROMOTED.value})
K1, B = 1.2, 0.75
AVGDL_SAMPLE = 64  # tokenising is the costly part; 64 documents give avgdl within a few %


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float  # relevance (best hit = 1) re-ranked by decay
    relevance: float
    decay: float


class RawStoreRecords:
    """The live records of one storage directory, read once. Records stay raw dicts."""

    def __init__(
        self,
        records: dict[str, dict[str, Any]],
        config: StoreConfig,
        raw: dict[str, bytes] | None = None,
    ) -> None:
        self.records = records
        self.config = config
        # Lower-cased JSON line of each record: a cheap first filter for ASCII query terms.
        self.raw = raw or {}
        # Behaviour-monitor records left in a store from before the monitor had its own ledger:
        # never shown; SessionStart moves them out (activation.monitor.ledger_store).
        self.monitor_ids: list[str] = []

    @classmethod
    def read(cls, path: Path, config: StoreConfig | None = None) -> RawStoreRecords:
        """Read ``path``/memories.jsonl; a missing file is an empty store, bad lines are skipped."""
        config = config or StoreConfig()
        file = path / config.memories_filename
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            return cls({}, config)
        records: dict[str, dict[str, Any]] = {}
        raw: dict[str, bytes] = {}
        # Thousands of fresh dicts trigger the cyclic GC over and over: half the read time.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            cls._parse(data, records, raw)
        finally:
            if gc_was_on:
                gc.enable()
        records_of_store = cls(records, config, raw)
        records_of_store.monitor_ids = _drop_monitor_records(records, raw)
        return records_of_store

    @staticmethod
    def _parse(data: bytes, records: dict[str, dict[str, Any]], raw: dict[str, bytes]) -> None:
        for line, low in zip(data.split(b"\n"), data.lower().split(b"\n"), strict=True):
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError:
                continue  # a torn last line or a line the store will quarantine
            if not isinstance(obj, dict):
                continue
            rid = obj.get("id")
            if not isinstance(rid, str):
                continue
            records.pop(rid, None)  # (re-)insert: dict order = order of last write
            raw.pop(rid, None)
            if not obj.get("_deleted"):
                records[rid] = obj
                raw[rid] = low

    def __len__(self) -> int:
        return len(self.records)

    def decay(self, record: dict[str, Any], now: float) -> float:
        try:
            return decay_score(
                int(record.get("use_count") or 0),
                float(record.get("last_used") or record.get("created_at") or 0),
                float(record.get("strength", 1.0)),
                now,
                self.config.decay,
            )
        except (TypeError, ValueError):
            return 0.0

    def memory(self, record: dict[str, Any]) -> Memory | None:
        try:
            return Memory.from_json(record)
        except (CortexGraphError, ValueError, TypeError, KeyError):
            return None

    def search(
        self, query: str, *, top_k: int = 5, now: float, min_relevance: float = 0.0
    ) -> list[Hit]:
        """Active and promoted memories sharing a term with ``query``, best first. A promoted
        memory ranks as an active one does, as search_unified ranks it: decay moves a score by
        at most ``decay_rerank_weight`` (15%), so a faded one is never buried."""
        q_terms = Counter(tokenize(query))
        if not q_terms or not self.records:
            return []
        probes = [_probe(t) for t in q_terms]
        # ASCII probes can be looked for in the raw line (JSON escapes only non-ASCII text).
        ascii_probes = [p.encode() for p in probes if p.isascii()]
        exact = len(ascii_probes) == len(probes) and len(self.raw) == len(self.records)
        tf_by_doc: dict[str, Counter[str]] = {}
        len_by_doc: dict[str, int] = {}
        for rid, rec in self.records.items():
            if exact:
                line = self.raw[rid]
                if not any(p in line for p in ascii_probes):
                    continue
            elif not any(p in _haystack(rec) for p in probes):
                continue
            terms = Counter(tokenize(_searchable(rec)))
            if terms.keys() & q_terms.keys():
                tf_by_doc[rid] = terms
                len_by_doc[rid] = sum(terms.values())
        if not tf_by_doc:
            return []
        n = len(self.records)
        avgdl = self._avgdl(len_by_doc)
        df = {t: sum(1 for tf in tf_by_doc.values() if t in tf) for t in q_terms}
        bm25: dict[str, float] = {}
        for rid, tf in tf_by_doc.items():
            if _status(self.records[rid]) not in RECALLED:
                continue
            score = 0.0
            norm = K1 * (1 - B + B * len_by_doc[rid] / avgdl)
            for term, qtf in q_terms.items():
                f = tf.get(term, 0)
                if f:
                    idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    score += qtf * idf * f * (K1 + 1) / (f + norm)
            bm25[rid] = score
        best = max(bm25.values(), default=0.0)
        if best <= 0:
            return []
        w = self.config.decay_rerank_weight
        ranked: list[tuple[float, float, float, str]] = []
        for rid, s in bm25.items():
            rel = s / best
            if rel < min_relevance:
                continue
            d = self.decay(self.records[rid], now)
            ranked.append((rel * (1.0 - w + w * min(d, 1.0)), rel, d, rid))
        ranked.sort(key=lambda x: (-x[0], x[3]))
        hits: list[Hit] = []
        for score, rel, d, rid in ranked:
            m = self.memory(self.records[rid])
            if m is not None:
                hits.append(Hit(m, score, rel, d))
            if len(hits) >= top_k:
                break
        return hits

    def _avgdl(self, known: dict[str, int]) -> float:
        """Mean document length over a fixed stride sample (exact for small stores)."""
        ids = list(self.records)
        step = max(1, len(ids) // AVGDL_SAMPLE)
        lengths = [
            known[i] if i in known else len(tokenize(_searchable(self.records[i])))
            for i in ids[::step]
        ]
        return (sum(lengths) / len(lengths)) if lengths and sum(lengths) else 1.0

    def strongest(
        self,
        now: float,
        limit: int,
        *,
        tags: Iterable[str] = (),
        max_age_days: float | None = None,
        ltm_weight: float = LTM_WEIGHT,
    ) -> list[Hit]:
        """Active and promoted memories by decay score (optionally only those with one of
        ``tags``). Here decay is the whole score, so a promoted memory counts at least
        ``ltm_weight``: what search_unified gives a long-term note that fully matches."""
        want = {t.lower() for t in tags}
        scored: list[tuple[float, str]] = []
        for rid, rec in self.records.items():
            status = _status(rec)
            if status not in RECALLED:
                continue
            if want and not want & {t.lower() for t in _tags(rec)}:
                continue
            if max_age_days is not None:
                created = rec.get("created_at") or 0
                if isinstance(created, (int, float)) and now - created > max_age_days * DAY:
                    continue
            strength = self.decay(rec, now)
            if status == MemoryStatus.PROMOTED:
                strength = max(strength, ltm_weight)
            scored.append((strength, rid))
        scored.sort(key=lambda x: (-x[0], x[1]))
        out: list[Hit] = []
        for d, rid in scored:
            m = self.memory(self.records[rid])
            if m is not None:
                out.append(Hit(m, d, 1.0, d))
            if len(out) >= limit:
                break
        return out


def _status(rec: dict[str, Any]) -> str:
    return rec.get("status") or MemoryStatus.ACTIVE.value


def _tags(rec: dict[str, Any]) -> list[str]:
    meta = rec.get("meta")
    if isinstance(meta, str):  # 1.x rows may keep meta as a JSON string
        try:
            meta = json.loads(meta)
        except ValueError:
            return []
    tags = meta.get("tags") if isinstance(meta, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _entities(rec: dict[str, Any]) -> list[str]:
    ents = rec.get("entities")
    return [e for e in ents if isinstance(e, str)] if isinstance(ents, list) else []


def _searchable(rec: dict[str, Any]) -> str:
    """Same text as storage.indexes.searchable_text: content, then tags and entities."""
    content = rec.get("content") if isinstance(rec.get("content"), str) else ""
    extras = " ".join(_tags(rec)) + " " + " ".join(_entities(rec))
    extras = extras.replace("/", " ").replace("_", " ").replace("-", " ")
    return f"{content}\n{extras}"


def _haystack(rec: dict[str, Any]) -> str:
    content = rec.get("content")
    text = content if isinstance(content, str) else ""
    return (text + " " + " ".join(_tags(rec)) + " " + " ".join(_entities(rec))).lower()


def _probe(term: str) -> str:
    """A substring every word with this stem contains: Snowball turns a final 'y' into 'i'."""
    return term[:-1] if len(term) > 2 and term.endswith("i") else term


__all__ = ["RECALLED", "Hit", "RawStoreRecords"]
