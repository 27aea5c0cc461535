"""Claude Code hooks for cortexgraph (the plugin in plugins/claude-code/ runs these).

Each hook is a short-lived process: JSON on stdin, at most one JSON object on stdout, exit 0.
Entry point: ``cortexgraph-hook EVENT`` (hooks.__main__:main). Nothing here imports torch,
spaCy, prefect or mcp; the per-prompt path reads the JSONL file directly (quick_search).
"""
