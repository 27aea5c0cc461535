"""The long view: LoCoMo conversations lived through over months, consolidated every night.

    python bench/lifecycle.py DATA [--json OUT] [--limit N] [--configs never_forget,no_gc,defaults]
    python bench/lifecycle.py ../shared/data/locomo_dev/locomo_dev.json --limit 1

Each conversation is replayed at its sessions' own dates on a simulated clock
(bench/_lifecycle_replay.py says exactly how): every turn goes through the Claude Code plugin's
UserPromptSubmit hook (what it recalls is recorded as used) and is then saved through the Python
API at its time; the consolidation flow runs at 03:00 every simulated night; 30 simulated days
after the last session every question is asked through ``search_unified``. One row per
configuration:

- ``never_forget``: no consolidation, no gc;
- ``no_gc``: the consolidation flow every night (decay, cluster, merge, promote, relations), gc off;
- ``defaults``: the same with the nightly deployment's gc (``gc: archive``, prefect.yaml).

Scoring is the shared scorer (../shared/bench/locomo_retrieval.py, R@5 and MRR over categories
1-4) with locomo_consolidation.py's crediting (a merged memory counts as each of its sources),
both imported from the shared folder at run time; no LoCoMo text enters this repository.
``--hook-process N`` also runs the real ``cortexgraph-hook UserPromptSubmit`` process on N of
the prompts that recalled and checks it injects what the in-process handler injects.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "bench"
DEV = ROOT.parent / "shared" / "data" / "locomo_dev" / "locomo_dev.json"
sys.path.insert(0, str(HERE))

from _lifecycle_replay import (  # noqa: E402
    CONFIGS,
    DAYS_AFTER,
    ID_RE,
    HookUser,
    Outcome,
    nights_between,
    replay,
    turn_times,
)
from _machine import machine_line  # noqa: E402

COLUMNS = ("R@5", "MRR", "active", "archived", "merged away", "notes", "relations", "time")


def load_shared(name: str, folder: Path = SHARED) -> ModuleType:
    """A module of the shared bench folder, imported by path (its folder on sys.path)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {folder / name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(
    scorer: ModuleType, convs: list[dict[str, Any]], outs: list[Outcome], archived: bool = False
) -> dict[str, float]:
    """R@5 and MRR over every question, as the shared scorer computes them (``archived``: of
    the diagnostic search that includes archived memories)."""
    rankings = {
        qid: r for o in outs for qid, r in (o.with_archived if archived else o.rankings).items()
    }
    rows = [
        {**q, "scores": scorer.score_one(rankings.get(q["qid"], [])[:50], q["gold"], [5, 10])}
        for c in convs
        for q in c["questions"]
    ]
    overall = scorer.aggregate(rows, ["R@5", "MRR"]).get("overall", {"R@5": 0.0, "MRR": 0.0})
    return {"r_at_5": overall["R@5"], "mrr": overall["MRR"], "questions": len(rows)}


def row_for(
    name: str, outs: list[Outcome], metrics: dict[str, float], diagnosis: dict[str, float]
) -> dict[str, Any]:
    gold: dict[str, int] = {}
    for o in outs:
        for k, v in o.gold_where.items():
            gold[k] = gold.get(k, 0) + v
    return {
        "name": name,
        "r_at_5": round(metrics["r_at_5"], 4),
        "mrr": round(metrics["mrr"], 4),
        "questions": metrics["questions"],
        "turns": sum(o.turns for o in outs),
        "active": sum(o.active for o in outs),
        "archived": sum(o.archived for o in outs),
        "merged_away": sum(o.merged_away for o in outs),
        "promoted": sum(o.promoted for o in outs),
        "notes": sum(o.notes for o in outs),
        "relations": sum(o.relations for o in outs),
        "nights": sum(o.nights for o in outs),
        "hook_recalls": sum(o.recalls for o in outs),
        "uses": sum(o.used for o in outs),
        "gold_turns_at_end": gold,
        "r_at_5_archived_searched": round(diagnosis["r_at_5"], 4),
        "seconds": round(sum(o.seconds for o in outs), 1),
    }


def keep_rankings(home: Path, out: Outcome) -> None:
    """``--keep``: each question's credited ranking beside the store it came from."""
    body = {"rankings": out.rankings, "with_archived": out.with_archived}
    (home / "rankings.json").write_text(json.dumps(body) + "\n", "utf-8")


def check_hook_process(user: HookUser, n: int) -> tuple[int, int]:
    """The real hook process on ``n`` prompts that recalled, against the in-process handler
    at the same (wall-clock) time: (same ids, asked)."""
    hook = Path(sys.executable).parent / "cortexgraph-hook"
    same = 0
    for prompt, _ in user.samples[:n]:
        payload = json.dumps(
            {
                "hook_event_name": "UserPromptSubmit",
                "session_id": user.session,
                "cwd": str(user.project_dir),
                "prompt": prompt,
            }
        )
        proc = subprocess.run(
            [str(hook), "UserPromptSubmit"],
            input=payload,
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=60,
        )
        got = ID_RE.findall(proc.stdout)
        now = time.time()
        want = user.injected(prompt, now)
        same += int(list(dict.fromkeys(got)) == want)
    return same, min(n, len(user.samples))


def print_table(rows: list[dict[str, Any]], console: Any, title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    for c in ("configuration", *COLUMNS):
        table.add_column(c, justify="left" if c == "configuration" else "right")
    for r in rows:
        turns = max(r["turns"], 1)
        table.add_row(
            r["name"],
            f"{r['r_at_5']:.3f}",
            f"{r['mrr']:.3f}",
            f"{r['active']} ({r['active'] / turns:.0%})",
            str(r["archived"]),
            str(r["merged_away"]),
            str(r["notes"]),
            str(r["relations"]),
            f"{r['seconds']:.0f} s",
        )
    console.print(table)


def run_one(
    progress: Any,
    name: str,
    conv: dict[str, Any],
    home: Path,
    crediting: ModuleType,
    days_after: float,
) -> tuple[Outcome, HookUser]:
    """One conversation under one configuration, with its own progress bar."""
    times = turn_times(conv["memories"])
    nights = len(nights_between(times[0], times[-1] + days_after * 86_400))
    steps = len(conv["memories"]) + (nights if CONFIGS[name].consolidate else 0) + 1
    label = f"{name} {conv['id']}"
    task = progress.add_task(label, total=steps)
    counts = {"night": 0, "turn": 0}

    def tick(what: str) -> None:
        counts[what] = counts.get(what, 0) + 1
        progress.update(
            task,
            advance=1,
            description=f"{label}: {counts['turn']} turns, {counts['night']} nights",
        )

    return replay(conv, CONFIGS[name], home, crediting, tick, days_after)


def measure(
    names: list[str],
    convs: list[dict[str, Any]],
    scorer: ModuleType,
    crediting: ModuleType,
    args: argparse.Namespace,
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """Every configuration over every conversation: the rows, and the hook process checks."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    rows: list[dict[str, Any]] = []
    hook_checks: list[tuple[int, int]] = []
    with tempfile.TemporaryDirectory(prefix="cortexgraph-lifecycle-") as scratch:
        tmp = args.keep or scratch
        os.environ.setdefault("PREFECT_HOME", str(Path(tmp) / "prefect-home"))
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        ) as progress:
            for name in names:
                outs: list[Outcome] = []
                for c in convs:
                    home = Path(tmp) / f"{name}-{c['id']}"
                    out, user = run_one(progress, name, c, home, crediting, args.days_after)
                    outs.append(out)
                    if args.keep:
                        keep_rankings(Path(args.keep) / f"{name}-{c['id']}", out)
                    if args.hook_process and name == names[0]:
                        hook_checks.append(check_hook_process(user, args.hook_process))
                metrics = score(scorer, convs, outs)
                rows.append(row_for(name, outs, metrics, score(scorer, convs, outs, True)))
    return rows, hook_checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", default=str(DEV), help="a LoCoMo-format JSON file")
    ap.add_argument("--json", dest="json_out", help="write the rows here")
    ap.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="rows, comma-separated")
    ap.add_argument(
        "--hook-process",
        type=int,
        default=3,
        metavar="N",
        help="check the real hook process on N recalling prompts (0: skip)",
    )
    ap.add_argument(
        "--days-after",
        type=float,
        default=DAYS_AFTER,
        help="ask the questions this many simulated days after the last session",
    )
    ap.add_argument(
        "--keep",
        metavar="DIR",
        help="keep every store (DIR/<config>-<conversation>) and its rankings; outside the repo",
    )
    ap.add_argument("--shared", default=str(SHARED), help="the shared bench folder")
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or not names:
        ap.error(f"unknown configuration(s) {unknown}; choose from {', '.join(CONFIGS)}")

    from cortexgraph.process_env import prepare_process

    # The agents' INFO lines (one per agent per night) would bury the progress bars.
    os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "")
    prepare_process()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    shared_dir = Path(args.shared)
    scorer = load_shared("locomo_retrieval", shared_dir)
    crediting = load_shared("locomo_consolidation", shared_dir)
    convs, _ = scorer.load_locomo(args.data, [1, 2, 3, 4])
    if args.limit:
        convs = convs[: args.limit]
    # ...and the flow raises their level to INFO: they still reach the run log, not the console.
    agents_log = logging.getLogger("cortexgraph.agents")
    propagate, agents_log.propagate = agents_log.propagate, False
    try:
        rows, hook_checks = measure(names, convs, scorer, crediting, args)
    finally:
        agents_log.propagate = propagate
    from rich.console import Console

    print_table(
        rows,
        Console(width=None if sys.stdout.isatty() else 120),
        f"the long view: search_unified {args.days_after:g} days after the last session",
    )
    print(
        f"{len(convs)} conversation(s) of {args.data}; {rows[0]['questions']} questions; "
        f"{rows[0]['turns']} turns"
    )
    for r in rows:
        print(
            f"  {r['name']}: {r['nights']} nights, the hook recalled on {r['hook_recalls']} "
            f"prompts ({r['uses']} uses); gold turns at the end: {r['gold_turns_at_end']}; "
            f"R@5 with archived memories searched (store.search, status=None): "
            f"{r['r_at_5_archived_searched']:.3f}"
        )
    if hook_checks:
        same, asked = sum(s for s, _ in hook_checks), sum(a for _, a in hook_checks)
        print(
            f"  hook process vs in-process handler: {same} of {asked} prompts injected the "
            "same memories"
        )
    print(f"machine: {machine_line()}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"rows": rows}, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
