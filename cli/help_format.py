"""Help screens that show a type only where an option takes a value.

Typer 0.29's rich help prints every option's type in the second column, flags included
(``--dry-run <bool>``), as if ``--dry-run`` took a value; its plain help does not
(``TyperOption.get_help_record`` skips flags). A repeatable option shows Python's
``<list[str]>``, as if it took a list in one go. ``hide_flag_types`` gives the rich help the
plain help's rule for flags, and shows a repeatable option as the one value it takes each time
(``--tag <str>``; its help says "repeatable"). Applied once, by ``cortexgraph.cli``'s ``__init__``, so every program and
every test runner over our Typer apps shows the same help.
"""

from __future__ import annotations

from typing import Any


def hide_flag_types() -> None:
    """Make a flag (an option that takes no value: ``--json``, ``--help``) show no type in the
    rich help, and a repeatable option the type of one value. Harmless to call twice, and a no-op on a Typer without this hook."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "hides_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if self.metavar is not None:
            return shown(self, ctx)
        if self.is_flag:
            return None
        label = shown(self, ctx)
        if self.multiple and label and label.startswith("<list[") and label.endswith("]>"):
            return f"<{label[6:-2]}>"
        return label

    display_type_rich.hides_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


__all__ = ["hide_flag_types"]
