#!/bin/sh
# Run one cortexgraph hook (session-start | user-prompt-submit | stop | post-tool-use).
# `python -m cortexgraph.hooks EVENT` of the interpreter that has cortexgraph installed
# (../bin/find-python.sh: CORTEXGRAPH_PYTHON, the one `cortexgraph plugin` recorded, the one
# behind cortexgraph-hook on PATH, ...). If none is found the hook does nothing and exits 0, so a
# missing install never blocks a prompt; the reason goes to stderr (visible with --debug).
event="$1"
if py=$(sh "$(dirname -- "$0")/../bin/find-python.sh"); then
  exec "$py" -m cortexgraph.hooks "$event"
fi
cat >/dev/null
echo "cortexgraph: $event hook skipped" >&2
exit 0
