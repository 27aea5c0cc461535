"""What helped before: occurrences, interventions shown and their outcomes.

The ledger is written to a store of its own (``activation.monitor.ledger_store``:
``<storage>/monitor/ledger``), never to the user's memories. Records (all tagged
``behavior-monitor``, marked core so decay and gc would leave them alone anywhere):

    memory   bm.pattern.<pattern>                 one per pattern
    memory   bm.context.<slug>                    one per context (e.g. "project:cortexgraph")
    memory   bm.intervention.<pattern>.<id>       one per intervention text
    relation pattern -occurs_in-> context         metadata: count, last stage and signatures
    relation pattern -remedied_by-> intervention  one per time it was shown: context, outcome

The store's relation types are fixed, so both edges are ``related`` relations whose metadata
``edge`` says which they are. Each showing is its own relation, so two processes recording at
once never lose each other's counts; effectiveness = worked / shown, per context.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cortexgraph.activation.monitor.calls import (
    error_signature,
    normalize_text,
    short_hash,
    similarity,
    tokens,
)
from cortexgraph.activation.monitor.ledger_store import TAG
from cortexgraph.activation.monitor.patterns import PatternSpec
from cortexgraph.storage.errors import InvalidInputError
from cortexgraph.storage.models import Memory, MemoryMeta, Relation, new_id
from cortexgraph.storage.protocol import MemoryStore

OCCURS_IN, REMEDIED_BY = "occurs_in", "remedied_by"
WORKED, FAILED = "worked", "failed"
MAX_NOTES = 1000
MAX_SIGNATURES = 20
_SLUG = re.compile(r"[^a-z0-9_-]+")


def context_slug(context: str) -> str:
    text = _SLUG.sub("-", context.lower()).strip("-")[:40]
    return f"{text or 'ctx'}-{short_hash(context)[:6]}"


ERROR_SIMILARITY = 0.6  # token overlap of a queried error text with a recorded one


@dataclass(frozen=True, slots=True)
class InterventionStats:
    intervention_id: str
    shown: int
    worked: int
    failed: int
    pending: int

    @property
    def rate(self) -> float | None:
        decided = self.worked + self.failed
        return self.worked / decided if decided else None

    @property
    def expected(self) -> float:
        """Beta(1,1) posterior mean: untried 0.5, so an untried text is tried before a poor one."""
        return (self.worked + 1) / (self.worked + self.failed + 2)

    def to_json(self) -> dict[str, Any]:
        return {
            "intervention_id": self.intervention_id,
            "shown": self.shown,
            "worked": self.worked,
            "failed": self.failed,
            "pending": self.pending,
            "effectiveness": self.rate,
        }


class BehaviorLedger:
    """Reads and writes the monitor's learning records in a ``MemoryStore`` of their own (the
    ledger store, or an in-memory one in tests); never hand it the user's store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    # -- records -------------------------------------------------------------------------------
    def _ensure(
        self, mid: str, content: str, tags: Sequence[str], extra: dict[str, Any], now: int
    ) -> Memory:
        found = self.store.find(mid)
        if found is not None:
            return found
        meta = MemoryMeta(
            tags=(TAG, *tags), source="behavior-monitor", extra={**extra, "core": True}
        )
        return self.store.put(Memory(mid, content, meta, created_at=now, last_used=now))

    def pattern_memory(self, spec: PatternSpec, now: int) -> Memory:
        return self._ensure(
            f"bm.pattern.{spec.id}",
            f"Behaviour pattern '{spec.name}': {spec.description}",
            ["pattern", spec.id],
            {"monitor_kind": "pattern", "pattern_id": spec.id},
            now,
        )

    def context_memory(self, context: str, now: int) -> Memory:
        return self._ensure(
            f"bm.context.{context_slug(context)}",
            f"Context where assistant behaviour was monitored: {context}",
            ["context"],
            {"monitor_kind": "context", "context": context},
            now,
        )

    def intervention_memory(self, spec: PatternSpec, intervention_id: str, now: int) -> Memory:
        iv = spec.intervention(intervention_id)
        if iv is None:
            raise InvalidInputError(
                f"pattern {spec.id!r} has no intervention "
                f"{intervention_id!r}; known: "
                f"{[i.id for i in spec.interventions]}"
            )
        return self._ensure(
            f"bm.intervention.{spec.id}.{iv.id}",
            f"Intervention '{iv.id}' for '{spec.name}': {iv.next_step}",
            ["intervention", spec.id],
            {"monitor_kind": "intervention", "pattern_id": spec.id, "intervention_id": iv.id},
            now,
        )

    # -- writes --------------------------------------------------------------------------------
    def record_occurrence(
        self,
        spec: PatternSpec,
        context: str,
        signature: str,
        stage: str,
        now: float | None = None,
        error: str = "",
    ) -> Relation:
        ts = int(time.time() if now is None else now)
        pattern = self.pattern_memory(spec, ts)
        ctx = self.context_memory(context, ts)
        rid = f"bm.occ.{spec.id}.{context_slug(context)}"
        old = next((r for r in self.store.relations(pattern.id) if r.id == rid), None)
        meta: dict[str, Any] = (
            dict(old.metadata) if old else {"edge": OCCURS_IN, "context": context, "count": 0}
        )
        sigs = [s for s in meta.get("signatures", []) if s != signature][-(MAX_SIGNATURES - 1) :]
        meta.update(
            count=int(meta.get("count", 0)) + 1,
            last_at=ts,
            last_stage=stage,
            signatures=[*sigs, signature],
        )
        if error:  # normalised, so a later lookup by error text can match it loosely
            errors = [e for e in meta.get("errors", []) if e != normalize_text(error)[:200]]
            meta["errors"] = [*errors[-(MAX_SIGNATURES - 1) :], normalize_text(error)[:200]]
        rel = Relation(rid, pattern.id, ctx.id, "related", 1.0, old.created_at if old else ts, meta)
        return self.store.put_relation(rel)

    def record_shown(
        self,
        spec: PatternSpec,
        intervention_id: str,
        context: str,
        *,
        signature: str = "",
        session: str = "",
        directive_id: str | None = None,
        relation_id: str | None = None,
        now: float | None = None,
    ) -> Relation:
        ts = int(time.time() if now is None else now)
        pattern = self.pattern_memory(spec, ts)
        iv = self.intervention_memory(spec, intervention_id, ts)
        self.context_memory(context, ts)
        meta = {
            "edge": REMEDIED_BY,
            "context": context,
            "intervention_id": intervention_id,
            "signature": signature,
            "session": session,
            "directive_id": directive_id,
            "outcome": None,
            "inferred": False,
            "notes": "",
        }
        rel = Relation(relation_id or new_id(), pattern.id, iv.id, "related", 0.5, ts, meta)
        return self.store.put_relation(rel)

    def record_outcome(
        self,
        spec: PatternSpec,
        intervention_id: str,
        context: str | None,
        worked: bool,
        *,
        notes: str = "",
        inferred: bool = False,
        relation_id: str | None = None,
        now: float | None = None,
    ) -> Relation:
        """Mark a showing worked/failed. A model's report overrides an inferred outcome, never
        the other way round; with no showing on record, one is recorded with its outcome."""
        ts = int(time.time() if now is None else now)
        shown = self.showings(spec.id, intervention_id=intervention_id, context=context)
        target = next((r for r in shown if r.id == relation_id), None) if relation_id else None
        if target is None and not inferred:
            open_ = [
                r for r in shown if r.metadata.get("outcome") is None or r.metadata.get("inferred")
            ]
            target = open_[-1] if open_ else None
        if target is not None and inferred and target.metadata.get("outcome") is not None:
            return target  # the model already said; inference does not overrule it
        if target is None:
            target = self.record_shown(spec, intervention_id, context or "global", now=ts)
        meta = {
            **target.metadata,
            "outcome": WORKED if worked else FAILED,
            "inferred": inferred,
            "decided_at": ts,
        }
        if notes:
            meta["notes"] = " ".join(notes.split())[:MAX_NOTES]
        return self.store.put_relation(
            replace(target, metadata=meta, strength=1.0 if worked else 0.1)
        )

    # -- reads ---------------------------------------------------------------------------------
    def showings(
        self, pattern_id: str, *, intervention_id: str | None = None, context: str | None = None
    ) -> list[Relation]:
        pid = f"bm.pattern.{pattern_id}"
        if self.store.find(pid) is None:
            return []
        out = []
        for r in self.store.relations(pid):
            m = r.metadata
            if m.get("edge") != REMEDIED_BY or r.from_memory_id != pid:
                continue
            if intervention_id is not None and m.get("intervention_id") != intervention_id:
                continue
            if context is not None and m.get("context") != context:
                continue
            out.append(r)
        return out

    def occurrences(self, pattern_id: str) -> list[Relation]:
        pid = f"bm.pattern.{pattern_id}"
        if self.store.find(pid) is None:
            return []
        return [r for r in self.store.relations(pid) if r.metadata.get("edge") == OCCURS_IN]

    def occurrences_in(
        self, pattern_id: str, context: str | None = None, *, error: str | None = None
    ) -> list[Relation]:
        """The pattern's occurrences, in ``context`` if given; with ``error`` (an error text),
        only those that recorded the same failure: its signature, or an error whose tokens
        overlap the text's by ``ERROR_SIMILARITY``."""
        found = [
            r
            for r in self.occurrences(pattern_id)
            if context is None or r.metadata.get("context") == context
        ]
        if error is None:
            return found
        signature = f"err:{error_signature(error)}"
        wanted = tokens(normalize_text(error))

        def same_failure(meta: Mapping[str, Any]) -> bool:
            if signature in meta.get("signatures", []):
                return True
            errors = meta.get("errors", [])
            return any(similarity(tokens(e), wanted) >= ERROR_SIMILARITY for e in errors)

        return [r for r in found if same_failure(r.metadata)]

    def last_error(self, pattern_id: str, context: str | None = None) -> str:
        """The error last recorded for this pattern (in ``context`` if given), or ''."""
        occ = sorted(
            self.occurrences_in(pattern_id, context), key=lambda r: r.metadata.get("last_at") or 0
        )
        errors = occ[-1].metadata.get("errors") if occ else None
        return str(errors[-1]) if errors else ""

    def effectiveness(
        self, spec: PatternSpec, context: str | None = None
    ) -> list[InterventionStats]:
        """Per intervention of ``spec`` (declaration order), in ``context`` or everywhere."""
        shown = self.showings(spec.id, context=context)
        out = []
        for iv in spec.interventions:
            rels = [r for r in shown if r.metadata.get("intervention_id") == iv.id]
            outcomes = [r.metadata.get("outcome") for r in rels]
            out.append(
                InterventionStats(
                    iv.id,
                    len(rels),
                    outcomes.count(WORKED),
                    outcomes.count(FAILED),
                    outcomes.count(None),
                )
            )
        return out

    def best_intervention(self, spec: PatternSpec, context: str) -> tuple[str, str]:
        """(intervention id, why): by history in this context, else everywhere, else first."""
        for scope, stats in (
            ("this context", self.effectiveness(spec, context)),
            ("all contexts", self.effectiveness(spec)),
        ):
            if any(s.worked + s.failed for s in stats):
                best = max(stats, key=lambda s: s.expected)  # max keeps the first on ties
                return best.intervention_id, (
                    f"best in {scope}: {best.worked}/{best.worked + best.failed} worked"
                )
        return spec.interventions[0].id, "no history yet: the first declared intervention"


__all__ = [
    "ERROR_SIMILARITY",
    "FAILED",
    "OCCURS_IN",
    "REMEDIED_BY",
    "TAG",
    "WORKED",
    "BehaviorLedger",
    "InterventionStats",
    "context_slug",
]
