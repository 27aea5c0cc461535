"""The deployment commands the docs give name the work pool prefect.yaml deploys to.

``prefect --no-prompt deploy --all`` refuses a prefect.yaml whose pool does not exist ("references
work pool ... which does not exist"), and a worker started on another pool never picks up the
deployments' runs: a user who created the pool the docs named could not deploy at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/pipeline.md", "docs/ARCHITECTURE.md", "prefect.yaml"]
# `prefect work-pool create NAME`, `prefect worker start --pool NAME` (quoted or not)
POOL_IN_COMMAND = re.compile(r"prefect (?:work-pool create|worker start --pool) '?([\w.-]+)")


def _deployment_pools() -> set[str]:
    config = yaml.safe_load((REPO / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["work_pool"]["name"] for d in config["deployments"]}


def test_every_pool_the_docs_tell_to_create_or_serve_is_the_deployments_pool() -> None:
    pools = _deployment_pools()
    assert pools == {"cortexgraph-local"}
    named = {
        (doc, line_no, match.group(1))
        for doc in DOCS
        for line_no, line in enumerate((REPO / doc).read_text(encoding="utf-8").splitlines(), 1)
        for match in POOL_IN_COMMAND.finditer(line)
    }
    assert len(named) >= 5  # README, pipeline.md twice over, ARCHITECTURE.md, prefect.yaml
    wrong = sorted(f"{doc}:{line_no}: {pool}" for doc, line_no, pool in named if pool not in pools)
    assert not wrong, wrong
