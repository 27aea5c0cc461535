"""Helpers for the 1.x compatibility tests: settings, environments and MCP payloads."""

from __future__ import annotations

import sys

from mcp_common import error_text, folder_bytes, make_settings, payload
from mcp_common import server_env as clean_env

PYTHON = sys.executable
NOW = 1_760_000_000.0

PARAPHRASES = [
    "The team prefers tabs over spaces in every Python file",
    "In every Python file the team prefers tabs over spaces",
    "Every Python file: the team prefers tabs, not spaces",
]


__all__ = [
    "NOW",
    "PARAPHRASES",
    "PYTHON",
    "clean_env",
    "error_text",
    "folder_bytes",
    "make_settings",
    "payload",
]
