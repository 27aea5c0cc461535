"""The reference implementation, cortexgraph 1.2.1, in its own virtualenv.

Benchmarks drive it through a subprocess (``python -I``: no cwd, no user site), so its package,
also named ``cortexgraph``, never mixes with ours. The venv is created on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REFERENCE_VENV = Path(os.environ.get("CORTEXGRAPH_REFERENCE_VENV", "/tmp/cg1venv"))
REFERENCE_PACKAGES = ["cortexgraph==1.2.1", "mcp==1.23.0"]  # 1.2.1 does not import without mcp


def reference_python() -> Path:
    """The venv's interpreter, creating the venv and installing 1.2.1 if it is missing."""
    python = REFERENCE_VENV / "bin" / "python"
    probe = [str(python), "-I", "-c", "import cortexgraph.storage.jsonl_storage"]
    if (
        python.exists()
        and subprocess.run(probe, capture_output=True, cwd=tempfile.gettempdir()).returncode == 0
    ):
        return python
    print(f"setting up cortexgraph 1.2.1 in {REFERENCE_VENV} ...", file=sys.stderr)
    subprocess.run(["python3", "-m", "venv", str(REFERENCE_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *REFERENCE_PACKAGES], check=True)
    return python


def run_json(
    python: Path | str,
    script: Path,
    *args: str,
    isolated: bool = False,
    cwd: Path | None = None,
    timeout: float = 1800,
    env: dict[str, str] | None = None,
) -> dict:
    """Run ``script`` and parse the JSON object it prints on its last stdout line (``env``:
    variables set for it beside this process's own)."""
    cmd = [str(python), *(["-I"] if isolated else []), str(script), *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd or tempfile.gettempdir()),
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
