"""Stop: when the user stated decisions or preferences this session that were not saved, ask
Claude (once) to save them.

Never loops: nothing happens when ``stop_hook_active`` is set (Claude is already continuing
because of a stop hook), and a statement that was nudged once is remembered per session and
never nudged again. "Not saved" means no save_memory call after it in the transcript and no
memory in the store that already says it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from cortexgraph.hooks.context_block import clean, clip
from cortexgraph.hooks.contract import HookInput, block_stop, run_hook
from cortexgraph.hooks.phrases import phrase_detector
from cortexgraph.hooks.quick_search import RawStoreRecords
from cortexgraph.hooks.runtime import HookRuntime, fingerprint, load_runtime
from cortexgraph.hooks.transcript import Turn, read_turns
from cortexgraph.storage.secrets import redact_secrets
from cortexgraph.storage.text_index import tokenize

EVENT = "Stop"
RECENT_USER_TURNS = 20
MAX_NUDGE_ITEMS = 3
QUOTE_CHARS = 160
ALREADY_SAVED_OVERLAP = 0.6  # share of a statement's terms a stored memory must contain

_F = re.IGNORECASE
DECISION_PATTERNS = tuple(
    re.compile(p, _F)
    for p in (
        r"\b(?:we|i)(?:'ve|\s+have)?\s+(?:decided|agreed|settled\s+on|chosen|chose|picked)\b",
        r"\b(?:we|i)(?:'ll|\s+will)\s+(?:go|stick)\s+with\b",
        r"\blet'?s\s+(?:go\s+with|stick\s+with|use|standardi[sz]e\s+on)\b",
        r"\bthe\s+decision\s+is\b",
        r"\bi\s+(?:prefer|always\s+want|never\s+want|don'?t\s+like|hate|like\s+to)\b",
        r"\bmy\s+preference\s+is\b",
        r"\bfrom\s+now\s+on\b",
        r"\bgoing\s+forward\b",
        r"\b(?:always|never)\s+(?:use|do|run|commit|push|write)\b",
    )
)


@dataclass(frozen=True, slots=True)
class Unsaved:
    text: str
    why: str  # "asked to remember" | "decision or preference"


def is_save_tool(name: str) -> bool:
    return name.endswith("save_memory") or name.endswith("consolidate_memories")


def unsaved_statements(turns: list[Turn], detector: Any = None) -> list[Unsaved]:
    """User statements worth saving with no save_memory call after them."""
    detector = detector or phrase_detector()
    saved_after = False
    found: list[Unsaved] = []
    user_seen = 0
    for turn in reversed(turns):
        if turn.role == "assistant":
            saved_after = saved_after or any(is_save_tool(t) for t in turn.tool_calls)
            continue
        user_seen += 1
        if user_seen > RECENT_USER_TURNS:
            break
        text = turn.text.strip()
        if saved_after:
            break  # a save after this point covers what came before (Claude saw it all)
        if not text or text.startswith("/") or text.startswith("<"):
            continue  # commands and tool/system wrappers, not the user's words
        signals = detector.detect(text)
        if signals.save_request:
            found.append(Unsaved(text, "asked to remember"))
        elif any(p.search(text) for p in DECISION_PATTERNS) and not signals.excluded_phrases:
            found.append(Unsaved(text, "decision or preference"))
    return list(reversed(found))


def already_stored(records: RawStoreRecords, text: str, now: float) -> bool:
    terms = set(tokenize(text))
    if not terms:
        return True
    for hit in records.search(text, top_k=3, now=now):
        have = set(tokenize(hit.memory.content))
        if len(terms & have) / len(terms) >= ALREADY_SAVED_OVERLAP:
            return True
    return False


def nudge(runtime: HookRuntime, inp: HookInput, now: float) -> str | None:
    candidates = unsaved_statements(read_turns(inp.transcript_path))
    if not candidates:
        return None
    state = runtime.read_state(inp.session_id, "stop")
    nudged = set(state.get("nudged", []))
    fresh = [c for c in candidates if fingerprint(c.text) not in nudged]
    if not fresh:
        return None
    records = RawStoreRecords.read(runtime.storage_path, runtime.store_config)
    todo = [c for c in fresh if not already_stored(records, c.text, now)][:MAX_NUDGE_ITEMS]
    # Remember all fresh ones, stored or not: the question was settled for each of them.
    runtime.write_state(
        inp.session_id, "stop", {"nudged": sorted(nudged | {fingerprint(c.text) for c in fresh})}
    )
    if not todo:
        return None
    # Quoted back into the transcript: secrets in them are redacted first (storage.secrets).
    quote = redact_secrets if runtime.store_config.redact_secrets else None
    lines = [
        f'- ({c.why}) "{clip(clean(quote(c.text).text if quote else c.text), QUOTE_CHARS)}"'
        for c in todo
    ]
    return (
        "cortexgraph: this session has statements that are not in memory yet:\n"
        + "\n".join(lines)
        + "\nIf they are lasting decisions or preferences, save each with save_memory (a short "
        "self-contained statement, tags such as 'decision' or 'preference'"
        + (f" and '{runtime.project_name.lower()}'" if runtime.project_name else "")
        + "). If not, just finish; you will not be asked again about these."
    )


def handle(inp: HookInput, now: float | None = None) -> dict[str, Any] | None:
    if inp.stop_hook_active or not inp.transcript_path:
        return None
    runtime = load_runtime(inp)
    if not runtime.plugin.prompt_to_save:
        return None
    reason = nudge(runtime, inp, time.time() if now is None else now)
    return block_stop(reason) if reason else None


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["DECISION_PATTERNS", "Unsaved", "handle", "main", "unsaved_statements"]
