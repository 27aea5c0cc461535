"""Session-wide test settings: quiet, offline, and kind to a 2-core machine."""

from __future__ import annotations

import os

# Before any test imports torch or prefect: two cores collapse with more threads than that,
# and nothing may phone home or reach a model hub.
for key, value in {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    # Agents run outside flows too (MCP tools, plain Python): their logs stay local then.
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}.items():
    os.environ.setdefault(key, value)
