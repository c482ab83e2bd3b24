"""memory_store: real model, real LanceDB in a temp BRT_HOME (what needs no model: tests/unit/test_store_files.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memory_store import (
    DEFAULT_MODEL,
    Hit,
    Memory,
    ModelMismatch,
    PageInput,
)
from memory_store.embeddings import resolve_model_name

REPO = Path(__file__).resolve().parents[2]

CLS = (
    "Cumulative Layout Shift (CLS) measures visual stability. To minimise layout shift, always include width "
    "and height size attributes on your images and video elements, or reserve the required space with CSS "
    "aspect-ratio boxes."
)
LCP = (
    "Largest Contentful Paint (LCP) reports the render time of the largest image or text block visible "
    "in the "
    "viewport. A good LCP score is 2.5 seconds or less."
)
INP = (
    "Interaction to Next Paint (INP) assesses responsiveness: it observes the latency of all click, tap and "
    "keyboard interactions. Break up long tasks to keep the main thread free."
)
FONTS = "Web fonts can cause a flash of invisible text; use font-display swap to show fallback text at once."


def long_page(topic: str, n: int = 40) -> str:
    """A page long enough to give several chunks; paragraph i mentions its index."""
    return "\n\n".join(
        f"Section {i} about {topic}. This paragraph number {i} discusses detail {i} of {topic} "
        "in some depth. "
        f"It has a second sentence with more words about item {i}. And a third one closes paragraph {i}."
        for i in range(n)
    )


def chunk_rows(mem: Memory) -> dict[str, dict]:
    return {r["id"]: r for r in mem.chunks(include_vectors=False)}


def test_embeddings_match_sentence_transformers(embedder):
    from sentence_transformers import SentenceTransformer

    texts = [CLS, LCP, "short", INP + " " + LCP * 6]  # the last one is truncated at 256 tokens
    ours = embedder.embed_documents(texts)
    assert ours.dtype == np.float32 and ours.shape == (4, 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    st = SentenceTransformer(str(embedder.path), device="cpu")
    ref = st.encode(texts, normalize_embeddings=True)
    cos = (ours * ref).sum(axis=1)
    assert cos.min() > 0.999, cos


def test_embedder_basics(embedder):
    assert embedder.name == DEFAULT_MODEL
    assert embedder.dim == 384 and embedder.max_tokens == 256
    assert embedder.count_tokens("hello world") == 2
    assert embedder.query_instruction is None  # MiniLM has no query instruction
    assert resolve_model_name(None) == resolve_model_name("all-MiniLM-L6-v2") == DEFAULT_MODEL
    before = embedder.texts_embedded
    q = embedder.embed_queries(["hello"])
    assert q.shape == (1, 384) and embedder.texts_embedded == before + 1


def test_unknown_model_is_clear_error():
    from memory_store import EmbeddingModelError, get_embedder

    with pytest.raises(EmbeddingModelError, match="not found"):
        get_embedder("no-such-org/no-such-model")


def test_add_search_round_trip(brt_home, embedder):
    mem = Memory("cwv")
    assert mem.path == brt_home / "memory" / "cwv"
    ids = mem.add("https://web.dev/cls", CLS, last_updated="2025-09-14", title="CLS")
    mem.add_many(
        [
            {"url": "https://web.dev/lcp", "text": LCP, "last_updated": "2025-01-02"},
            PageInput(url="https://web.dev/inp", text=INP),
        ]
    )
    assert len(ids) == 1 and ids[0].startswith("sha256:")
    hits = mem.search("Best practices to minimise CLS layout shift", k=3)
    assert [isinstance(h, Hit) for h in hits] == [True] * 3
    top = hits[0]
    assert top.id == ids[0] and top.metadata["url"] == "https://web.dev/cls"
    assert top.metadata["last_updated"] == "2025-09-14" and top.metadata["title"] == "CLS"
    assert top.metadata["charter_id"] == "cwv" and top.metadata["tokens"] > 10
    assert top.text == CLS and top.matched_via == "vector+bm25"  # default: hybrid, found by both sides
    vec = mem.search("Best practices to minimise CLS layout shift", k=3, mode="vector", mmr_lambda=None)
    assert vec[0].score >= vec[1].score >= vec[2].score and {h.matched_via for h in vec} == {"vector"}
    assert top.score > mem.default_min_similarity == 0.35
    assert mem.search("minimise layout shift", k=5, min_similarity=0.99) == []
    only = mem.search("layout shift", k=5, only_ids=[hits[-1].id])
    assert [h.id for h in only] == [hits[-1].id]
    # no concept index yet: a subtree search falls back to the whole store and says so
    routed = mem.search("Best practices to minimise CLS layout shift", k=3, subtree="Performance > CWV")
    assert [h.id for h in routed] == [h.id for h in hits] and {h.matched_via for h in routed} == {"fallback"}
    assert mem.count_pages() == 3 and mem.count_chunks() == 3
    assert mem.has_page("https://web.dev/lcp") and not mem.has_page("https://web.dev/nope")
    st = mem.stats()
    assert (st.pages, st.chunks, st.model, st.dim) == (3, 3, DEFAULT_MODEL, 384)
    assert st.disk_bytes > 0 and st.last_write
    # reopened by another instance: model from the store, no explicit model needed
    again = Memory("cwv", create=False)
    assert again.model_name == DEFAULT_MODEL and again.split_algo == "sliding_254_50"


def test_snippet_is_cut_at_word_boundary(brt_home, embedder):
    mem = Memory("snip")
    mem.add("https://a.test/x", long_page("fonts", 3))
    hit = mem.search("fonts", k=1)[0]
    assert len(hit.snippet) <= 301 and hit.snippet.endswith("…")
    assert hit.text.replace("\n\n", " ").startswith(hit.snippet[:-1])


def test_readd_replaces_chunks_and_embeds_only_changes(brt_home, embedder):
    mem = Memory("readd")
    url = "https://site.test/page"
    text = long_page("images")
    ids1 = mem.add(url, text, last_updated="2025-01-01")
    assert len(ids1) > 3
    assert set(chunk_rows(mem)) == set(ids1)

    # unchanged re-add: nothing embedded
    before = embedder.texts_embedded
    assert mem.add(url, text, last_updated="2025-01-01") == ids1
    assert embedder.texts_embedded == before

    # edit the last paragraph only: only the last chunk(s) change
    edited = text.rsplit("\n\n", 1)[0] + "\n\nA completely different closing paragraph about video embeds."
    before = embedder.texts_embedded
    ids2 = mem.add(url, edited, last_updated="2025-02-02")
    changed = set(ids2) - set(ids1)
    assert 1 <= len(changed) <= 2
    assert embedder.texts_embedded - before == len(changed)
    rows = chunk_rows(mem)
    assert set(rows) == set(ids2)  # nothing stale, nothing duplicated
    assert mem.count_chunks() == len(ids2)
    assert {r["last_updated"] for r in rows.values()} == {"2025-02-02"}
    assert mem.page(url).chunk_ids == ids2
    assert mem.count_pages() == 1


def test_shared_chunk_stored_once_and_repointed(brt_home, embedder):
    mem = Memory("shared")
    a, b, c = "https://x.test/a", "https://x.test/b", "https://x.test/c"
    (fid,) = mem.add(a, FONTS)
    before = embedder.texts_embedded
    mem.add_many([{"url": b, "text": FONTS}, {"url": c, "text": FONTS.replace(" ", "  ")}])
    assert embedder.texts_embedded == before  # same chunk: not embedded again
    rows = chunk_rows(mem)
    assert list(rows) == [fid]
    assert rows[fid]["url"] == a and rows[fid]["also_seen_at"] == [b, c]

    # page a drops the shared chunk: b is promoted
    mem.add(a, LCP)
    rows = chunk_rows(mem)
    assert rows[fid]["url"] == b and rows[fid]["also_seen_at"] == [c]
    assert mem.count_chunks() == 2

    mem.delete_page(c)
    assert chunk_rows(mem)[fid]["also_seen_at"] == []
    mem.add(b, INP)  # last holder drops it: deleted
    rows = chunk_rows(mem)
    assert fid not in rows and len(rows) == 2
    assert {r["url"] for r in rows.values()} == {a, b}
    assert mem.delete_page("https://x.test/none") is False


def test_repair_sweep_removes_orphans(brt_home, embedder):
    mem = Memory("repair")
    mem.add("https://r.test/a", CLS)
    # simulate a crash after the chunk upsert and before the page row was written
    vec = embedder.embed_documents([LCP])
    row = {
        "id": "sha256:" + "0" * 64,
        "charter_id": "repair",
        "url": "https://r.test/ghost",
        "selector": "body",
        "text": LCP,
        "tokens": 30,
        "split_algo": "sliding_254_50",
        "last_updated": None,
        "created_at": "2025-01-01T00:00:00Z",
        "title": None,
        "also_seen_at": [],
    }
    mem._store.upsert_chunks([row], vec)
    assert mem.count_chunks() == 2
    Memory("repair").repair()
    assert mem.count_chunks() == 1


def _full_plan(mem: Memory):
    """What the full reconcile (``Memory.repair``) would change in ``mem``: nothing when every write kept the
    chunk rows in line with the pages."""
    from memory_store._writes import _plan_rows

    plan = _plan_rows(mem._store, mem.charter_id, {}, {}, set(), None)
    return plan.new_rows, plan.updates, plan.stale


def test_writes_that_touch_only_their_rows_keep_the_store_as_a_full_reconcile_would(brt_home, embedder):
    """Pages sharing chunks, stored, stored again changed and removed in a random order: after every write the
    full reconcile finds nothing to change (the rows a write reads and changes are all the rows it touches)."""
    import random

    mem = Memory("touched")
    rng = random.Random(7)
    paragraphs = [CLS, LCP, INP, FONTS] + [f"Paragraph {i} about harbour tides and lamp {i} in the bay." for i in
                                           range(6)]
    urls = [f"https://t.test/{i}" for i in range(6)]
    for step in range(24):
        url = rng.choice(urls)
        if step % 5 == 4 and mem.has_page(url):
            assert mem.delete_page(url)
        elif step % 7 == 6:  # two pages in one write, one of them maybe stored already
            pages = [{"url": u, "text": "\n\n".join(rng.sample(paragraphs, 3))} for u in rng.sample(urls, 2)]
            mem.add_many(pages)
        else:
            mem.add(url, "\n\n".join(rng.sample(paragraphs, rng.randint(1, 3))))
        assert _full_plan(mem) == ([], {}, []), f"step {step}"
        assert mem.check().ok, (step, mem.check().problems)
        held = {cid for page in mem.pages() for cid in page.chunk_ids}
        assert held == set(chunk_rows(mem)), f"step {step}"


def test_a_write_cut_short_is_repaired_by_the_next_write(brt_home, embedder, monkeypatch):
    """A write that fails after its chunk rows and before its page rows (a crash, a full disk) leaves the store
    marked; the next write, elsewhere in the store, brings every row back in line first."""
    from memory_store import MemoryStoreError
    from memory_store.store import LanceStore

    a, b, c = "https://x.test/a", "https://x.test/b", "https://x.test/c"
    mem = Memory("cut_short")
    (fid,) = mem.add(a, FONTS)

    def fail(self, rows):
        raise MemoryStoreError("disk full (simulated)")

    with monkeypatch.context() as patch:
        patch.setattr(LanceStore, "upsert_pages", fail)
        with pytest.raises(MemoryStoreError):
            mem.add_many([{"url": b, "text": FONTS}, {"url": "https://x.test/d", "text": LCP}])
    rows = chunk_rows(mem)
    assert rows[fid]["also_seen_at"] == [b] and len(rows) == 2  # the chunk rows went in, the page row did not
    meta = json.loads((mem.path / "meta.json").read_text())
    assert meta.get("write_pending")
    problems = mem.check().problems
    assert any("cut short" in p for p in problems) and any("names" in p and b in p for p in problems), problems

    mem.add(c, INP)  # another page: the write first repairs what the failed one left
    rows = chunk_rows(mem)
    assert rows[fid]["url"] == a and rows[fid]["also_seen_at"] == []
    held = {cid for page in mem.pages() for cid in page.chunk_ids}
    assert held == set(rows) and len(rows) == 2
    assert "write_pending" not in json.loads((mem.path / "meta.json").read_text())
    assert _full_plan(mem) == ([], {}, [])
    assert mem.check().ok, mem.check().problems


def test_model_mismatch(brt_home, embedder):
    mem = Memory("mm")
    mem.add("https://m.test/", CLS)
    assert Memory("mm", model="all-MiniLM-L6-v2").model_name == DEFAULT_MODEL
    with pytest.raises(ModelMismatch, match="BAAI/bge-small-en-v1.5"):
        Memory("mm", model="BAAI/bge-small-en-v1.5")
    meta_path = mem.path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["dim"] = 768
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ModelMismatch, match="768"):
        Memory("mm").search("anything")


def test_snapshot_manifest_and_sha(brt_home, embedder, tmp_path):
    mem = Memory("snap")
    mem.add(
        "https://s.test/final",
        CLS,
        title="CLS",
        last_updated="2025-09-14",
        requested_url="https://s.test/a",
        status=200,
        fetched_at="2025-10-01T00:00:00Z",
        last_updated_source="meta",
    )
    mem.add("https://s.test/b", LCP)
    events = [
        {"type": "harvest_event", "url": "https://s.test/a", "outcome": "stored"},
        {"type": "harvest_event", "url": "https://s.test/z", "outcome": "blocked"},
    ]
    out = tmp_path / "snap.jsonl"
    manifest = mem.snapshot(out, extra_records=events)
    lines = out.read_bytes().split(b"\n", 1)
    first = json.loads(lines[0])
    assert first == manifest
    assert manifest["counts"] == {"page": 2, "chunk": 2, "harvest_event": 2}
    assert manifest["sha256"] == hashlib.sha256(lines[1]).hexdigest()
    assert manifest["embedding_model"] == DEFAULT_MODEL and manifest["embedding_dim"] == 384
    records = [json.loads(x) for x in lines[1].decode().splitlines()]
    page = next(r for r in records if r["type"] == "page" and r["final_url"] == "https://s.test/final")
    assert page["url"] == "https://s.test/a" and page["status"] == 200 and page["text"] == CLS
    chunk = next(r for r in records if r["type"] == "chunk")
    assert len(chunk["embedding"]) == 384 and chunk["id"].startswith("sha256:")
    assert records[-1]["outcome"] == "blocked"
    m2 = mem.snapshot(tmp_path / "nov.jsonl", include_vectors=False)
    nov = [json.loads(x) for x in (tmp_path / "nov.jsonl").read_text().splitlines()[1:]]
    assert all("embedding" not in r for r in nov)
    assert m2["counts"] == {"page": 2, "chunk": 2}
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".snapshot-*"))


def test_reset_removes_everything(brt_home, embedder):
    mem = Memory("gone")
    mem.add("https://g.test/", CLS)
    mem.record_events([{"type": "x"}])
    assert Memory.exists("gone") and mem.path.is_dir()
    mem.reset()
    assert not mem.path.exists() and not Memory.exists("gone")
    assert mem.search("anything") == []


def test_store_usable_after_reset(brt_home, embedder):
    mem = Memory("again")
    mem.add("https://a.test/", CLS)
    mem.reset()
    assert mem.add("https://a.test/", LCP)
    assert mem.count_chunks() == 1 and mem.search("LCP render time", k=1)[0].text == LCP


_WRITER = textwrap.dedent("""
    import sys
    from memory_store import Memory
    mem = Memory("concurrent", sys.argv[1])
    for i in range(3):
        mem.add(f"https://w{sys.argv[2]}.test/{i}", f"Page {i} of writer {sys.argv[2]}. Filler text here.")
        mem.add("https://both.test/", f"Written last by writer {sys.argv[2]}." if i == 2 else "Shared page.")
""")


def test_concurrent_writers_keep_store_consistent(brt_home, embedder):
    base = brt_home / "memory"
    reader = Memory("concurrent", base)  # opened before the writers: must see their commits
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(base), str(k)], cwd=REPO, env=env)
        for k in range(2)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert reader.count_pages() == 7
    held = {cid for page in reader.pages() for cid in page.chunk_ids}
    assert held == set(chunk_rows(reader)) and reader.count_chunks() == 7
