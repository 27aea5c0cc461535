"""Where vault_sync does what, checked by parsing its modules: one module names notes, one writes
files into the vault, and writing a note calls down a fixed order, never back up it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "vault_sync"
WRITER = "atomic_file"
NAMER = "note_names"
# Writing one note, top to bottom: a module may import only the modules listed after it.
WRITE_PATH = [
    "note_sink",
    "note_refresh",
    "retitle",
    "note_update",
    "entity_notes",
    "note_links",
    "note_locator",
    "ledger",
    "note_format",
    NAMER,
    "paths",
    WRITER,
]
# Path methods and os functions that create, replace or change a file (deleting a file or
# making a folder is not writing one).
_FILE_WRITES = {"write_text", "write_bytes", "touch", "symlink_to", "hardlink_to"}
_OS_WRITES = {"replace", "rename", "renames", "link", "symlink", "write", "pwrite", "truncate"}
_OS_WRITES |= {"ftruncate"}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_STORAGE_WRITERS = {"append_whole", "append_lines", "atomic_write"}
# Functions that turn text into a title or a file name: note_names' own tools.
_NAME_MAKERS = {"safe_filename", "short_title", "legacy_note_title"}
# ... and what it answers: defined nowhere else.
_NAMING = _NAME_MAKERS | {"note_name", "entity_note_stem", "unique_note_path", "safe_folder"}


def _modules() -> dict[str, ast.Module]:
    return {
        path.stem: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in sorted(ROOT.glob("*.py"))
    }


def _called(node: ast.Call) -> tuple[str | None, str]:
    """(the object's name or None, the function's name) of a call: ``os.replace`` -> ("os",
    "replace"), ``open`` -> (None, "open"), ``path.write_text`` -> ("path", "write_text")."""
    func = node.func
    if isinstance(func, ast.Name):
        return None, func.id
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    return None, ""


def _opens_for_writing(node: ast.Call, owner: str | None) -> bool:
    """``open(p, "w")``, ``path.open("a")``, or a mode not written out (it may be one)."""
    position = 1 if owner is None or owner == "io" else 0
    mode = next((k.value for k in node.keywords if k.arg == "mode"), None)
    if mode is None and len(node.args) > position:
        mode = node.args[position]
    if mode is None:
        return False
    if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
        return True
    return any(c in mode.value for c in "wax+")


def _file_writes(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "storage" in node.module:
            found += [f"imports {a.name}" for a in node.names if a.name in _STORAGE_WRITERS]
        if not isinstance(node, ast.Call):
            continue
        owner, name = _called(node)
        line = f"line {node.lineno}: {owner + '.' if owner else ''}{name}"
        if owner == "os" and name == "open":
            flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if flags & _WRITE_FLAGS:
                found.append(line)
        elif (
            (name == "open" and _opens_for_writing(node, owner))
            or (owner in {"os", "shutil"} and (name in _OS_WRITES or owner == "shutil"))
            or name in _FILE_WRITES
        ):
            found.append(line)
        elif name in {"replace", "rename"} and len(node.args) == 1 and not node.keywords:
            found.append(line)  # Path.replace(target) / Path.rename(target); str.replace takes 2
    return found


def test_only_the_atomic_writer_writes_files_into_the_vault() -> None:
    offenders = {
        name: writes
        for name, tree in _modules().items()
        if name != WRITER and (writes := _file_writes(tree))
    }
    assert not offenders, f"write through vault_sync.{WRITER}: {offenders}"


def _makes_a_file_name(node: ast.AST) -> bool:
    """An f-string or a concatenation that ends a name in ".md", or a changed suffix."""
    if isinstance(node, ast.JoinedStr):
        return any(
            isinstance(v, ast.Constant) and isinstance(v.value, str) and ".md" in v.value
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return any(
            isinstance(side, ast.Constant) and side.value == ".md"
            for side in (node.left, node.right)
        )
    return isinstance(node, ast.Call) and _called(node)[1] in {"with_suffix", "with_stem"}


def test_only_note_names_makes_a_notes_title_or_file_name() -> None:
    offenders: dict[str, list[str]] = {}
    for name, tree in _modules().items():
        if name == NAMER:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node)[1] in _NAME_MAKERS:
                offenders.setdefault(name, []).append(f"line {node.lineno}: {_called(node)[1]}")
            elif isinstance(node, ast.FunctionDef) and node.name in _NAMING:
                offenders.setdefault(name, []).append(f"line {node.lineno}: def {node.name}")
            elif _makes_a_file_name(node):
                offenders.setdefault(name, []).append(f"line {getattr(node, 'lineno', 0)}: .md")
    assert not offenders, f"ask vault_sync.{NAMER} for the name: {offenders}"


def _vault_imports(tree: ast.Module) -> set[str]:
    prefix = "cortexgraph.vault_sync."
    return {
        node.module[len(prefix) :]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(prefix)
    }


def test_writing_a_note_calls_down_one_order_never_back_up_it() -> None:
    modules = _modules()
    upward = [
        f"{module} imports {imported}"
        for rank, module in enumerate(WRITE_PATH)
        for imported in sorted(_vault_imports(modules[module]))
        if imported in WRITE_PATH and WRITE_PATH.index(imported) <= rank
    ]
    assert not upward, upward
    # the writer and the namer stand on nothing else of the write path but paths
    assert _vault_imports(modules[WRITER]) <= {"errors"}
    assert _vault_imports(modules[NAMER]) <= {"errors", "paths"}
