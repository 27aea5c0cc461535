"""The layering rules of docs/ARCHITECTURE.md, checked by parsing every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {
    "storage",
    "agents",
    "flows",
    "vault_sync",
    "mcp_server",
    "activation",
    "cortexgraph",
    "retrieval",
    "webui",
    "cli",
    "hooks",
}

# package -> the packages of ours it may import (itself always allowed)
ALLOWED = {
    "storage": set(),
    "vault_sync": {"storage"},
    "activation": {"storage"},
    "agents": {"storage"},
    # cortexgraph/user_store.py opens the user's store as every shell does, which moves the
    # behaviour monitor's records out of it (activation.monitor.ledger_store)
    "cortexgraph": {"storage", "activation"},
    "retrieval": {"storage", "vault_sync"},
    # the Prefect flow and its wiring; the shells that start it (cli/, a deployment) sit above
    "flows": {"storage", "agents", "vault_sync", "activation", "cortexgraph"},
    "mcp_server": {"storage", "agents", "vault_sync", "activation", "retrieval", "cortexgraph"},
    # the local web view: a shell like the other two; neither of them is imported by it
    "webui": {"storage", "agents", "vault_sync", "retrieval", "cortexgraph"},
    # the command-line programs: they run the flow (through flows, never Prefect directly) and
    # start the web view; they never reach into the MCP server.
    "cli": {
        "storage",
        "agents",
        "vault_sync",
        "activation",
        "retrieval",
        "cortexgraph",
        "webui",
        "flows",
    },
    # the Claude Code hooks: one short process per event, so nothing heavy and no framework.
    "hooks": {"storage", "activation", "retrieval", "vault_sync", "cortexgraph"},
}
# cortexgraph 1.x's public names (``from cortexgraph.agents import Scheduler``, the beads helpers in
# ``cortexgraph.agents.beads_integration``) open the configured store themselves, so these two
# entry points reach the flow wiring, lazily (flows/agents_api.py, flows/beads_api.py); the
# agents' own modules stay on storage only.
COMPAT_ENTRY_POINTS = {"agents/__init__.py": {"flows"}, "agents/beads_integration.py": {"flows"}}
# third-party frameworks that only the shells may touch
FRAMEWORKS = {"prefect": {"flows"}, "prefect_dask": {"flows"}, "mcp": {"mcp_server"}}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _ours(module: str) -> str:
    """The package an import names: ``cortexgraph.storage.x`` is storage, ``numpy`` numpy."""
    parts = module.split(".")
    return (
        parts[1] if parts[0] == "cortexgraph" and len(parts) > 1 and parts[1] in OURS else parts[0]
    )


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_ours(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "cortexgraph":  # from cortexgraph import agents
                found.update(a.name if a.name in OURS else "cortexgraph" for a in node.names)
            else:
                found.add(_ours(node.module))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_follow_the_layers(package: str) -> None:
    violations = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in sorted(
            _imports(path)
            & OURS
            - {package}
            - ALLOWED[package]
            - COMPAT_ENTRY_POINTS.get(path.relative_to(ROOT).as_posix(), set())
        )
    ]
    assert not violations, "layering broken:\n" + "\n".join(violations)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_frameworks_stay_in_their_shells(framework: str) -> None:
    violations = [
        f"{path.relative_to(ROOT)} imports {framework}"
        for package in ALLOWED
        if package not in FRAMEWORKS[framework]
        for path in _modules(package)
        if framework in _imports(path)
    ]
    assert not violations, "\n".join(violations)


def _top_level_env_reads(path: Path) -> list[int]:
    """Line numbers where module-level code (not inside a def) touches os.environ/getenv."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if (
            isinstance(node, ast.Attribute)
            and node.attr in {"environ", "getenv"}
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            lines.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in tree.body:
        if isinstance(stmt, ast.If) and _is_main_guard(stmt):
            continue
        visit(stmt)
    return lines


def _is_main_guard(stmt: ast.If) -> bool:
    test = stmt.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def test_nothing_reads_the_environment_at_import_time() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in ALLOWED
        for path in _modules(package)
        for line in _top_level_env_reads(path)
    ]
    assert not offenders, "environment read at import time: " + ", ".join(offenders)


def test_the_design_card_layout_is_kept() -> None:
    for name in ["flows", "agents", "storage", "vault_sync", "mcp_server", "tests"]:
        assert (ROOT / name).is_dir(), name
    for name in ["pyproject.toml", "prefect.yaml", "README.md", "docs/ARCHITECTURE.md"]:
        assert (ROOT / name).is_file(), name


def _tool_modules_imported(path: Path) -> set[str]:
    """The ``mcp_server/tools_*`` modules a file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "cortexgraph.mcp_server":
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        else:
            continue
        found.update(
            name.split(".")[2] for name in names if name.startswith("cortexgraph.mcp_server.tools_")
        )
    return found


def test_mcp_tool_modules_do_not_import_each_other() -> None:
    """Each tools_*.py registers its own tools; shared logic lives below the shell."""
    tools = sorted((ROOT / "mcp_server").glob("tools_*.py"))
    assert len(tools) > 3
    violations = [
        f"{path.name} imports {name}"
        for path in tools
        for name in sorted(_tool_modules_imported(path) - {path.stem})
    ]
    assert not violations, "\n".join(violations)


def test_only_the_entry_point_imports_the_mcp_app() -> None:
    """``app`` builds the server from the tool modules; they reach the state in ``state``, so
    nothing imports ``app`` back (no cycle through the module that registers them)."""
    importers = [
        path.name
        for path in sorted((ROOT / "mcp_server").glob("*.py"))
        if path.name not in {"app.py", "__main__.py"}
        and "cortexgraph.mcp_server.app" in _module_names(path)
    ]
    assert not importers, "import mcp_server.state instead: " + ", ".join(importers)


def _module_names(path: Path) -> set[str]:
    """Every module a file names in an import, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found
