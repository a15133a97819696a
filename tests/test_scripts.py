"""A newcomer's first steps: the README opens with what toolscout is, how to install it and the two
set-up commands, before any protocol detail; and on a machine without npm, `scripts/test` says at once
how to get it and that only the full tier needs it, before minutes of pip, while `scripts/test --quick`
goes on without it.

Each run is the real script, copied into a tree of its own (with the npm lockfile and no installed
peers, as in a fresh clone) and run by bash with a PATH that holds only what the test puts there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers.paths import ROOT

BASH = shutil.which("bash") or "/bin/bash"


def fresh_clone(root: Path) -> Path:
    """The scripts and the npm lockfile, as a clone has them before its first `scripts/test`."""
    (root / "scripts").mkdir(parents=True)
    for name in ("setup", "test"):
        shutil.copy2(ROOT / "scripts" / name, root / "scripts" / name)
    (root / "tools" / "npm").mkdir(parents=True)
    shutil.copy2(ROOT / "tools" / "npm" / "package-lock.json", root / "tools" / "npm" / "package-lock.json")
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    return root


def without_npm(root: Path) -> dict[str, str]:
    """A PATH with the few commands the scripts use before their first step, and neither npm nor Python."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for command in ("bash", "dirname", "sha256sum", "cut", "cat"):
        found = shutil.which(command)
        assert found is not None, command
        (bin_dir / command).symlink_to(found)
    return {"PATH": str(bin_dir), "HOME": str(root / "home")}


def run_script(clone: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(clone / "scripts" / "test"), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_full_tier_without_npm_says_how_to_install_it_before_installing_anything(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "clone")
    done = run_script(clone, without_npm(tmp_path))
    assert done.returncode == 1, done.stderr
    message = done.stderr
    assert "npm is not installed" in message, message
    assert "sudo apt-get install npm" in message and "brew install node" in message, message
    assert "scripts/test --quick" in message, message
    # Said first: nothing was set up before it (no .venv, no pip, no npm test peers).
    assert not (clone / ".venv").exists()
    assert not (clone / "tools" / "npm" / "node_modules").exists()
    assert "setup:" not in message, message


def test_the_quick_tier_goes_on_without_npm(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path / "clone")
    done = run_script(clone, without_npm(tmp_path), "--quick")
    # It reached the set-up, which stops here only because this PATH has no Python either.
    assert "npm" not in done.stderr, done.stderr
    assert "toolscout needs Python 3.11 or newer" in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr


def test_the_readme_opens_with_what_it_is_how_to_install_it_and_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_detail = readme.index("tools/list")  # the first protocol detail
    opening = readme[:first_detail]
    assert opening.startswith("# toolscout\n\ntoolscout is an MCP gateway"), opening[:200]
    for words in ("## Install", "pipx install .", "uv tool install .", "pipx install dist/toolscout-*.whl"):
        assert words in opening, words
    for command in ("./scripts/demo", "./scripts/test"):
        assert f"\n{command}   # set-up + " in opening, command
    assert opening.index("## Install") < opening.index("./scripts/demo")
