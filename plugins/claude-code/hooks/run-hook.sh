#!/bin/sh
# Run one cortexgraph hook (session-start | user-prompt-submit | stop | post-tool-use).
# Prefers the installed console script; falls back to a Python that can import cortexgraph
# (CORTEXGRAPH_PYTHON, else python3). If neither exists the hook does nothing and exits 0, so
# a missing install never blocks a prompt; the reason goes to stderr (visible with --debug).
event="$1"
if command -v cortexgraph-hook >/dev/null 2>&1; then
  exec cortexgraph-hook "$event"
fi
py="${CORTEXGRAPH_PYTHON:-python3}"
if command -v "$py" >/dev/null 2>&1 && "$py" -c "import cortexgraph.hooks" >/dev/null 2>&1; then
  exec "$py" -m cortexgraph.hooks "$event"
fi
cat >/dev/null
echo "cortexgraph: cortexgraph-hook not found (pip install cortexgraph, or set CORTEXGRAPH_PYTHON); $event hook skipped" >&2
exit 0
