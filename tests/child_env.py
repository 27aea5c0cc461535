"""Child processes as tests start them: the environment they get, and a hook run as Claude Code
runs one."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# What the developer's machine may have set for cortexgraph, its 1.x (LTM_) or Claude Code:
# none of it reaches a child unless the test sets it.
OURS = ("CORTEXGRAPH_", "LTM_", "CLAUDE_")


def child_env(**values: str) -> dict[str, str]:
    """This process's environment without our variables, then ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(OURS)}
    env.update(values)
    return env


def run_module(
    module: str, *args: str, env: dict[str, str], stdin: str = "", timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` from the repository root, ``stdin`` on its standard input."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def run_code(
    code: str, *args: str, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -c CODE ARGS`` from the repository root (``sys.argv[1:]`` is ``args``)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
        check=False,
    )


def run_in_process(
    main: Callable[[], object], argv: list[str], *, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """``main()`` here as a process would run it, from the repository root: ``sys.argv`` is
    ``argv``, os.environ is exactly ``env``, ``stdin`` on standard input, output captured. Its
    return value or SystemExit is the exit status, an exception a traceback on stderr and
    status 1, as in a process. A child costs ~0.2-2 s of imports on two cores; this, nothing."""
    from click.testing import CliRunner

    overlay: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    overlay.update(env)
    saved_argv, cwd, gc_on = sys.argv, Path.cwd(), gc.isenabled()
    # tempfile reads TMPDIR once per process: a TMPDIR in ``env`` is honoured as a child would.
    saved_tempdir = tempfile.tempdir
    tempfile.tempdir = env.get("TMPDIR", saved_tempdir)
    with CliRunner().isolation(input=stdin, env=overlay) as (out, err, _):
        sys.argv = argv
        os.chdir(ROOT)
        try:
            returned = main()
            code = returned if isinstance(returned, int) else 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = saved_argv
            tempfile.tempdir = saved_tempdir
            os.chdir(cwd)
            if gc_on:  # a short-lived process may turn the collector off (the hooks do)
                gc.enable()
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(argv, code, stdout, stderr)


def hook_process(
    event: str, body: dict[str, Any] | str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``python -m cortexgraph.hooks EVENT`` with the event's JSON on stdin, as Claude Code runs it."""
    stdin = body if isinstance(body, str) else json.dumps(body)
    return run_module("cortexgraph.hooks", event, env=env, stdin=stdin, timeout=60)


def hook_in_process(
    event: str, body: dict[str, Any] | str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """What ``hook_process`` does, through the hooks' ``main()`` in this process."""
    from cortexgraph.hooks.__main__ import main

    stdin = body if isinstance(body, str) else json.dumps(body)
    return run_in_process(main, ["cortexgraph-hook", event], env=env, stdin=stdin)


# A full disk, as the kernel enforces a file-size limit: a short write, then an error
# (EFBIG; SIGXFSZ ignored so the process is not killed). ``room_for(path, n)`` lets files
# grow to n bytes past ``path``'s size now; ``unlimited()`` lifts it.
_FILE_SIZE_LIMIT = """
import json, resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

def room_for(path, extra):
    limit = Path(path).stat().st_size + extra
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

def unlimited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
"""


def run_with_file_size_limit(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` (Python, with ``room_for`` and ``unlimited`` defined, ``args`` in
    ``sys.argv[1:]``) in a child; its last line of output, parsed as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMIT + textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
