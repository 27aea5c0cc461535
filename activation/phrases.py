"""Explicit save / recall requests and importance markers, found with regular expressions.

Exclusions run first and blank out what they match, so "no need to remember this" or
"remember when I was a kid" cannot trigger a save, and "what did we eat" is not a recall.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_F = re.IGNORECASE
_THIS = r"(?:this|that|it|these|those|the following)"

SAVE_PATTERNS: tuple[str, ...] = (
    rf"\b(?:please\s+)?remember\s+{_THIS}\b",
    r"\bremember\s*:",
    r"^\s*(?:please\s+)?remember\s+(?:that|my|our|i|we|the)\b",
    r"\b(?:please|you should|you need to|make sure to|try to)\s+remember\b",
    r"\bdon'?t\s+forget\b",
    r"\bdo\s+not\s+forget\b",
    r"\bnever\s+forget\b",
    r"\bkeep\s+(?:in\s+mind|that\s+in\s+mind|this\s+in\s+mind)\b",
    r"\b(?:make|take)\s+a\s+note\b",
    r"\bnote\s+(?:this|that|it)\s+down\b",
    r"\bnote\s+to\s+self\b",
    rf"\b(?:write|jot|put)\s+{_THIS}\s+down\b",
    r"\bwrite\s+down\b",
    r"\bput\s+down\s+that\b",
    rf"\b(?:save|store|record|memori[sz]e|log)\s+{_THIS}\b",
    r"\bcommit\s+(?:this|that|it)\s+to\s+memory\b",
    r"\bfor\s+future\s+reference\b",
    r"\bfor\s+the\s+record\b",
    # "document this" (the spec's save phrase) as a request about what was just said: at the
    # end of a clause or before a colon; "document this function" is a documentation task.
    r"\bdocument\s+(?:this|that)\b(?=\s*(?:[.!:;,]|$|\s+(?:down|for\s+(?:later|the\s+future|"
    r"future\s+reference))\b))",
    # "Please document this decision: ..." (the plugin spec): a decision, choice or rule.
    r"\bdocument\s+(?:this|that|the|our)\s+(?:decision|choice|convention|rule|agreement|"
    r"preference)\b(?=\s*(?:[.!:;,]|$))",
)

RECALL_PATTERNS: tuple[str, ...] = (
    r"\bwhat\s+(?:did|do|have|had)\s+(?:i|we|you)\s+(?:\w+\s+)?(?:say|said|decide|decided|"
    r"discuss|discussed|agree|agreed|mention|mentioned|tell|told|choose|chose|pick|picked|"
    r"conclude|concluded|note|noted|record|recorded|settle|settled|save|saved|remember|think)\b",
    r"\bdo\s+you\s+(?:still\s+)?(?:remember|recall|know\s+what\s+(?:i|we))\b",
    r"\b(?:can|could)\s+you\s+(?:recall|remember)\b",
    r"\brecall\s+(?:what|when|why|how|the|my|our)\b",
    r"\bremind\s+me\b",
    r"\brefresh\s+my\s+memory\b",
    r"\blast\s+time\s+we\b",
    r"\bas\s+(?:we|i)\s+(?:discussed|said|mentioned|agreed|decided)\b",
    r"\bwhy\s+did\s+(?:we|i)\s+(?:choose|chose|pick|decide|go\s+with|drop|switch|move|use|"
    r"pick|reject|stop)\b",
    r"\b(?:did|have)\s+(?:i|we)\s+(?:ever\s+|already\s+)?(?:tell|told|mention|mentioned|talk|"
    r"talked|discuss|discussed|decide|decided|agree|agreed|settle|settled)\b",
    r"\bwhat\s+(?:do|did)\s+you\s+(?:know|have|save|remember)\b",
    # The plugin spec's "what do (you|we) know about": the "we" half.
    r"\bwhat\s+do\s+we\s+know\s+about\b",
    r"\b(?:search|check|look\s+up|find)\s+(?:in\s+)?my\s+(?:memories|notes)\b",
    r"\bbring\s+up\s+what\b",
    r"\bpull\s+up\s+(?:what|whatever)\b",
    r"\bwhat\s+(?:was|is|'s)\b[^.?!]{0,60}\bagain\b",
    # The plugin spec's continuity phrases.
    r"\b(?:previously|earlier)\s+we\b",
    r"\bcontinue\s+(?:with|on|from)\s+(?:the|that|our|my)\b",
    r"\bcontinue\s+(?:from\s+)?where\s+we\b",
    r"(?:^|[.!?]\s+|\b(?:let'?s\s+)?(?:go|get|getting|going|come|coming)\s+)back\s+to\s+"
    r"(?:the|that|our)\b",
    r"\bwhat(?:'s|\s+is|\s+was)\s+our\s+(?:approach|decision|plan)\s+"
    r"(?:for|on|about|regarding|to)\b",
    # "what's the plan for the migration?" (the plugin spec); "... for today?" is a task.
    r"\bwhat(?:['\u2019]s|\s+is|\s+was)\s+the\s+(?:approach|decision|plan)\s+"
    r"(?:for|on|about|regarding|to)\b(?!\s+(?:today|tonight|tomorrow|now|later|this\s+"
    r"(?:morning|afternoon|evening|week))\b)",
)

IMPORTANCE_PATTERNS: dict[str, float] = {
    # Strongest boost wins (see ImportanceScorer); values are strength increments. The spec's
    # table (activation spec, ImportanceScorer.IMPORTANCE_KEYWORDS) as whole words, plus a few
    # markers it lacks (must remember, vital, top priority, key point); its statement words
    # (decided, going with, prefer, like) are STATEMENT_BOOSTS below.
    r"\bnever\s+forget\b": 0.8,
    r"\bcritical(?:ly)?\b": 0.6,
    r"\bcrucial\b": 0.6,
    r"\bessential\b": 0.5,
    r"\bremember\s+this\b": 0.5,
    r"\bmust\s+(?:never\s+)?remember\b": 0.5,
    r"\bimportant\b": 0.4,
    r"\bvital\b": 0.4,
    r"\b(?:top|high)\s+priority\b": 0.4,
    r"\bkey\s+point\b": 0.2,
}
# The spec's boosts for what a statement is rather than how much it matters: they raise the
# strength of a save but are no importance marker (no SHOULD_SAVE on their own).
STATEMENT_BOOSTS: dict[str, float] = {
    r"\bdecided\b": 0.3,
    r"\bgoing\s+with\b": 0.3,
    r"\bprefer(?:s|red)?\b": 0.2,
    r"\blikes?\b": 0.1,
}

EXCLUSION_PATTERNS: tuple[str, ...] = (
    # Negated requests: "no need to remember", "don't save that", "you don't have to remember".
    r"\b(?:no\s+need|not\s+necessary|there'?s\s+no\s+need)\s+to\s+(?:\w+\s+){0,2}"
    r"(?:remember|save|store|record|note|keep)\b[^.!?]*",
    r"\b(?:don'?t|do\s+not|doesn'?t|won'?t)\s+(?:need|have)\s+to\s+(?:\w+\s+){0,2}"
    r"(?:remember|save|store|record|note|keep)\b[^.!?]*",
    r"\b(?:don'?t|do\s+not|never)\s+(?:bother\s+)?(?:sav(?:e|ing)|stor(?:e|ing)|record(?:ing)?)"
    r"\b[^.!?]*",
    r"\bnot\s+worth\s+(?:remembering|saving|storing|keeping|noting)\b[^.!?]*",
    # Nostalgia: "remember when I was a kid", "I remember when phones had buttons".
    r"\b(?:i\s+|do\s+you\s+|you\s+)?remember\s+(?:when|the\s+days|the\s+(?:\d0s|nineties|"
    r"eighties|seventies|sixties))\b(?!\s+(?:we|i|you)\s+(?:said|decided|discussed|agreed|"
    r"talked|mentioned|chose|picked|settled))[^.!?]*",
    r"\bi\s+(?:can'?t|cannot|don'?t)\s+remember\s+where\s+i\b[^.!?]*",
    # Small talk about the past that is not about stored knowledge.
    r"\bwhat\s+did\s+(?:i|we|you)\s+(?:eat|drink|have\s+for\s+(?:breakfast|lunch|dinner)|"
    r"watch|play|order)\b[^.!?]*",
    r"\b(?:negligible|not\s+(?:that\s+|very\s+|really\s+|so\s+)?(?:important|critical|crucial|"
    r"essential|vital))\b",
)


@dataclass(frozen=True, slots=True)
class PhraseSignals:
    save_request: bool
    recall_request: bool
    importance_marker: bool
    importance_boost: float  # strongest matched marker, 0 when none
    matched_phrases: tuple[str, ...]
    excluded_phrases: tuple[str, ...]
    confidence: float  # 0.9 explicit request, 0.6 importance only, 0 otherwise

    def to_json(self) -> dict[str, object]:
        return {
            "save_request": self.save_request,
            "recall_request": self.recall_request,
            "importance_marker": self.importance_marker,
            "importance_boost": self.importance_boost,
            "matched_phrases": list(self.matched_phrases),
            "excluded_phrases": list(self.excluded_phrases),
            "confidence": self.confidence,
        }


NO_SIGNALS = PhraseSignals(False, False, False, 0.0, (), (), 0.0)


class PhraseDetector:
    """Case-insensitive phrase matching; extra patterns can be added per instance."""

    def __init__(
        self,
        *,
        extra_save: tuple[str, ...] = (),
        extra_recall: tuple[str, ...] = (),
        extra_exclusions: tuple[str, ...] = (),
    ) -> None:
        self._save = [re.compile(p, _F) for p in (*SAVE_PATTERNS, *extra_save)]
        self._recall = [re.compile(p, _F) for p in (*RECALL_PATTERNS, *extra_recall)]
        self._importance = [(re.compile(p, _F), b) for p, b in IMPORTANCE_PATTERNS.items()]
        self._statement = [(re.compile(p, _F), b) for p, b in STATEMENT_BOOSTS.items()]
        self._exclude = [re.compile(p, _F) for p in (*EXCLUSION_PATTERNS, *extra_exclusions)]

    def detect(self, text: str) -> PhraseSignals:
        excluded: list[str] = []
        masked = text
        for rx in self._exclude:
            excluded.extend(m.group(0).strip() for m in rx.finditer(masked))
            # Blank with spaces so positions and word boundaries elsewhere stay intact.
            masked = rx.sub(lambda m: " " * len(m.group(0)), masked)
        save = _matches(self._save, masked)
        recall = _matches(self._recall, masked)
        boosts = [(m.group(0), b) for rx, b in self._importance for m in rx.finditer(masked)]
        statement = [b for rx, b in self._statement if rx.search(masked)]
        boost = max([b for _, b in boosts] + statement, default=0.0)
        matched = tuple(dict.fromkeys([*save, *recall, *(p for p, _ in boosts)]))
        confidence = 0.9 if save or recall else 0.6 if boosts else 0.0
        return PhraseSignals(
            save_request=bool(save),
            recall_request=bool(recall),
            importance_marker=bool(boosts),
            importance_boost=boost,
            matched_phrases=tuple(p.lower() for p in matched),
            excluded_phrases=tuple(excluded),
            confidence=confidence,
        )


def _matches(patterns: list[re.Pattern[str]], text: str) -> list[str]:
    return [m.group(0).strip(" :") for rx in patterns for m in rx.finditer(text)]


__all__ = ["NO_SIGNALS", "STATEMENT_BOOSTS", "PhraseDetector", "PhraseSignals"]
