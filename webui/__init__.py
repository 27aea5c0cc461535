"""The local web view (`cortexgraph serve --ui`): a FastAPI app and plain HTML/JS, on 127.0.0.1.

A shell like flows/ and mcp_server/: it wires storage, agents, vault_sync and reads settings;
the logic it shows (search, graph, decay, reviews, runs) lives below it.
"""
