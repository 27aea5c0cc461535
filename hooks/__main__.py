"""``cortexgraph-hook EVENT`` (or ``python -m cortexgraph.hooks EVENT``): one Claude Code hook.

EVENT is session-start, user-prompt-submit, stop, session-end, post-tool-use or
post-tool-use-monitor (Claude Code's own names,
e.g. UserPromptSubmit, work too). Only the chosen handler's module is imported. Exit status is
always 0: a hook that fails must not block the user (the reason goes to stderr).
"""

from __future__ import annotations

import gc
import importlib
import sys

HANDLERS = {
    "session-start": "cortexgraph.hooks.session_start",
    "user-prompt-submit": "cortexgraph.hooks.user_prompt_submit",
    "stop": "cortexgraph.hooks.stop",
    "session-end": "cortexgraph.hooks.session_end",  # auto_commit
    "post-tool-use": "cortexgraph.hooks.post_tool_use",
    # The behaviour monitor sees every tool call, failed ones included.
    "post-tool-use-monitor": "cortexgraph.hooks.post_tool_use_monitor",
}
_ALIASES = {
    "sessionstart": "session-start",
    "sessionend": "session-end",
    "userpromptsubmit": "user-prompt-submit",
    "posttooluse": "post-tool-use",
}


def resolve(event: str) -> str | None:
    key = event.strip().lower().replace("_", "-")
    key = _ALIASES.get(key.replace("-", ""), key)
    return key if key in HANDLERS else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or resolve(args[0]) is None:
        print(f"usage: cortexgraph-hook {{{','.join(HANDLERS)}}}", file=sys.stderr)
        return 0  # misconfigured hooks.json must still not block the user
    # A short-lived process: the cyclic GC only costs time here.
    gc.disable()
    try:
        module = importlib.import_module(HANDLERS[resolve(args[0]) or ""])
    except Exception as exc:  # fail open even when our install is broken
        print(f"cortexgraph hook unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    return int(module.main())


if __name__ == "__main__":
    sys.exit(main())
