"""The wheel users install: under 40 MB, with the search model and its model card beside the weights."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from tests.helpers.paths import PYTHON, ROOT

WHEEL_LIMIT = 40 * 1024 * 1024
MODEL = "toolscout/search/model/"


def test_the_wheel_is_small_and_ships_the_model_with_its_card(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ and egg-info next to the sources it builds.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    done = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("toolscout-*.whl")
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
