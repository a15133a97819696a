"""The search package is imported by one thread at a time, whichever thread asks first.

The index imports the search package in a worker thread while the event loop goes on; smart mode's
engine, built on the event loop's thread, needs `search.text` too. Python locks each module on its
own, so the two imports could each hold a lock the other waits for, and Python then fails one of
them: a gateway in smart mode died at start this way on a loaded machine. The test pauses the
worker's import part-way, starts the smart engine in another thread and checks that every module of
the search package was still imported by the worker: the second thread waited for the first.
"""

from __future__ import annotations

import json
import subprocess

from tests.helpers.paths import PYTHON, ROOT

SCRIPT = """
import json, sys, threading

paused, release = threading.Event(), threading.Event()
importers = {}


class Recorder:
    # Notes which thread loads each module of the search package, and holds the index's import
    # part-way (inside the package, before its lexical backend) until the test lets it go.
    def find_spec(self, name, path=None, target=None):
        thread = threading.current_thread().name
        if name.startswith("toolscout.search"):
            importers.setdefault(name, thread)
        if name == "toolscout.search.bm25" and thread == "index":
            paused.set()
            release.wait(60)
        return None


sys.meta_path.insert(0, Recorder())

from toolscout.gateway.core import Gateway
from toolscout.gateway.index import build_backend
from toolscout.modes.smart import SmartDiscovery

assert "toolscout.search" not in sys.modules, "the search package must be imported lazily"
failures = []


def engine():
    try:
        SmartDiscovery(Gateway([]))
    except BaseException as exc:
        failures.append(repr(exc))


index = threading.Thread(target=build_backend, args=("bm25",), name="index")
index.start()
assert paused.wait(60), "the index never started importing the search package"
smart = threading.Thread(target=engine, name="smart")
smart.start()
# Without the shared lock the engine imports search.text itself, at once; with it, it waits for
# the index's import, which stays paused until this bounded wait ends.
smart.join(2)
release.set()
index.join(60)
smart.join(60)
print(json.dumps({"importers": importers, "failures": failures}))
"""


def test_the_smart_engine_waits_for_the_search_package_the_index_is_importing() -> None:
    done = subprocess.run([PYTHON, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["failures"] == []
    assert "toolscout.search.text" in report["importers"]
    assert set(report["importers"].values()) == {"index"}, report["importers"]
