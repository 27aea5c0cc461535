"""A person's frontmatter YAML as cortexgraph reads it: a safe loader, a date that does not
exist kept as its text, and no aliases (vault_sync.note_format.parse_note_text's loader).
"""

from __future__ import annotations

from typing import Any

import yaml

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


class _DatesAsTextLoader(_Loader):  # type: ignore[misc]
    """The safe loader, but a date stays the text it is: a person's "2024-02-30" is a date
    that does not exist, and PyYAML raises ValueError (not YAMLError) building it."""


_DatesAsTextLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", _DatesAsTextLoader.construct_yaml_str
)


class AliasedYamlError(yaml.YAMLError):
    """Frontmatter that uses YAML aliases (``*name``)."""


def _refuse_aliases(raw: str) -> None:
    """Raise ``AliasedYamlError`` when ``raw`` uses an alias. A note is anyone's file: nine
    anchors of nine aliases each are a few hundred bytes that build a value of 9**9 strings
    when walked (seconds to hours of a search), and ``&a [*a]`` a list that holds itself (a
    RecursionError). Obsidian's properties never write aliases, so none is read. Only frontmatter
    holding a ``*`` is parsed for them (events, nothing built)."""
    if "*" not in raw:
        return
    for event in yaml.parse(raw, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            raise AliasedYamlError(
                f"frontmatter uses the YAML alias *{event.anchor}, which cortexgraph does not "
                "read (a note's aliases can expand without bound)"
            )


def load_frontmatter_yaml(raw: str) -> Any:
    """``raw`` through a safe loader; a date that does not exist is kept as its text. A value
    that still cannot be built (``!!int five``) raises ValueError: broken YAML to the caller;
    so does an alias (``_refuse_aliases``)."""
    _refuse_aliases(raw)
    try:
        return yaml.load(raw, Loader=_Loader)
    except ValueError:
        return yaml.load(raw, Loader=_DatesAsTextLoader)


__all__ = ["AliasedYamlError", "load_frontmatter_yaml"]
