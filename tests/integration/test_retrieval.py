"""The retrieval pipeline (memory_store/retrieval.py) on a real LanceDB store with the real embedding model:
hybrid BM25 ∪ vector candidates, thresholds on every path, MMR, matched_via, a current full-text index, rerank."""

from __future__ import annotations

import numpy as np
import pytest

from memory_store import Memory
from memory_store.retrieval import rrf

CODE_DOC = (
    "Inventory ledger, aisle four: a crate of XK-4471Q units was received on Tuesday, counted by the night clerk "
    "and signed off before the morning shift."
)
BATTERY_DOCS = [
    "To replace the battery of a wireless game controller, open the back cover and swap the AA cells.",
    "Replacing the rechargeable battery in a TV remote control: slide the lid off and insert new batteries.",
    "Battery replacement for a handheld controller takes five minutes with a small screwdriver.",
    "How to change the battery in a wireless keyboard controller without losing the pairing.",
    "Swap the lithium battery of the drone remote controller when the charge indicator blinks red.",
    "Controller battery guide: remove the screws, unplug the old pack, fit the replacement battery.",
    "The gamepad's battery can be replaced by the user; a replacement pack costs about ten dollars.",
    "Steps to replace a worn out battery in a Bluetooth controller and recalibrate the joystick.",
    "If the controller no longer holds a charge, replace its battery with an identical rechargeable cell.",
    "Replacing batteries in a remote controller: use fresh alkaline cells and dispose of the old ones safely.",
    "A smart thermostat controller needs a new coin battery every two years; here is how to replace it.",
    "Garage door opener controller battery replacement, with photos of each step.",
]
QUERY = "How do I replace the battery of the XK-4471Q controller?"


def _url(i: int) -> str:
    return f"https://docs.example/p{i}"


@pytest.fixture
def code_store(brt_home, embedder):
    mem = Memory("retr")
    pages = [{"url": _url(i), "text": t} for i, t in enumerate(BATTERY_DOCS)]
    pages.append({"url": "https://docs.example/ledger", "text": CODE_DOC})
    mem.add_many(pages)
    return mem


def _urls(hits):
    return [h.metadata["url"] for h in hits]


def test_union_surfaces_keyword_strong_vector_distant_chunk(code_store):
    mem = code_store
    ledger = "https://docs.example/ledger"
    vec = mem.search(QUERY, k=10, mode="vector", mmr_lambda=None, candidates=10)
    assert len(vec) == 10 and ledger not in _urls(vec)  # vector-only misses it
    bm = mem.search(QUERY, k=10, mode="bm25", mmr_lambda=None, candidates=10)
    assert _urls(bm)[0] == ledger  # keyword-strong
    hyb = mem.search(QUERY, k=10, mode="hybrid", mmr_lambda=None, candidates=10)
    assert ledger in _urls(hyb)
    hit = next(h for h in hyb if h.metadata["url"] == ledger)
    assert hit.matched_via == "bm25"
    # its score is its cosine similarity, computed from its stored embedding although the vector side missed it
    qv = mem.embedder.embed_queries([QUERY])[0]
    dv = mem.embedder.embed_documents([CODE_DOC])[0]
    assert hit.score == pytest.approx(float(dv @ qv), abs=1e-4)
    assert hit.metadata["retrieval"]["vector_rank"] is None and hit.metadata["retrieval"]["bm25_rank"] == 1


def test_union_never_drops_what_vector_found(code_store):
    mem = code_store
    # RRF: an item at vector rank r is beaten only by items ranked < r in some list, so hybrid's top 2n
    # always holds vector-only's top n
    for n in (1, 3, 5, 6):
        vec = {h.id for h in mem.search(QUERY, k=n, mode="vector", mmr_lambda=None, candidates=n)}
        hyb = mem.search(QUERY, k=2 * n, mode="hybrid", mmr_lambda=None, candidates=n)
        assert vec <= {h.id for h in hyb}
        vec2 = {h.id for h in mem.search(QUERY, k=2 * n, mode="vector", mmr_lambda=None)}
        for h in hyb:
            assert (h.id in vec2) == ("vector" in h.matched_via)
    # the whole pool: nothing vector-only finds is missing from hybrid
    vec = {h.id for h in mem.search(QUERY, k=13, mode="vector", mmr_lambda=None)}
    assert vec <= {h.id for h in mem.search(QUERY, k=13, mmr_lambda=0.7)}


def test_thresholds_hold_for_bm25_only_candidates(code_store):
    mem = code_store
    all_hyb = mem.search(QUERY, k=13, mode="hybrid", mmr_lambda=None, candidates=13)
    ledger = next(h for h in all_hyb if h.metadata["url"] == "https://docs.example/ledger")
    bar = ledger.score + 0.01  # just above the BM25-strong chunk's vector score
    assert any(h.score >= bar for h in all_hyb)
    for mode in ("hybrid", "bm25", "vector"):
        for mmr in (None, 0.7):
            hits = mem.search(QUERY, k=13, mode=mode, mmr_lambda=mmr, candidates=13, min_similarity=bar)
            assert all(h.score >= bar for h in hits), mode
            assert "https://docs.example/ledger" not in _urls(hits), mode
    bm = mem.search(QUERY, k=13, mode="bm25", mmr_lambda=None, min_similarity=bar)
    assert bm and all(h.matched_via == "bm25" for h in bm)
    # just below it, it passes
    hits = mem.search(QUERY, k=13, mode="bm25", mmr_lambda=None, min_similarity=ledger.score - 0.01)
    assert "https://docs.example/ledger" in _urls(hits)
    assert mem.search(QUERY, k=5, min_similarity=0.999) == []


def test_matched_via_on_each_path(code_store):
    mem = code_store
    assert {h.matched_via for h in mem.search(QUERY, k=8, mode="vector")} == {"vector"}
    assert {h.matched_via for h in mem.search(QUERY, k=8, mode="bm25")} == {"bm25"}
    hyb = mem.search(QUERY, k=10, mode="hybrid", candidates=5, mmr_lambda=None)
    vias = {h.matched_via for h in hyb}
    assert "vector+bm25" in vias and "bm25" in vias
    for h in hyb:
        r = h.metadata["retrieval"]
        assert ("vector" in h.matched_via) == (r["vector_rank"] is not None)
        assert ("bm25" in h.matched_via) == (r["bm25_rank"] is not None)
    # the fused order: reciprocal rank fusion with k = 60
    expected = [
        (rrf(r["vector_rank"]) if r["vector_rank"] else 0.0) + (rrf(r["bm25_rank"]) if r["bm25_rank"] else 0.0)
        for r in (h.metadata["retrieval"] for h in hyb)
    ]
    assert expected == sorted(expected, reverse=True)
    assert expected == pytest.approx([h.metadata["retrieval"]["fused"] for h in hyb], abs=1e-6)
    with pytest.raises(ValueError):
        mem.search(QUERY, mode="sparse")


LCP = (
    "Largest Contentful Paint reports the render time of the largest image or text block visible in the "
    "viewport. A good LCP is 2.5 seconds or less for at least 75 percent of page loads."
)
LCP_DUP = (
    "Largest Contentful Paint reports the render time of the largest image or text block visible in the "
    "viewport. A good LCP is 2.5 seconds or less for at least 75 percent of the page loads."
)
OTHERS = [
    "Preload the hero image and serve it from a CDN so the largest element renders sooner.",
    "Server response time (TTFB) delays every later milestone, including the largest paint.",
    "Render-blocking CSS and synchronous scripts in the head delay the first and the largest paint.",
    "Lazy-loading the above-the-fold image makes the largest contentful paint worse, not better.",
    "Compress and resize images: modern formats such as AVIF and WebP cut their transfer time.",
    "Field data from the Chrome UX Report shows the 75th percentile of real user page loads.",
    "Client-side rendering postpones the largest element until the JavaScript bundle has run.",
    "Fonts that block text rendering can make a text block the late largest contentful element.",
]


def test_mmr_removes_near_duplicate_from_top_k(brt_home, embedder):
    mem = Memory("mmr")
    pages = [{"url": "https://web.dev/lcp", "text": LCP}, {"url": "https://mirror.example/lcp", "text": LCP_DUP}]
    pages += [{"url": f"https://web.dev/o{i}", "text": t} for i, t in enumerate(OTHERS)]
    mem.add_many(pages)
    q = "What is a good Largest Contentful Paint time?"
    plain = mem.search(q, k=3, mmr_lambda=None)
    assert set(_urls(plain[:2])) == {"https://web.dev/lcp", "https://mirror.example/lcp"}
    diverse = mem.search(q, k=3)  # default: hybrid + MMR (λ = 0.7)
    urls = _urls(diverse)
    assert urls[0] in {"https://web.dev/lcp", "https://mirror.example/lcp"}
    assert not {"https://web.dev/lcp", "https://mirror.example/lcp"} <= set(urls)
    # λ = 1 is relevance only: the fused order
    assert [h.id for h in mem.search(q, k=3, mmr_lambda=1.0)] == [h.id for h in plain]
    with pytest.raises(ValueError):
        mem.search(q, mmr_lambda=1.5)


def test_fts_current_after_re_adding_and_deleting_a_page(brt_home, embedder):
    mem = Memory("fts")
    mem.add("https://ex.example/a", "The quartermaster logged the zephyrine shipment at dawn.")
    mem.add("https://ex.example/b", "Tide tables for the harbour are printed every Monday.")
    assert mem._store.has_fts_index()
    hits = mem.search("zephyrine shipment", k=5, mode="bm25")
    assert _urls(hits) == ["https://ex.example/a"]
    # query text is never parsed as query syntax (quotes, operators, field names, brackets)
    for q in ['"zephyrine shipment"', "zephyrine AND (shipment", "text:zephyrine -dawn*", "NOT"]:
        assert _urls(mem.search(q, k=5, mode="bm25")) in (["https://ex.example/a"], []), q
    assert _urls(mem.search('"zephyrine shipment"', k=5, mode="bm25")) == ["https://ex.example/a"]
    # re-harvest page a with new text: the removed text must never match again, the new text must
    mem.add("https://ex.example/a", "The quartermaster now logs only grain deliveries.")
    assert mem.search("zephyrine", k=5, mode="bm25") == []
    assert all("zephyrine" not in h.text for h in mem.search("zephyrine shipment", k=5, mode="hybrid"))
    assert _urls(mem.search("grain deliveries", k=5, mode="bm25")) == ["https://ex.example/a"]
    # the same through add_many and after a delete
    mem.add_many([{"url": "https://ex.example/c", "text": "Obsidian lanterns hang in the lighthouse."}])
    assert _urls(mem.search("obsidian lanterns", k=5, mode="bm25")) == ["https://ex.example/c"]
    assert mem.delete_page("https://ex.example/c")
    assert mem.search("obsidian lanterns", k=5, mode="bm25") == []


def test_fts_index_built_for_an_older_store_on_first_search(brt_home, embedder):
    mem = Memory("old")
    mem.add("https://ex.example/a", "Basalt columns line the northern cliff.")
    table = mem._store._table("chunks")
    table.drop_index("text_idx")
    assert not mem._store.has_fts_index()
    assert _urls(Memory("old").search("basalt columns", k=3, mode="bm25")) == ["https://ex.example/a"]
    assert Memory("old")._store.has_fts_index()


def _pier(i: int) -> str:
    # pages of one template: many equal BM25 scores for a question that names one pier
    colours, saints = ["red", "green", "white"], ["Bride", "Non", "Aidan", "Ninian"]
    return (
        f"Pier {i} was built to land salt, and its lamp shows a {colours[i % 3]} light named after Saint "
        f"{saints[i % 4]}. The harbour master inspects pier {i} every {2 + i % 5} weeks."
    )


def test_same_rows_answer_the_same_however_they_were_written(brt_home, embedder):
    # the same pages written in another order and other batches (as a harvest on Ray writes them) get the
    # same BM25 scores and the same order, ties included: the index covers every row before a search, and
    # equal scores are ordered by id, not by storage order
    pages = [{"url": f"https://piers.example/{i}", "text": _pier(i)} for i in range(40)]
    one = Memory("written_once")
    one.add_many(pages)
    split = Memory("written_in_batches")
    shuffled = pages[::-1]
    split.add_many(shuffled[:5])  # the full-text index is built over these 5 rows only
    for start in range(5, 40, 7):
        split.add_many(shuffled[start : start + 7])
    assert not split._store.text_index_current()
    question = "What light does the lamp of pier 7 show?"

    def bm25(mem):
        return [
            (h.id, h.metadata["retrieval"]["bm25_score"])
            for h in mem.search(question, k=12, mode="bm25", mmr_lambda=None, candidates=12)
        ]

    first = bm25(one)
    scores = [s for _, s in first]
    assert len(set(scores)) < len(scores), "the fixture must hold BM25 ties"
    assert bm25(split) == first and split._store.text_index_current()
    assert all(bm25(one) == first for _ in range(3))
    tied = [(a, b) for (a, s), (b, t) in zip(first[:-1], first[1:], strict=True) if s == t]
    assert tied and all(a < b for a, b in tied)
    hybrid = [h.id for h in one.search(question, k=8, mmr_lambda=None)]
    assert hybrid == [h.id for h in split.search(question, k=8, mmr_lambda=None)]


def test_multiple_queries_are_fused(code_store):
    mem = code_store
    one = mem.search("XK-4471Q", k=13, mode="bm25", mmr_lambda=None)
    assert _urls(one) == ["https://docs.example/ledger"]
    both = mem.search(
        "XK-4471Q", k=13, mode="bm25", mmr_lambda=None, extra_queries=["drone remote controller"], candidates=5
    )
    assert "https://docs.example/ledger" in _urls(both) and len(both) > 1
    drone = next(h for h in both if "drone" in h.text)
    assert drone.metadata["query"] == "drone remote controller"


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory, embedder):
    """A tiny random cross-encoder (BERT, 2 layers) saved with the MiniLM tokenizer: no reranker model ships
    offline, so this exercises the FlagReranker loading and scoring path, not rerank quality."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("tiny-reranker")
    tok = AutoTokenizer.from_pretrained(str(embedder.path))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    torch.manual_seed(7)
    model = BertForSequenceClassification(cfg)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return str(path)


def test_reranker_path_loads_and_reorders(code_store, tiny_reranker):
    from memory_store.rerank import get_reranker

    mem = code_store
    base = mem.search(QUERY, k=8, mmr_lambda=None, candidates=8)
    reranked = mem.search(QUERY, k=8, mmr_lambda=None, candidates=8, rerank=True, reranker_model=tiny_reranker)
    scores = [h.metadata["retrieval"]["rerank_score"] for h in reranked]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert [h.id for h in reranked] != [h.id for h in base]  # reordered
    # the same scores as calling the reranker directly
    direct = get_reranker(tiny_reranker).score(QUERY, [h.text for h in reranked])
    assert direct == pytest.approx(scores, abs=1e-5)
    # thresholds still hold after rerank
    bar = sorted(h.score for h in base)[len(base) // 2]
    hits = mem.search(QUERY, k=8, rerank=True, reranker_model=tiny_reranker, min_similarity=bar)
    assert hits and all(h.score >= bar for h in hits)


def test_missing_reranker_model_is_a_clear_error(code_store, tmp_path):
    from memory_store.errors import EmbeddingModelError

    with pytest.raises(EmbeddingModelError, match="reranker model"):
        code_store.search(QUERY, rerank=True, reranker_model=str(tmp_path / "no-such-model"))


def _charter(make_charter, charter_id, retrieval=None):
    """The path of a charter over the ``code_store`` pages (``make_charter`` writes it as YAML)."""
    return make_charter(
        ["https://docs.example/"],
        path=f"{charter_id}.yaml",
        charter_id=charter_id,
        title="Retrieval",
        goal=None,
        allowed=("docs.example",),
        sections=[
            {"title": "Battery", "label": "Bat", "question": "How do I replace the XK-4471Q battery?"},
            {"title": "Bitcoin", "question": "What is the current price of bitcoin in euros?"},
        ],
        retrieval=retrieval,
        load=False,
    )


def test_cli_search_modes_and_matched_via(code_store, make_charter):
    import json

    from click.testing import CliRunner

    from orchestrator.cli import cli

    charter = _charter(make_charter, "retr")

    def run(*args):
        r = CliRunner().invoke(cli, ["search", str(charter), QUERY, "-k", "10", "--json", *args])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)["hits"]

    hyb = run()
    assert "https://docs.example/ledger" in [h["url"] for h in hyb]
    assert {h["matched_via"] for h in hyb} <= {"vector", "bm25", "vector+bm25"}
    assert {h["matched_via"] for h in run("--mode", "vector")} == {"vector"}
    assert {h["matched_via"] for h in run("--mode", "bm25", "--no-mmr")} == {"bm25"}
    assert len(run("--mmr-lambda", "0.5")) == 10
    bad = CliRunner().invoke(cli, ["search", str(charter), QUERY, "--mode", "sparse"])
    assert bad.exit_code == 2
    # a charter's retrieval section sets the defaults; unknown keys are an error
    vec_charter = _charter(make_charter, "retr", {"mode": "vector", "mmr_lambda": None, "candidates": 5})
    r = CliRunner().invoke(cli, ["search", str(vec_charter), QUERY, "--json"])
    assert {h["matched_via"] for h in json.loads(r.stdout)["hits"]} == {"vector"}
    typo = _charter(make_charter, "retr", {"mdoe": "vector"})
    assert CliRunner().invoke(cli, ["charter", "validate", str(typo)]).exit_code == 2


def test_synthesize_fuses_signature_queries(code_store, make_charter, tmp_path):
    from orchestrator.charter import load_charter
    from orchestrator.synthesize import synthesize

    charter = load_charter(_charter(make_charter, "retr", {"k": 3}))
    result = synthesize(charter, memory=code_store, out=tmp_path / "out.md")
    bat, coin = result.sections
    assert len(bat.queries) == 3 and "criticisms" in bat.queries[2]
    assert bat.blocks and all(b.score >= result.min_score for b in bat.blocks)
    assert {b.query for b in bat.blocks} <= set(bat.queries)
    assert not coin.blocks and coin.gaps  # no evidence, no claim


def test_vector_index_built_past_its_row_count(tmp_path, monkeypatch):
    """The store builds its ANN index once the chunks table passes VECTOR_INDEX_MIN_ROWS and then searches
    through it (bench/vector_scale.py measures speed and recall at 100,000 rows)."""
    from memory_store import store as store_mod

    rng = np.random.default_rng(1)
    data = rng.standard_normal((1200, 384)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    st = store_mod.LanceStore(tmp_path, 384)
    rows = [{"id": f"c{i}", "text": f"chunk number {i}", "also_seen_at": []} for i in range(len(data))]
    monkeypatch.setattr(store_mod, "VECTOR_INDEX_MIN_ROWS", 1000)
    st.upsert_chunks(rows[:900], data[:900])
    st.ensure_indexes()
    assert st.has_fts_index() and not st.has_vector_index()
    st.upsert_chunks(rows[900:], data[900:])
    st.ensure_indexes()
    assert st.has_vector_index()
    q = data[7] + 0.01 * rng.standard_normal(384).astype(np.float32)
    hits = st.search(q / np.linalg.norm(q), 5, with_vectors=True)
    assert hits[0]["id"] == "c7" and hits[0]["embedding"].shape == (384,)
    assert [h["id"] for h in st.search(q, 3, ["c7", "c8"])][0] == "c7"


def test_search_goes_on_when_the_index_cannot_be_brought_up_to_date(brt_home, embedder, monkeypatch):
    # another process holds the store's write lock past the timeout: the search does not fail, it searches the
    # index as it is (the rows written since it was built are scanned)
    import subprocess
    import sys

    mem = Memory("fold_locked")
    mem.add("https://ex.example/a", "The quartermaster logged the zephyrine shipment at dawn.")
    mem.add("https://ex.example/b", "Obsidian lanterns hang in the lighthouse.")
    assert not mem._store.text_index_current()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from memory_store import Memory; m = Memory('fold_locked')\n"
            "with m.write_lock():\n    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("BRT_LOCK_TIMEOUT", "1")
        assert _urls(Memory("fold_locked").search("obsidian lanterns", k=3, mode="bm25")) == ["https://ex.example/b"]
    finally:
        holder.kill()
        holder.wait()
    assert not mem._store.text_index_current()
    assert _urls(Memory("fold_locked").search("obsidian lanterns", k=3, mode="bm25")) == ["https://ex.example/b"]
    assert mem._store.text_index_current()


def test_a_search_after_a_few_writes_rebuilds_the_text_index_alone(tmp_path, monkeypatch):
    """Before a BM25 search every row must be in the full-text index. A few new rows: the full-text index alone is
    rebuilt (the key index keeps its new rows unfolded: no compaction, which costs minutes at 100,000 chunks); past
    REINDEX_AFTER_ROWS: a fold of every index. Either way the scores equal those of a store written at once."""
    from memory_store import store as store_mod

    monkeypatch.setattr(store_mod, "REINDEX_AFTER_ROWS", 50)
    rng = np.random.default_rng(3)
    data = rng.standard_normal((200, 384)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    words = ["harbour", "lamp", "keeper", "storm", "ferry", "gull", "anchor", "beacon", "reef", "quay"]
    rows = [{"id": f"c{i:03d}", "text": f"{words[i % 10]} {words[i % 7]} {words[i % 3]} row {i}",
             "also_seen_at": []} for i in range(len(data))]

    def bm25(st):
        return [(r["id"], r["_score"]) for r in st.fts_search("harbour lamp keeper", 20)]

    once = store_mod.LanceStore(tmp_path / "once", 384)
    once.upsert_chunks(rows[:130], data[:130])
    once.ensure_indexes()
    expected = bm25(once)
    st = store_mod.LanceStore(tmp_path / "grown", 384)
    st.upsert_chunks(rows[:100], data[:100])
    st.ensure_indexes()
    for start in range(100, 130, 10):  # 30 rows in three writes
        st.upsert_chunks(rows[start : start + 10], data[start : start + 10])
    assert st._unindexed("text_idx") == 30 and st._unindexed("id_idx") == 30
    st.ensure_indexes(fold_all=True)
    assert st.text_index_current() and st._unindexed("id_idx") == 30  # rebuilt, not folded
    assert bm25(st) == expected
    st.upsert_chunks(rows[130:], data[130:])  # 70 more: past REINDEX_AFTER_ROWS
    once.upsert_chunks(rows[130:], data[130:])
    once.ensure_indexes(fold_all=True)
    st.ensure_indexes(fold_all=True)
    assert st.text_index_current() and st._unindexed("id_idx") == 0  # folded
    assert bm25(st) == bm25(once)
