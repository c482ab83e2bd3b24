"""The ONNX Runtime backend of the bundled model (fp32 and int8) against FlagEmbedding, backend selection, the
precision a store records, the export cache, and the CLI's start-up path (no torch) and quietness."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memory_store import Memory
from memory_store.embeddings import (
    DEFAULT_MODEL,
    choose_backend,
    get_embedder,
    vector_precision,
)
from memory_store.errors import EmbeddingModelError, ModelMismatch

REPO = Path(__file__).resolve().parent.parent

TEXTS = [
    "Largest Contentful Paint (LCP) should occur within 2.5 seconds of when the page first starts loading.",
    "short",
    "Reserve space for images and embeds with width and height attributes, so nothing shifts when they load.",
    "Ünïcödé, accents — naïve café; CJK 東京都 and emoji 🚀 in one line, plus numbers 3.14159 and 1e-9.",
    # longer than 256 tokens: truncated exactly like FlagEmbedding
    " ".join(f"Sentence {i} explains how layout shift scores add up across session windows." for i in range(60)),
    "Interaction to Next Paint of 200 milliseconds or less is good; above 500 milliseconds is poor.",
]


@pytest.fixture(scope="module")
def flag():
    return get_embedder(backend="flag")


@pytest.fixture(scope="module")
def onnx_fp32():
    return get_embedder(backend="onnx")


@pytest.fixture(scope="module")
def onnx_int8():
    return get_embedder(backend="onnx-int8")


def test_default_embedder_is_onnx_fp32(embedder):
    assert embedder.backend == "onnx" and embedder.precision == "fp32"
    assert (embedder.dim, embedder.max_tokens, embedder.pooling) == (384, 256, "mean")


def test_onnx_threads_sleep_when_idle(onnx_fp32):
    """A harvest shares 2 cores with Chromium: idle ORT threads must not spin-wait (the default does), and each
    run has one thread (the embedder's threads run batches side by side instead)."""
    opts = onnx_fp32._onnx.session_options
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert opts.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    assert opts.inter_op_num_threads == 1 and opts.intra_op_num_threads == 1


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_onnx_fp32_vectors_do_not_depend_on_batching_or_threads(onnx_fp32, monkeypatch, threads):
    """Texts of every length (a chunk of 256 tokens runs alone, short ones share a batch) give the very vectors
    each gets embedded alone, whichever thread runs its batch; rows come back in input order."""
    texts = [*TEXTS, *(f"{i} short sentence number {i} about paint timing." for i in range(40)), TEXTS[4][:400]]
    alone = np.stack([onnx_fp32.embed_documents([t])[0] for t in texts])
    monkeypatch.setattr(onnx_fp32._onnx, "threads", threads)
    before = onnx_fp32.batches
    together = onnx_fp32.embed_documents(texts)
    assert np.abs(together - alone).max() <= 1e-6
    batches = onnx_fp32.batches - before
    assert 2 < batches < len(texts)  # short texts shared batches, the long ones ran alone


def test_onnx_stop_and_errors_reach_the_caller_from_any_thread(onnx_fp32, monkeypatch):
    import threading

    from memory_store.errors import WriteStopped

    monkeypatch.setattr(onnx_fp32._onnx, "threads", 2)
    stop = threading.Event()
    stop.set()
    with pytest.raises(WriteStopped):
        onnx_fp32.embed_documents(TEXTS * 4, stop=stop)
    calls = []
    real = onnx_fp32._onnx._pooled

    def failing(feeds):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise RuntimeError("model failed")
        return real(feeds)

    monkeypatch.setattr(onnx_fp32._onnx, "_pooled", failing)
    with pytest.raises(RuntimeError, match="model failed"):
        onnx_fp32.embed_documents(TEXTS * 4)
    assert len(calls) < len(TEXTS * 4)  # the other thread stopped at its next batch


def test_onnx_fp32_vectors_equal_flagembedding(flag, onnx_fp32):
    ref = flag.embed_documents(TEXTS)
    got = onnx_fp32.embed_documents(TEXTS)
    assert got.shape == ref.shape == (len(TEXTS), 384) and got.dtype == np.float32
    cos = np.sum(ref * got, axis=1)
    assert cos.min() >= 0.9999, cos
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # one at a time (no padding) gives the same vectors as in a padded batch
    single = np.stack([onnx_fp32.embed_documents([t])[0] for t in TEXTS])
    assert np.sum(single * got, axis=1).min() >= 0.9999
    q_ref, q_got = flag.embed_queries(TEXTS[:2]), onnx_fp32.embed_queries(TEXTS[:2])
    assert np.sum(q_ref * q_got, axis=1).min() >= 0.9999


def test_onnx_tokens_equal_flagembedding(flag, onnx_fp32):
    for text in TEXTS:
        assert onnx_fp32.count_tokens(text) == flag.count_tokens(text)
        assert onnx_fp32.token_offsets(text) == flag.token_offsets(text)
    assert onnx_fp32.count_tokens_batch(TEXTS) == flag.count_tokens_batch(TEXTS)
    assert onnx_fp32.special_tokens == flag.special_tokens == 2
    assert onnx_fp32.count_tokens(TEXTS[4]) > 256  # counting never truncates; only embedding does


def test_onnx_int8_close_to_fp32_but_not_identical(flag, onnx_int8):
    assert onnx_int8.precision == "int8"
    cos = np.sum(flag.embed_documents(TEXTS) * onnx_int8.embed_documents(TEXTS), axis=1)
    assert cos.min() >= 0.98, cos
    assert cos.max() < 0.999999  # really the quantised graph


def test_onnx_int8_chunk_vectors_do_not_depend_on_their_neighbours(onnx_int8, monkeypatch):
    """The int8 graph scales activations per batch; a text of half the token budget or more runs alone, so a
    chunk's vector is the one it gets alone, whatever else is embedded with it (short texts share batches)."""
    monkeypatch.setattr(onnx_int8._onnx, "threads", 2)
    chunks = [TEXTS[4], TEXTS[4][:900], " ".join(TEXTS[:4] * 2)]
    assert all(onnx_int8.count_tokens(c) + 2 > 128 for c in chunks)
    alone = np.stack([onnx_int8.embed_documents([c])[0] for c in chunks])
    shorts = [f"{i} short sentence number {i} about paint timing." for i in range(30)]
    for company in (shorts, shorts[:3], [*TEXTS, *shorts]):
        together = onnx_int8.embed_documents([*company, *chunks])[-len(chunks):]
        assert np.abs(together - alone).max() <= 1e-6


def test_backend_selection(monkeypatch):
    monkeypatch.delenv("BRT_EMBED_BACKEND", raising=False)
    assert choose_backend(DEFAULT_MODEL) == "onnx"
    assert choose_backend(DEFAULT_MODEL, "int8") == "onnx-int8"  # auto follows the store
    assert choose_backend(DEFAULT_MODEL, "fp32") == "onnx"
    assert choose_backend("BAAI/bge-small-en-v1.5") == "flag"  # every other model: FlagEmbedding
    monkeypatch.setenv("BRT_EMBED_BACKEND", "flag")
    assert choose_backend(DEFAULT_MODEL) == "flag" and choose_backend(DEFAULT_MODEL, "fp32") == "flag"
    with pytest.raises(ModelMismatch, match="int8"):
        choose_backend(DEFAULT_MODEL, "int8")
    monkeypatch.setenv("BRT_EMBED_BACKEND", "onnx-int8")
    assert choose_backend(DEFAULT_MODEL) == "onnx-int8"
    assert choose_backend("BAAI/bge-m3") == "flag"
    with pytest.raises(ModelMismatch, match="fp32"):
        choose_backend(DEFAULT_MODEL, "fp32")
    monkeypatch.setenv("BRT_EMBED_BACKEND", "AUTO")
    assert choose_backend(DEFAULT_MODEL) == "onnx"
    monkeypatch.setenv("BRT_EMBED_BACKEND", "tensorrt")
    with pytest.raises(EmbeddingModelError, match="BRT_EMBED_BACKEND"):
        choose_backend(DEFAULT_MODEL)


def test_store_records_precision_and_never_mixes(brt_home, monkeypatch, embedder, onnx_int8):
    monkeypatch.delenv("BRT_EMBED_BACKEND", raising=False)
    fp = Memory("fp")
    fp.add("https://example.org/a", TEXTS[0])
    assert json.loads((fp.path / "meta.json").read_text())["embedding_precision"] == "fp32"
    monkeypatch.setenv("BRT_EMBED_BACKEND", "onnx-int8")
    q = Memory("q")
    q.add("https://example.org/a", TEXTS[0])
    assert vector_precision(json.loads((q.path / "meta.json").read_text())) == "int8"
    with pytest.raises(ModelMismatch, match="fp32"):
        Memory("fp").search("LCP", k=1)  # an int8 backend on an fp32 store is refused
    for fp32_backend in ("onnx", "flag"):  # and an fp32 backend on an int8 store, searching or writing
        monkeypatch.setenv("BRT_EMBED_BACKEND", fp32_backend)
        with pytest.raises(ModelMismatch, match="int8"):
            Memory("q").search("LCP", k=1)
        with pytest.raises(ModelMismatch, match="int8"):
            Memory("q").add("https://example.org/b", TEXTS[2])
    assert Memory("q").count_chunks() == 1  # nothing written by the refused backend
    monkeypatch.delenv("BRT_EMBED_BACKEND")
    reopened = Memory("q")
    assert reopened.embedder.precision == "int8"  # auto follows the store
    hits = reopened.search("When should the largest paint happen?", k=1)
    assert hits and hits[0].score > 0.5
    assert reopened.snapshot(brt_home / "q.jsonl")["embedding_precision"] == "int8"
    # a store written before precision was recorded holds fp32 vectors
    assert vector_precision({"dim": 384}) == "fp32" and vector_precision({"dim": None}) is None


def test_store_records_int8_recipe_warns_on_another_and_restore_keeps_it(brt_home, monkeypatch, caplog, onnx_int8):
    """An int8 store records its vectors' recipe; a store of another (or an unrecorded) recipe gets one warning
    per open, and still answers; a restore from its snapshot keeps precision and recipe, also when it re-embeds."""
    from memory_store.model_export import RECIPE_INT8
    from orchestrator.audit.restore import restore

    monkeypatch.setenv("BRT_EMBED_BACKEND", "onnx-int8")
    mem = Memory("r8")
    mem.add("https://example.org/a", TEXTS[0])
    meta = json.loads((mem.path / "meta.json").read_text())
    assert meta["embedding_precision"] == "int8" and meta["int8_recipe"] == onnx_int8.recipe == RECIPE_INT8
    snap = brt_home / "r8.jsonl"
    assert mem.snapshot(snap)["int8_recipe"] == RECIPE_INT8
    monkeypatch.delenv("BRT_EMBED_BACKEND")
    restore(snap, new_id="r8_again", force=True)
    again = Memory("r8_again")
    assert json.loads((again.path / "meta.json").read_text())["int8_recipe"] == RECIPE_INT8
    assert again.embedder.precision == "int8"  # auto follows the restored store: not taken for fp32
    # without vectors in the snapshot: re-embedded at its precision, not at the default fp32
    mem.snapshot(brt_home / "r8_novec.jsonl", include_vectors=False)
    assert restore(brt_home / "r8_novec.jsonl", new_id="r8_novec", force=True).reembedded == 1
    assert json.loads((Memory("r8_novec").path / "meta.json").read_text())["int8_recipe"] == RECIPE_INT8
    with caplog.at_level(logging.WARNING, logger="memory_store"):
        assert again.search("When should the largest paint happen?", k=1)
        assert not [r for r in caplog.records if "recipe" in r.getMessage()]
        meta.pop("int8_recipe")  # as written before brt recorded the recipe
        (mem.path / "meta.json").write_text(json.dumps(meta))
        old = Memory("r8")
        assert old.search("When should the largest paint happen?", k=1)
        old.add("https://example.org/b", TEXTS[2])
    warned = [r.getMessage() for r in caplog.records if "earlier int8 recipe" in r.getMessage()]
    assert len(warned) == 1 and "re-harvest" in warned[0]
    assert "int8_recipe" not in json.loads((old.path / "meta.json").read_text())  # never claims one it lacks
    fp = Memory("fp_only")
    fp.add("https://example.org/a", TEXTS[0])
    assert "int8_recipe" not in json.loads((fp.path / "meta.json").read_text())


def test_export_cache_key_follows_model_files(tmp_path, monkeypatch):
    from memory_store import model_export

    monkeypatch.setenv("BRT_MODEL_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 4}')
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    first = model_export.model_key(model)
    assert model_export.model_key(model) == first  # warm: from the stat cache
    (model / "config.json").write_text('{"hidden_size": 8}')
    changed = model_export.model_key(model)
    assert changed != first
    monkeypatch.setattr(model_export, "EXPORTER_VERSION", "test-next")
    assert model_export.model_key(model) not in (first, changed)
    assert model_export.find_export("m", model) is None  # nothing exported under the new key


def test_real_export_is_cached_and_checked(onnx_fp32, onnx_int8):
    from memory_store import model_export
    from memory_store.embeddings import default_model_path
    from memory_store.model_export import find_export

    found = find_export(DEFAULT_MODEL, default_model_path(), need_int8=True)
    assert found is not None and found.fp32.is_file() and found.int8 is not None
    assert found.manifest["fp32"]["min_cosine_to_torch"] >= 0.9999
    assert found.manifest["int8"]["min_cosine_to_torch"] >= 0.98
    int8 = found.manifest["int8"]
    assert int8["recipe"] == model_export.RECIPE_INT8
    # all-MiniLM-L6-v2's GELU outputs have a few outlier channels (layers 0-3), split off and kept fp32
    channels = int8["outlier_channels"]
    assert len(channels) == 6 and all(len(c) <= model_export.MAX_OUTLIER_CHANNELS for c in channels.values())
    assert len(int8["fp32_nodes"]) == sum(1 for c in channels.values() if c) >= 1


# --- the CLI in a real process -----------------------------------------------------------------------------
CHARTER = """\
id: fast_start
title: Fast start
allowed_domains: [example.org]
seeds: [https://example.org/]
outputs:
  doc: out/fast.md
  sections:
    - title: LCP threshold
      question: What Largest Contentful Paint time counts as good?
memory: {use_concept_index: false}
"""

PROBE = textwrap.dedent(
    """
    import json, sys
    from orchestrator.cli import cli
    try:
        cli(sys.argv[2:], prog_name="brt", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    heavy = [m for m in ("torch", "transformers", "FlagEmbedding", "peft", "rich", "trafilatura", "playwright")
             if m in sys.modules]
    with open(sys.argv[1], "w") as fh:
        json.dump({"code": code, "heavy": heavy, "onnxruntime": "onnxruntime" in sys.modules}, fh)
    """
)


@pytest.fixture
def small_store(brt_home, tmp_path, embedder, monkeypatch):
    monkeypatch.delenv("BRT_EMBED_BACKEND", raising=False)
    charter = tmp_path / "fast.yaml"
    charter.write_text(CHARTER)
    mem = Memory("fast_start")
    mem.add("https://example.org/lcp", TEXTS[0] + "\n\n" + TEXTS[5], title="LCP and INP")
    mem.add("https://example.org/cls", TEXTS[2], title="CLS")
    return charter


def _run(args: list[str], env_extra: dict | None = None, tmp: Path | None = None) -> tuple[dict, str, str]:
    out = (tmp or Path(os.environ["BRT_HOME"])) / "probe.json"
    env = {**os.environ, **(env_extra or {})}
    for key in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE", "TRANSFORMERS_VERBOSITY"):
        env.pop(key, None)
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        capture_output=True,  # stderr is a pipe, not a TTY: where progress bars used to leak
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    return json.loads(out.read_text()), r.stdout, r.stderr


def test_search_and_synthesize_do_not_import_torch(small_store):
    probe, out, err = _run(["search", str(small_store), "good LCP time", "--json"])
    assert probe["code"] == 0, err
    assert probe["heavy"] == [] and probe["onnxruntime"], probe
    hits = json.loads(out)["hits"]
    assert hits and hits[0]["url"] == "https://example.org/lcp"
    assert err == ""  # nothing at all on stderr by default
    probe, out, err = _run(["synthesize", str(small_store)])
    assert probe["code"] == 0, err
    assert probe["heavy"] == [], probe
    assert "LCP threshold" in out and "wrote" in err


def test_quiet_by_default_and_verbose_shows_third_party_output(small_store):
    # the FlagEmbedding backend loads weights through transformers, whose progress bar used to leak
    probe, out, err = _run(["search", str(small_store), "good LCP time", "--json"], {"BRT_EMBED_BACKEND": "flag"})
    assert probe["code"] == 0, err
    assert "torch" in probe["heavy"]  # really the FlagEmbedding path
    assert "Loading weights" not in err and "it/s" not in err and "%|" not in err, err
    assert json.loads(out)["hits"]
    probe, out, err = _run(["-v", "search", str(small_store), "good LCP time", "--json"], {"BRT_EMBED_BACKEND": "flag"})
    assert probe["code"] == 0
    assert "Loading weights" in err  # -v: third-party output as the libraries print it
    assert json.loads(out)["hits"]  # stdout stays one JSON document


def test_quiet_flag_leaves_only_results(small_store):
    probe, out, err = _run(["--quiet", "synthesize", str(small_store)])
    assert probe["code"] == 0, err
    assert "LCP threshold" in out and err == ""
    probe, out, err = _run(["-q", "search", str(small_store.with_name("missing.yaml")), "x"])
    assert probe["code"] == 2 and "missing.yaml" in err  # errors still reach stderr


# --- lancedb without its REST namespace client ---------------------------------------------------------------
def test_lancedb_imported_without_the_namespace_client_apis(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from memory_store._lazy_imports import import_lancedb
        lancedb = import_lancedb()
        apis = [m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api.")]
        assert not apis, apis
        db = lancedb.connect({str(tmp_path / "db")!r})
        t = db.create_table("t", data=[{{"id": "a", "vector": [0.0, 1.0]}}])
        assert t.search([0.0, 1.0]).limit(1).to_list()[0]["id"] == "a"
        from lance_namespace_urllib3_client import TableApi  # still importable, on demand
        import lance_namespace_urllib3_client.api.table_api as real
        assert TableApi is real.TableApi
        import lance_namespace
        assert lance_namespace.LanceNamespace.__name__ == "LanceNamespace"
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_lazy_init_only_for_plain_import_files():
    from memory_store._lazy_imports import _parse_init

    names, plain = _parse_init('"""doc"""\n__version__ = "1.0"\nfrom a.b import C\nfrom a.d import E as F\n')
    assert names == {"C": ("a.b", "C"), "F": ("a.d", "E")} and plain == {"__version__": "1.0"}
    assert _parse_init("from a import b\nb.setup()\n") is None  # code: the real module is used
    assert _parse_init("from a import (\n    b,\n)\n") is None


def test_fitted_features_read_fp32_vectors_over_an_int8_store(brt_home, monkeypatch, onnx_fp32, onnx_int8):
    """The evidence scorer, acceptance judge and claim support were fitted on fp32 vectors: over an int8 store the
    features computed from text (quote, sentence, heading, title and question cosines) come from the model's fp32
    vectors, searching keeps the store's int8, and only the chunk's retrieval cosine (``chunk_cos``, the hit's
    score) is the store's own. A small store's section (every chunk retrieved either way) gets the same candidates,
    the same features but that one, and the same blocks from an int8 and an fp32 store."""
    from dataclasses import asdict

    from memory_store.embeddings import fp32_embedder, full_precision
    from orchestrator.charter import Section
    from orchestrator.evidence import section_candidates, synthesize_section

    pages = [
        {"url": "https://guide.example/lcp", "text": f"{TEXTS[0]} {TEXTS[2]}", "last_updated": "2025-05-01"},
        {"url": "https://guide.example/inp", "text": f"{TEXTS[5]} {TEXTS[4][:300]}", "last_updated": "2025-05-02"},
    ]
    section = Section(title="LCP", question="How quickly should the largest contentful paint happen?")
    found, blocks = {}, {}
    for backend in ("onnx", "onnx-int8"):
        monkeypatch.setenv("BRT_EMBED_BACKEND", backend)
        mem = Memory(f"features_{backend}")
        mem.add_many(pages)
        assert mem.embedder.backend == backend
        assert mem.feature_embedder is onnx_fp32  # the fp32 engine, whatever the store holds
        cands = section_candidates(mem, section, k=3)
        found[backend] = {s.quote: asdict(f) for s, f in zip(cands.spans, cands.features, strict=True)}
        blocks[backend] = [(b.quote, b.url) for b in synthesize_section(mem, section, k=3).blocks]
    fp32, int8 = found["onnx"], found["onnx-int8"]
    assert fp32 and set(fp32) == set(int8)
    for quote, features in fp32.items():
        other = dict(int8[quote])
        assert abs(other.pop("chunk_cos") - features.pop("chunk_cos")) < 0.03
        assert other == features
    assert blocks["onnx"] and blocks["onnx"] == blocks["onnx-int8"]
    monkeypatch.delenv("BRT_EMBED_BACKEND")
    assert fp32_embedder(onnx_int8) is onnx_fp32 and fp32_embedder(onnx_fp32) is onnx_fp32
    assert full_precision() is onnx_fp32
    monkeypatch.setenv("BRT_EMBED_BACKEND", "flag")  # an fp32 engine named for the stores is the one used
    assert full_precision().backend == "flag"
