"""The wheel installs one namespace, ``cortexgraph``, and lives beside other top-level packages.

cortexgraph's folders (storage/, agents/, flows/ ...) are generic names; ``agents`` is also the
import name of a widely used agents SDK. The wheel must put nothing but ``cortexgraph`` at the
top of site-packages, so installing both keeps both working.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # From the repository root whatever folder an earlier test in this worker left current, and
    # pip's own words in the failure: one fresh-clone run failed here with only "exit status 1".
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    if built.returncode != 0:
        pytest.fail(
            f"pip wheel exited {built.returncode}:\n{built.stdout[-2000:]}\n{built.stderr[-4000:]}"
        )
    return next(out.glob("cortexgraph-*.whl"))


def test_the_wheel_installs_only_the_cortexgraph_namespace(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        tops = {name.split("/")[0] for name in z.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"cortexgraph"}
    with zipfile.ZipFile(wheel) as z:  # the data files travel too
        names = set(z.namelist())
    assert "cortexgraph/activation/data/intent_classifier.json" in names
    # MiniLM's tokenizer and config: the light install builds the graph beside them (issue 35)
    assert {
        "cortexgraph/storage/minilm/tokenizer.json",
        "cortexgraph/storage/minilm/config.json",
    } <= names
    assert any(n.startswith("cortexgraph/webui/static/") for n in names)


@pytest.mark.slow
def test_the_demo_runs_beside_another_top_level_agents_package(
    wheel: Path, tmp_path: Path, prefect_harness: str
) -> None:
    """Slow by nature: a wheel built and installed, and the demo run from it. Its flow uses the
    session's Prefect server (``prefect_harness``) rather than starting one of its own."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # cortexgraph's dependencies come from the test's environment (a plain path, so its
    # editable install of this repository is not active), the wheel itself is installed fresh.
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    other = site / "agents"
    other.mkdir()
    (other / "__init__.py").write_text('NAME = "another agents SDK"\n')
    check = (
        "import agents, cortexgraph.agents as ours\n"
        "assert agents.NAME == 'another agents SDK', agents\n"
        "from cortexgraph.agents import Scheduler, DecayAnalyzer\n"
        "print(ours.__file__)\n"
    )
    out = subprocess.run(
        [str(python), "-c", check],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert str(site) in out.stdout  # the installed wheel, not this checkout
    demo = subprocess.run(
        [
            str(venv / "bin" / "cortexgraph"),
            "demo",
            "--dir",
            str(tmp_path / "demo"),
            "--no-embeddings",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env={
            "HOME": str(tmp_path),
            "PATH": "/usr/bin:/bin",
            "CORTEXGRAPH_LOG_LEVEL": "WARNING",
            "PREFECT_API_URL": prefect_harness,
        },
    )
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert (tmp_path / "demo" / "vault").is_dir()


def test_one_version_string_read_from_the_installed_metadata() -> None:
    import tomllib
    from importlib.metadata import version

    import cortexgraph

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert cortexgraph.__version__ == version("cortexgraph") == declared
