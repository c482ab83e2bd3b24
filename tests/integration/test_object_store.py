"""The store on object storage (``Memory(uri=s3://...)``) against a real S3-compatible server (SeaweedFS, the
``s3_server`` fixture): reads and writes, reset deleting every object, secrets never written, and the lease lock
keeping two processes (with separate local folders, as on two machines) apart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_store import Memory, StoreLocked
from tests.sites.seaweed import SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]

LAMP = (
    "The lighthouse lamp was converted to electricity in 1953, replacing the paraffin burner that keepers had "
    "trimmed every night since the tower opened. "
)
TIDES = "Spring tides in the harbour reach four metres above chart datum; neap tides stay under two metres. "


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_store_on_s3_reads_writes_and_reset_deletes_every_object(
    s3_server, s3_store, tmp_path, embedder, caplog
):
    uri, opts, bucket, prefix = s3_store
    caplog.set_level("DEBUG")
    mem = Memory("s3_mem", basepath=tmp_path / "a", uri=uri, storage_options=opts)
    assert mem.remote and mem.location == f"{uri}/s3_mem"
    assert not Memory.exists("s3_mem", uri=uri, storage_options=opts)
    ids = mem.add_many(
        [
            {"url": "http://h.test/lamp", "text": LAMP * 3, "last_updated": "2024-05-01"},
            {"url": "http://h.test/tides", "text": TIDES * 3},
        ]
    )
    mem.record_events([{"type": "harvest_event", "url": "http://h.test/lamp", "outcome": "stored"}])
    assert ids and Memory.exists("s3_mem", uri=uri, storage_options=opts)
    keys = s3_server.keys(bucket, prefix)
    assert any(k.startswith(f"{prefix}/s3_mem/lance/chunks.lance/") for k in keys), keys
    assert f"{prefix}/s3_mem/files/meta.json" in keys and f"{prefix}/s3_mem/files/events.jsonl" in keys
    # Nothing of the store is on local disk but the working copy of the side files.
    assert not (tmp_path / "a" / "s3_mem").exists()
    assert not list(tmp_path.rglob("*.lance"))

    # Another process elsewhere (another local folder) sees the same store.
    other = Memory("s3_mem", basepath=tmp_path / "b", uri=uri, storage_options=opts, create=False)
    assert other.count_pages() == 2 and other.count_chunks() == len(ids)
    assert [e["url"] for e in other.events()] == ["http://h.test/lamp"]
    hits = other.search("When was the lamp converted to electricity?", k=2)
    assert hits[0].url == "http://h.test/lamp" and hits[0].last_updated == "2024-05-01"
    assert other.check().ok
    stats = other.stats()
    assert stats.path == f"{uri}/s3_mem" and stats.disk_bytes > 0

    # Re-storing a page replaces its chunks (merge on object storage), and the first Memory sees it.
    other.add("http://h.test/tides", TIDES + "Storm surges add another metre in winter.")
    assert mem.page("http://h.test/tides").text.endswith("winter.")
    assert mem.check().ok

    # No secret in any object, in the local working folders or in the log.
    for key in s3_server.keys(bucket, prefix):
        assert SECRET_KEY.encode() not in s3_server.get(bucket, key), key
    assert SECRET_KEY.encode() not in _all_bytes(tmp_path)
    assert SECRET_KEY not in caplog.text and SECRET_KEY not in repr(mem._objects)

    snap = tmp_path / "snap.jsonl"
    other.snapshot(snap)
    assert SECRET_KEY.encode() not in snap.read_bytes()
    other.reset()
    assert s3_server.keys(bucket, prefix) == []
    assert not Memory.exists("s3_mem", uri=uri, storage_options=opts)
    assert not (tmp_path / "b" / ".remote").exists() or not any((tmp_path / "b" / ".remote").rglob("meta.json"))

    # The same Memory can build the store afresh.
    other.add("http://h.test/lamp", LAMP)
    assert Memory("s3_mem", basepath=tmp_path / "c", uri=uri, storage_options=opts).count_pages() == 1


def test_store_from_standard_aws_environment(s3_server, s3_store, tmp_path, embedder, monkeypatch):
    uri, opts, bucket, prefix = s3_store
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", opts["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", opts["aws_secret_access_key"])
    monkeypatch.setenv("AWS_ENDPOINT", opts["aws_endpoint"])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    mem = Memory("s3_env", basepath=tmp_path, uri=uri)
    mem.add("http://h.test/lamp", LAMP)
    assert Memory("s3_env", basepath=tmp_path / "x", uri=uri, create=False).count_pages() == 1
    mem.reset()
    assert s3_server.keys(bucket, prefix) == []


def test_local_uri_is_a_folder(tmp_path, embedder):
    mem = Memory("plain", uri=str(tmp_path / "stores"))
    mem.add("http://h.test/lamp", LAMP)
    assert not mem.remote and (tmp_path / "stores" / "plain" / "meta.json").is_file()
    assert Memory.exists("plain", uri=f"file://{tmp_path / 'stores'}")


# --- two processes -------------------------------------------------------------------------------------------

WRITER = """
import json, sys
from memory_store import Memory
uri, opts, home, who, n = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
mem = Memory("duo", basepath=home, uri=uri, storage_options=opts)
for i in range(n):
    mem.record_events([{"type": "note", "who": who, "i": i}])
"""

HOLDER = """
import json, sys, time
from memory_store import Memory
uri, opts, home = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
mem = Memory("duo", basepath=home, uri=uri, storage_options=opts)
with mem.harvest_lock():
    print("held", flush=True)
    time.sleep(120)
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    return env


def test_two_writer_processes_lose_no_update(s3_store, tmp_path):
    """Each write appends to the journal, a read-modify-write of one object: two processes with their own
    local folders (two machines) interleave 12 writes each; without mutual exclusion some would be lost."""
    uri, opts, _bucket, _prefix = s3_store
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, uri, json.dumps(opts), str(tmp_path / who), who, "12"],
            env=_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("p1", "p2")
    ]
    for p in procs:
        _out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    events = Memory("duo", basepath=tmp_path / "check", uri=uri, storage_options=opts).events()
    got = sorted((e["who"], e["i"]) for e in events)
    assert got == sorted((w, i) for w in ("p1", "p2") for i in range(12))
    for who in ("p1", "p2"):  # each process's own writes stay in order
        assert [e["i"] for e in events if e["who"] == who] == list(range(12))


def test_harvest_lease_refuses_a_second_process_until_the_holder_dies(s3_store, tmp_path):
    uri, opts, _bucket, _prefix = s3_store
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, uri, json.dumps(opts), str(tmp_path / "h")],
        env=_env(BRT_LEASE_TTL="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()
        other = Memory("duo", basepath=tmp_path / "o", uri=uri, storage_options=opts)
        # Refused while the holder lives, also after several TTLs (it renews its lease).
        for _ in range(3):
            with pytest.raises(StoreLocked, match=f"pid {holder.pid}"):
                with other.harvest_lock():
                    pass
            time.sleep(2.5)
        # A harvest is refused, a write in between still goes through (separate locks, as locally).
        other.record_events([{"type": "note", "who": "other"}])
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 20
        while True:
            try:
                with other.harvest_lock():
                    break
            except StoreLocked:
                assert time.monotonic() < deadline, "the dead holder's lease never expired"
                time.sleep(0.5)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_side_files_grow_by_parts_and_are_rewritten_whole(s3_server, s3_store, tmp_path):
    """The journal is appended to on every write: only its new bytes are uploaded (a part object), another
    process reads base + parts back byte for byte; a rewrite or parts outweighing the base fold them in."""
    from memory_store._remote import FileMirror, ObjectDir

    uri, opts, bucket, prefix = s3_store
    objects = ObjectDir(uri, "mirror", opts)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    writer, reader = FileMirror(objects, a), FileMirror(objects, b)
    journal = a / "events.jsonl"
    journal.write_bytes(b'{"n": 0}\n' * 100)
    assert writer.push() == 1
    base_keys = s3_server.keys(bucket, prefix)
    assert base_keys == [f"{prefix}/mirror/files/events.jsonl"]
    for i in range(1, 4):
        with journal.open("ab") as fh:
            fh.write(b'{"n": %d}\n' % i)
        writer.push()
    keys = s3_server.keys(bucket, prefix)
    parts = [k for k in keys if ".~parts/" in k]
    assert len(parts) == 3 and all(len(s3_server.get(bucket, k)) == 9 for k in parts), keys
    reader.pull()
    assert (b / "events.jsonl").read_bytes() == journal.read_bytes()
    # Appends past the base's size fold the parts into a new base.
    with journal.open("ab") as fh:
        fh.write(b"x" * 2000 + b"\n")
    writer.push()
    assert [k for k in s3_server.keys(bucket, prefix) if ".~parts/" in k] == []
    # A rewrite (not an append) replaces the file whole.
    journal.write_bytes(b"rewritten\n")
    writer.push()
    assert s3_server.keys(bucket, prefix) == [f"{prefix}/mirror/files/events.jsonl"]
    reader.pull()
    assert (b / "events.jsonl").read_bytes() == b"rewritten\n"
    # A deleted file is deleted remotely, and then locally at the next pull elsewhere.
    journal.unlink()
    writer.push()
    assert s3_server.keys(bucket, prefix) == []
    reader.pull()
    assert not (b / "events.jsonl").exists()
