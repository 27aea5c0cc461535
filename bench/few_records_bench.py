"""``FewRecords.relations`` (the PostToolUse hook's read) before and after the one-pass search.

    python bench/few_records_bench.py [--lines 200000] [--runs 5]

A relations file of ``--lines`` lines as the store writes them (one relation a line among 2,000
memories, one second apart), in which:
- the hub has 60 relations saved in the file's first 1%, 10 of them strengthened and 2
  deleted near its end (as co-access links are: a later session that opens both again);
- "sparse" has 3 relations, saved early;
- "recent" has 1 relation, saved in the file's last 1%;
- "busy" has 40 relations, saved in the file's last 5% (the searches from the end read
  little each, but 2 files together: the one pass reads from the first of them on).
Each memory's ``relations()`` is timed (CPU s, ``time.process_time``, median of ``--runs``)
with this checkout's ``storage/few_records.py`` and with the one before the change, read from
git (``BEFORE``) into a module of its own, in the same run, alternated. Both must find the
same relations (the old one put relations of one second in set order: compared as sets).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import ModuleType

from rich.console import Console
from rich.table import Table

from cortexgraph.storage.json_text import dumps_compact
from cortexgraph.storage.models import Relation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_line

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "08c6f08"  # the last commit with the search per relation id
NOW = 1_760_000_000


def before_module(work: Path) -> ModuleType:
    """``storage/few_records.py`` as it was at ``BEFORE``, importable as its own module."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BEFORE}:storage/few_records.py"],
        check=True,
        capture_output=True,
    ).stdout
    path = work / "few_records_before.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("few_records_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(path: Path, lines: int) -> dict[str, str]:
    """The relations file; returns the memory ids of the table's rows by name."""
    rng = random.Random(11)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(2000)]
    named = {"hub": ids[0], "sparse": ids[1], "recent": ids[2], "busy": ids[3]}
    common = ids[4:]

    def line(rid: str, a: str, b: str, i: int, strength: float = 0.3) -> str:
        meta = {"source": "co-access", "session": f"s{i // 40}"}
        return dumps_compact(Relation(rid, a, b, "related", strength, NOW + i, meta).to_json())

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128)))

    early = {i * (lines // 100) // 64: "hub" for i in range(60)}  # spread over the first 1%
    early.update({lines // 100 + k: "sparse" for k in (1, 5, 9)})
    early[lines - lines // 200] = "recent"
    early.update({lines - lines // 20 + k * (lines // 20) // 48: "busy" for k in range(40)})
    out: list[str] = []
    hub_rels: list[tuple[str, str, int]] = []
    for i in range(lines - 12):
        a, b = rng.sample(common, 2)
        rid = new_id()
        if i in early:
            a = named[early[i]]
            if early[i] == "hub":
                hub_rels.append((rid, b, i))
        out.append(line(rid, a, b, i))
    tail = len(out) - lines // 100  # the changes to the hub's links go in the last 1%
    for k, (rid, b, i) in enumerate(hub_rels[:10]):
        out.insert(tail + 7 * k, line(rid, named["hub"], b, i, 0.4))
    for rid, _, _ in hub_rels[10:12]:
        out.insert(tail + 100, dumps_compact({"id": rid, "_deleted": True}))
    path.mkdir(parents=True, exist_ok=True)
    (path / "relations.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return named


def cpu(module: ModuleType, store: Path, memory_id: str) -> tuple[float, list[Relation]]:
    with module.FewRecords(store) as few:
        start = time.process_time()
        found: list[Relation] = few.relations(memory_id)
        return time.process_time() - start, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from cortexgraph.storage import few_records as after

    with tempfile.TemporaryDirectory(prefix="cg-few-") as tmp:
        work = Path(tmp)
        before = before_module(work)
        named = build(work / "store", args.lines)
        size = (work / "store" / "relations.jsonl").stat().st_size
        table = Table(
            title=f"FewRecords.relations, {args.lines:,} lines ({size / 1e6:.0f} MB), "
            f"CPU s, median of {args.runs}",
            caption=machine_line(),
        )
        for col in ("memory", "relations", "before", "after", "before / after"):
            table.add_column(col, justify="left" if col == "memory" else "right")
        for name, memory_id in named.items():
            times: dict[str, list[float]] = {"before": [], "after": []}
            answers = {}
            for _ in range(args.runs):
                for label, module in (("before", before), ("after", after)):
                    spent, found = cpu(module, work / "store", memory_id)
                    times[label].append(spent)
                    answers[label] = {r.id: r for r in found}
            assert answers["before"] == answers["after"], name
            old, new = (statistics.median(times[k]) for k in ("before", "after"))
            table.add_row(
                name, str(len(answers["after"])), f"{old:.4f}", f"{new:.4f}", f"{old / new:.1f}x"
            )
        Console(width=160).print(table)


if __name__ == "__main__":
    main()
