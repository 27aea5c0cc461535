"""A run that fails part-way (here the vault's promoted folder is a file, so every note fails)
still leaves the ``consolidation-report`` artifact in the Prefect UI: what the agents before the
failure did - a merge that archived memories is applied and stays applied - and where and why it
stopped. Before, a failed run left only the exception: the merges it had written showed nowhere
in the UI. The run is not recorded as a finished one (``status`` and ``--scheduled`` read that).
"""

from __future__ import annotations

import pytest

from cortexgraph.agents.ltm_promoter import PromotionFailedError
from cortexgraph.flows.consolidation import consolidate
from cortexgraph.user_store import recent_runs

NOW = 1_760_000_000.0 + 3600


def _report_artifact(flow_run_id) -> str | None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["consolidation-report"]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            )
        )
    return str(found[0].data) if found else None


def test_a_run_that_fails_at_promote_publishes_what_it_did_and_why_it_stopped(
    prefect_harness, demo_dirs, monkeypatch
):
    monkeypatch.setenv("CORTEXGRAPH_BEADS_ENABLED", "false")
    store_dir, vault = demo_dirs
    (vault / "cortexgraph").write_text("not a folder\n")  # LTM_PROMOTED_FOLDER's default

    state = consolidate(
        storage_path=str(store_dir),
        vault_path=str(vault),
        use_embeddings=False,
        now=NOW,
        return_state=True,
    )

    assert state.is_failed()
    with pytest.raises(PromotionFailedError):
        state.result()
    report = _report_artifact(state.state_details.flow_run_id)
    assert report is not None, "the failed run left no consolidation-report artifact"
    assert "### Semantic merge" in report and "merged 1 (3 sources archived)" in report
    assert "stopped at promote: PromotionFailedError: " in report
    assert "### Promotion to long-term memory" not in report
    assert recent_runs(store_dir, 5) == []
