"""``memory_store._lazy_imports.import_lancedb`` from several threads at once, in a fresh interpreter: every
thread gets the whole module (a harvest's first store writes and reads may open LanceDB from several threads;
found on a store on object storage, where a thread got the half-imported module without ``connect``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import threading
import time
from memory_store._lazy_imports import import_lancedb

found = []

def go(delay):
    time.sleep(delay)  # the later threads arrive while the first one is still importing
    found.append(hasattr(import_lancedb(), "connect"))

threads = [threading.Thread(target=go, args=(0.05 * i,)) for i in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(found))
"""


def test_import_lancedb_from_threads_at_once_gives_the_whole_module():
    for _ in range(2):  # a race: more than one fresh interpreter
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
        )
        assert out.stdout.strip() == str([True] * 6), out.stdout + out.stderr
