#!/bin/sh
# Print the Python interpreter that has cortexgraph installed, for the plugin's MCP server and
# hooks, however cortexgraph was installed and whatever PATH Claude Code was started with.
# Tried in order; the first that can import cortexgraph wins:
#   1. $CORTEXGRAPH_PYTHON (set but unusable: that is said, and nothing else is tried)
#   2. the interpreter `cortexgraph plugin` recorded in ${XDG_CONFIG_HOME:-~/.config}/cortexgraph/python
#   3. the interpreter of `cortexgraph-mcp` or `cortexgraph-hook` on PATH (its #! line)
#   4. the checkout's .venv when the plugin runs from a checkout (claude --plugin-dir)
#   5. pipx's and uv's tool environments named cortexgraph
#   6. python3, python
# Exit 1 with the reason on stderr when none can.
has_cortexgraph() {
  [ -n "$1" ] && [ -x "$1" ] && [ ! -d "$1" ] &&
    "$1" -c "import importlib.util as u, sys
sys.path = [p for p in sys.path if p not in ('', '.')]  # not a folder that happens to be here
sys.exit(u.find_spec('cortexgraph') is None)" >/dev/null 2>&1
}
shebang_of() {  # the interpreter on a console script's #! line, if it is a plain path
  script=$(command -v "$1" 2>/dev/null) || return 1
  line=$(head -n 1 "$script" 2>/dev/null) || return 1
  case "$line" in '#!/'*) ;; *) return 1 ;; esac
  set -- ${line#\#!}
  [ $# -eq 1 ] && printf '%s\n' "$1"
}
if [ -n "${CORTEXGRAPH_PYTHON:-}" ]; then
  if has_cortexgraph "$CORTEXGRAPH_PYTHON"; then
    printf '%s\n' "$CORTEXGRAPH_PYTHON"; exit 0
  fi
  echo "cortexgraph: CORTEXGRAPH_PYTHON=$CORTEXGRAPH_PYTHON cannot import cortexgraph" >&2
  exit 1
fi
checkout=$(CDPATH= cd -- "$(dirname -- "$0")/../../.." 2>/dev/null && pwd)
record="${XDG_CONFIG_HOME:-$HOME/.config}/cortexgraph/python"
recorded=""
[ -f "$record" ] && recorded=$(head -n 1 "$record")
for candidate in \
  "$recorded" \
  "$(shebang_of cortexgraph-mcp)" \
  "$(shebang_of cortexgraph-hook)" \
  "$checkout/.venv/bin/python" \
  "$HOME/.local/share/pipx/venvs/cortexgraph/bin/python" \
  "$HOME/.local/pipx/venvs/cortexgraph/bin/python" \
  "$HOME/.local/share/uv/tools/cortexgraph/bin/python" \
  "$(command -v python3 2>/dev/null)" \
  "$(command -v python 2>/dev/null)"; do
  if has_cortexgraph "$candidate"; then
    printf '%s\n' "$candidate"; exit 0
  fi
done
echo "cortexgraph: no Python with cortexgraph found; install it (pip install -e /path/to/cortexgraph), then run 'cortexgraph plugin' with that environment's cortexgraph, or set CORTEXGRAPH_PYTHON" >&2
exit 1
