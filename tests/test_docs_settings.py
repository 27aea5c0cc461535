"""The settings tables a user reads (README "Configuration", docs/activation.md) against
``Settings``: every variable named exists, and every default written is the one it has."""

from __future__ import annotations

import re
from pathlib import Path

from cortexgraph.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"\|\s*`((?:CORTEXGRAPH|LTM)_[A-Z_]+)`\s*\|\s*`([^`]*)`")


def _defaults() -> dict[str, object]:
    out: dict[str, object] = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = [str(c) for c in getattr(alias, "choices", ())] or [f"CORTEXGRAPH_{name.upper()}"]
        default = getattr(field.default, "value", field.default)
        out.update({n.upper(): default for n in names})
    return out


def _written(default: object) -> str:
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def test_every_settings_table_row_names_a_setting_and_its_default() -> None:
    defaults = _defaults()
    rows = [
        (path.name, number, *match.groups())
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if (match := ROW.match(line))
    ]
    assert len(rows) >= 20
    for where, number, variable, written in rows:
        assert variable in defaults, f"{where}:{number} names {variable}, which nothing reads"
        default = defaults[variable]
        if default is None:  # "unset" or a derived default such as `<storage>/../vault`
            continue
        assert written == _written(default), f"{where}:{number} {variable}: {written} != {default}"


def test_every_page_that_adds_the_server_by_hand_warns_against_it_with_the_plugin() -> None:
    """README says not to `claude mcp add` beside the plugin (two servers on one store);
    docs/mcp.md showed the command with no word of the plugin."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in re.finditer(r"claude mcp add [^\n]*cortexgraph-mcp", text):
            before = text[max(0, match.start() - 600) : match.start()]
            assert "plugin" in before, f"{path.name}: {match.group(0)[:60]}"
