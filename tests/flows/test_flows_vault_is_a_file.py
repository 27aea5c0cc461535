"""A deployment whose vault path names a file: the run fails saying there is no vault there
and nothing was created, as the CLI does for ``--vault FILE`` (``cli_common.require_vault``),
not with the bare ``FileExistsError`` of making a folder over the file."""

from __future__ import annotations

from cortexgraph.flows.consolidation import consolidate

NOW = 1_760_000_000.0 + 3600


def test_a_vault_path_that_is_a_file_fails_the_run_naming_it(prefect_harness, demo_dirs, tmp_path):
    store_dir, _ = demo_dirs
    not_a_vault = tmp_path / "vault.md"
    not_a_vault.write_text("# a note, not a vault\n")

    state = consolidate(
        storage_path=str(store_dir),
        vault_path=str(not_a_vault),
        agents=["decay"],
        use_embeddings=False,
        now=NOW,
        return_state=True,
    )

    assert state.is_failed()
    assert state.message is not None
    assert f"VaultNotFoundError: no vault at {not_a_vault}; nothing was created" in state.message
    assert not_a_vault.read_text() == "# a note, not a vault\n"
