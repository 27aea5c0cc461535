"""The recall endpoint answers a hook with the records a user may see: the previous save's
text (``neighbour_text``, a ranking signal) ranks the memory but is not in the reply."""

from __future__ import annotations

from pathlib import Path

import anyio

from cortexgraph import recall_endpoint as endpoint


def test_the_endpoint_ranks_by_the_neighbour_but_never_sends_it(
    tmp_path: Path, short_dir: Path, monkeypatch
) -> None:
    from mcp_common import make_settings

    from cortexgraph.mcp_server.app import ServerState
    from cortexgraph.mcp_server.recall_endpoint import serve_recall_endpoint

    monkeypatch.setattr(endpoint.tempfile, "gettempdir", lambda: str(short_dir))
    state = ServerState(make_settings(tmp_path))
    reply = state.store.save(
        "Yes, and he already knows how to sit!",
        neighbour="We adopted a puppy named Rex last spring",
    )
    state.store.save("Team lunch is on Fridays.")

    async def go() -> endpoint.SearchReply | None:
        async with anyio.create_task_group() as tg:
            await tg.start(serve_recall_endpoint, state)
            answer = await anyio.to_thread.run_sync(
                endpoint.ask_running_server, tmp_path / "stm", "puppy Rex", 5
            )
            tg.cancel_scope.cancel()
        return answer

    answer = anyio.run(go)
    assert answer is not None
    [found] = answer.results  # found through the neighbour's words alone
    record = found.memory
    assert record is not None and record["id"] == reply.id and found.score > 0
    assert "neighbour_text" not in record and "puppy" not in str(record)
