"""`cortexgraph plugin`: set up the Claude Code plugin for this installation. Records this
interpreter (``${XDG_CONFIG_HOME:-~/.config}/cortexgraph/python``) where the plugin's launcher
(plugins/claude-code/bin/find-python.sh) looks first, so the plugin's MCP server and hooks run
``python -m cortexgraph...`` of this environment whatever PATH Claude Code has; prints the two
commands that install the plugin."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cortexgraph.cli.cli_common import JsonOpt, cli_errors, out, print_json


def python_record() -> Path:
    """Where the plugin's launcher finds the recorded interpreter."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "cortexgraph" / "python"


def marketplace_dir() -> Path | None:
    """The checkout's ``plugins/`` folder (the plugin's marketplace), if this is a checkout."""
    import cortexgraph

    folder = Path(cortexgraph.__file__).resolve().parents[1] / "plugins"
    return folder if (folder / ".claude-plugin" / "marketplace.json").is_file() else None


def plugin(as_json: JsonOpt = False) -> None:
    """Record this Python for the Claude Code plugin and print how to install the plugin."""
    with cli_errors():
        record = python_record()
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(record.name + ".tmp")
        tmp.write_text(sys.executable + "\n", encoding="utf-8")
        os.replace(tmp, record)
        market = marketplace_dir()
        where = str(market) if market else "/path/to/cortexgraph/plugins"
        steps = [f"/plugin marketplace add {where}", "/plugin install cortexgraph@cortexgraph"]
        if as_json:
            print_json({"python": sys.executable, "recorded_in": str(record), "steps": steps})
            return
        out.print(f"[green]✓[/] the plugin will run {sys.executable} (recorded in {record})")
        out.print("In Claude Code, then restart it:", highlight=False)
        for step in steps:
            out.print(f"  {step}", highlight=False, markup=False)


__all__ = ["marketplace_dir", "plugin", "python_record"]
