"""The wheel users install: under 40 MB, with the search model and its model card beside the weights;
and the README's installs without a clone's test tools (`uv tool install`, `pipx install`), each into
a home of its own, from which the installed `toolscout` answers `--version` and runs the demo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import toolscout
from tests.helpers.paths import PYTHON, ROOT

WHEEL_LIMIT = 40 * 1024 * 1024
MODEL = "toolscout/search/model/"
INSTALL_TIMEOUT = 300
"""Seconds a build or an install may take: on a cold package cache it downloads every dependency."""
DEMO_TIMEOUT = 120
TEST_TIMEOUT = 2 * INSTALL_TIMEOUT + 3 * DEMO_TIMEOUT
"""Seconds for a whole test: the suite's usual bound is too short for a build and an install on a cold
cache, each already bounded by INSTALL_TIMEOUT (the wheel is built in the first test's set-up)."""


def source_tree(into: Path) -> Path:
    """A copy of what a clone builds from: setuptools writes build/ and egg-info next to the sources it
    builds, which must not land in the working tree."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, into / name)
    shutil.copytree(ROOT / "src", into / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from the sources, as a release would ship it."""
    where = tmp_path_factory.mktemp("wheel")
    source = source_tree(where / "source")
    done = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(where / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (built,) = (where / "dist").glob("toolscout-*.whl")
    return built


@pytest.mark.timeout(TEST_TIMEOUT)
def test_the_wheel_is_small_and_ships_the_model_with_its_card(wheel: Path) -> None:
    assert wheel.stat().st_size < WHEEL_LIMIT, f"{wheel.stat().st_size / 2**20:.1f} MB"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for part in ("embeddings.npy", "tokenizer.json", "config.json", "README.md", "LICENSE"):
            assert MODEL + part in names, part
        card = archive.read(MODEL + "README.md").decode("utf-8")
        config = json.loads(archive.read(MODEL + "config.json"))
    # The card says what the weights were trained on and under which licences.
    for words in ("all-MiniLM-L6-v2", "Apache-2.0", "Provenance", "Licence"):
        assert words in card, words
    assert config["format"] == "toolscout-static-embedder/1"


def user_cache_home() -> str:
    """The developer's own cache directory, where uv and pip keep downloaded packages: an install into
    a fresh home still reuses them instead of downloading every dependency again."""
    return os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")


def fresh_home(root: Path) -> dict[str, str]:
    """An environment with an empty home, no virtual environment active, and no `toolscout` of this
    working tree's on PATH: what the installed command runs with must come from its install."""
    home = root / "home"
    home.mkdir()
    ours = {str(Path(PYTHON).parent), str(ROOT / ".venv" / "bin")}
    path = [part for part in os.environ.get("PATH", "").split(os.pathsep) if part and part not in ours]
    inherited = {
        name: value
        for name, value in os.environ.items()
        if name not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PATH", "HOME"} and not name.startswith("XDG_")
    }
    return {
        **inherited,
        "HOME": str(home),
        "PATH": os.pathsep.join(path),
        "XDG_CACHE_HOME": user_cache_home(),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_BIN_HOME": str(home / ".local" / "bin"),
        # The tests' own: the audit log and the local socket stay out of the developer's (conftest.py).
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
        # Never a Python of uv's own download: the one given with --python.
        "UV_PYTHON_DOWNLOADS": "never",
        "COLUMNS": "200",
        "TERM": "dumb",
    }


def uv_tool_install(what: Path, root: Path) -> tuple[Path, dict[str, str]]:
    """`uv tool install WHAT` into a fresh home; the installed `toolscout` and the environment."""
    env = fresh_home(root)
    env["UV_TOOL_DIR"] = str(root / "uv-tools")
    env["UV_TOOL_BIN_DIR"] = str(root / "bin")
    command = [PYTHON, "-m", "uv", "tool", "install", "--python", PYTHON, str(what)]
    installed(command, env, root)
    return root / "bin" / "toolscout", env


def pipx_install(what: Path, root: Path) -> tuple[Path, dict[str, str]]:
    """`pipx install WHAT` into a fresh home; the installed `toolscout` and the environment."""
    env = fresh_home(root)
    env["PIPX_HOME"] = str(root / "pipx")
    env["PIPX_BIN_DIR"] = str(root / "bin")
    env["PIPX_MAN_DIR"] = str(root / "man")
    command = [PYTHON, "-m", "pipx", "install", "--python", PYTHON, str(what)]
    installed(command, env, root)
    return root / "bin" / "toolscout", env


def installed(command: list[str], env: dict[str, str], root: Path) -> None:
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"


Installer = Callable[[Path, Path], tuple[Path, dict[str, str]]]


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize(
    ("install", "source"),
    [
        pytest.param(uv_tool_install, "wheel", id="uv-tool-from-wheel"),
        pytest.param(pipx_install, "clone", id="pipx-from-clone"),
    ],
)
def test_an_install_without_the_test_tools_runs_the_demo(
    install: Installer, source: str, wheel: Path, tmp_path: Path
) -> None:
    what = wheel if source == "wheel" else source_tree(tmp_path / "clone")
    root = tmp_path / "installed"
    root.mkdir()
    command, env = install(what, root)

    # The command is the install's own: a script in the environment the installer made (both link
    # it onto PATH from there), whose Python imports toolscout from that environment, not from
    # this working tree.
    script = command.resolve()
    assert script.is_relative_to(root.resolve()), script
    python = script.parent / "python"
    where = subprocess.run(
        [str(python), "-c", "import toolscout; print(toolscout.__file__)"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
        check=True,
    )
    assert Path(where.stdout.strip()).resolve().is_relative_to(root.resolve()), where.stdout

    version = subprocess.run(
        [str(command), "--version"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
        check=False,
    )
    assert (version.returncode, version.stdout.strip()) == (0, toolscout.__version__), version.stderr

    # The README's first try: a real MCP client, the gateway and the four demo servers, all run from
    # the install (the servers, the sample files and the search model are the package's own).
    demo = subprocess.run(
        [str(command), "demo"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    for server in ("notes", "units", "text", "files"):
        assert f"- {server} [connected]" in demo.stdout, demo.stdout
    assert "26.2 mi = 42.1648128 km" in demo.stdout, demo.stdout
