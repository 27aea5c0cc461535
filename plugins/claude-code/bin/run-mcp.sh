#!/bin/sh
# The plugin's MCP server (stdio): `python -m cortexgraph.mcp_server` of the interpreter that has
# cortexgraph installed (bin/find-python.sh says which and how it is found).
py=$(sh "$(dirname -- "$0")/find-python.sh") || exit 1
exec "$py" -m cortexgraph.mcp_server "$@"
