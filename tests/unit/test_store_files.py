"""memory_store without the model: the import stays light, a missing store and bad ids, the journal, the two
locks (a second harvest stops at once naming the pid; other writers wait up to BRT_LOCK_TIMEOUT), model
defaults. Real files in a temp BRT_HOME; the locks are held by a second Python process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory_store import DEFAULT_MODEL, Memory, StoreLocked, StoreNotFound

REPO = Path(__file__).resolve().parents[2]


def test_import_is_light():
    code = (
        "import sys, memory_store; print(sorted(m for m in ('torch', 'lancedb', 'FlagEmbedding', "
        "'transformers', 'pyarrow', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_store_not_found_and_bad_id(brt_home):
    with pytest.raises(StoreNotFound, match="brt harvest"):
        Memory("never_harvested", create=False)
    assert not Memory.exists("never_harvested")
    for bad in ("../etc", "Upper", "a/b", "", "-x"):
        with pytest.raises(ValueError):
            Memory(bad)
    empty = Memory("empty")
    assert empty.search("anything") == [] and empty.pages() == [] and empty.count_chunks() == 0
    assert not empty.path.exists()  # nothing created by reads


def test_events_journal(brt_home):
    mem = Memory("journal")
    mem.record_events([{"type": "harvest_event", "n": 1}, {"type": "harvest_event", "n": 2}])
    with open(mem.path / "events.jsonl", "a") as fh:
        fh.write('{"type": "harvest_ev')  # a crash mid-line
    assert [e["n"] for e in mem.events()] == [1, 2]


_HOLDER = textwrap.dedent("""
    import sys, time
    from memory_store import Memory
    mem = Memory("locked", sys.argv[1])
    with mem.{lock}():
        print("held", flush=True)
        time.sleep(30)
""")


def _hold(lock: str, basepath: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER.format(lock=lock), str(basepath)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_process_cannot_take_harvest_lock(brt_home):
    base = brt_home / "memory"
    proc = _hold("harvest_lock", base)
    try:
        mem = Memory("locked", base)
        with pytest.raises(StoreLocked, match=f"being harvested by pid {proc.pid}"):
            with mem.harvest_lock():
                pass
        with pytest.raises(StoreLocked):
            mem.reset()
    finally:
        proc.kill()
        proc.wait()
    with Memory("locked", base).harvest_lock():
        pass


def test_write_lock_waits_then_times_out(brt_home, monkeypatch):
    base = brt_home / "memory"
    proc = _hold("write_lock", base)
    try:
        monkeypatch.setenv("BRT_LOCK_TIMEOUT", "0.5")
        t0 = time.monotonic()
        with pytest.raises(StoreLocked, match=str(proc.pid)):
            Memory("locked", base).record_events([{"type": "x"}])
        assert time.monotonic() - t0 >= 0.5
    finally:
        proc.kill()
        proc.wait()
    Memory("locked", base).record_events([{"type": "x"}])
    assert os.path.exists(base / "locked" / "events.jsonl")


def test_bge_query_instruction_and_min_similarities():
    from memory_store.embeddings import BGE_QUERY_INSTRUCTION, _query_instruction_for, default_min_similarity

    assert _query_instruction_for("BAAI/bge-small-en-v1.5") == BGE_QUERY_INSTRUCTION
    assert _query_instruction_for("BAAI/bge-m3") is None
    assert _query_instruction_for(DEFAULT_MODEL) is None
    assert default_min_similarity(DEFAULT_MODEL) == 0.35
