"""Building the concept index from a charter's store, incrementally: concepts from the charter's sections and
concept hints, page headings and key phrases; chunk pointers; co-occurrence ``influences``; summaries."""

from __future__ import annotations

import hashlib
import logging
import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .dag import INFLUENCES, PART_OF, ROOT, IndexConfig, MergeFn
from .graph import ConceptIndex
from .text import (
    Rarity,
    extractive_summary,
    key_phrases,
    norm_label,
    page_headings,
    phrase_surface,
    specificity,
    stem_key,
)

if TYPE_CHECKING:
    from memory_store import Memory

log = logging.getLogger(__name__)

MAX_NODES_PER_CHUNK = 5


@dataclass
class SectionSpec:
    """What the concept index needs of a charter section (orchestrator's Section has these fields)."""

    title: str
    question: str | None = None
    concept: str | None = None

    @classmethod
    def of(cls, section: Any) -> SectionSpec:
        if isinstance(section, SectionSpec):
            return section
        if isinstance(section, dict):
            return cls(section["title"], section.get("question"), section.get("concept"))
        return cls(section.title, getattr(section, "question", None), getattr(section, "concept", None))


@dataclass
class UpdateReport:
    nodes: int
    edges: int
    pointers: int
    pages_changed: int
    pages_removed: int
    inserted: int
    removed: int
    elapsed_s: float
    skipped: bool = False


def _sig(chunk_ids: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(chunk_ids).encode()).hexdigest()[:16]


def open_index(memory: Memory, **kwargs: Any) -> ConceptIndex:
    return ConceptIndex(memory=memory, **kwargs)


def update_from_store(
    memory: Memory,
    sections: Iterable[Any] = (),
    *,
    config: IndexConfig | None = None,
    summary_merge: MergeFn | None = None,
    rebuild: bool = False,
    index: ConceptIndex | None = None,
) -> tuple[ConceptIndex, UpdateReport]:
    """Bring the charter's concept index up to date with its store and save it (graph + pointer rows).

    Incremental: existing nodes keep their place; only new concepts are inserted, concepts that lost all
    support are removed; pages whose chunks changed have their pointer rows purged and rebuilt. With nothing
    changed (same pages, same sections) it returns at once."""
    from memory_store import pointers as ptr

    t0 = time.perf_counter()
    ci = index or ConceptIndex(memory=memory, config=config, summary_merge=summary_merge, load=not rebuild)
    if config is not None:
        ci.config = config
    specs = [SectionSpec.of(s) for s in sections]
    section_doc = [{"title": s.title, "question": s.question, "concept": s.concept} for s in specs]
    pages = memory.pages()
    sigs = {p.url: _sig(p.chunk_ids) for p in pages}
    changed = [u for u, s in sigs.items() if ci.pages.get(u) != s]
    removed = [u for u in ci.pages if u not in sigs]
    if not rebuild and not changed and not removed and section_doc == ci.sections and len(ci) > 1:
        if {r.url for r in ptr.read_pointers(memory.path)} == set(ci.pointer_urls):
            return ci, UpdateReport(len(ci), ci.G.number_of_edges(), 0, 0, 0, 0, 0, 0.0, skipped=True)
        # the same chunks, but pages were stored again (their pointers purged): rebuild only the pointers
        assign, _, _ = _assign_chunks(ci, memory, pages)
        rows = _save_with_pointers(ci, memory, assign)
        return ci, UpdateReport(
            len(ci), ci.G.number_of_edges(), len(rows), 0, 0, 0, 0, round(time.perf_counter() - t0, 3)
        )
    n_before = len(ci)
    events_before = len(ci.events)

    # rarity statistics over labels and pages (for compare_generality)
    ci.rarity = Rarity(p.text for p in pages)
    _add_charter_concepts(ci, specs)  # 1. concept hints (forced chains) and section titles
    ci.sections = section_doc
    heads, nest = _page_headings(pages)  # 2. headings (h1 = title, h2, h3 nested) and key phrases
    new_concepts = _page_concepts(ci, heads, specs, {p.url: p.text for p in pages})
    wanted = {norm_label(lab) for lab, _, _ in new_concepts}
    n_removed = _drop_nodes(ci, lambda d: norm_label(d["label"]) not in wanted,
                            "no longer among the charter's page concepts")
    _insert_concepts(ci, new_concepts)  # 3. most general first
    _nested_part_of(ci, nest, heads, wanted)  # 4. part-of from nested headings

    # 5. pointers: chunks -> nodes
    assign, chunk_vecs, chunk_text = _assign_chunks(ci, memory, pages)
    node_chunks, node_urls = _node_support(ci, assign, chunk_vecs)
    n_removed += _drop_nodes(ci, lambda d: not d["support"], "no chunk supports it")  # noise
    ci.consolidate()

    # 6. influences from chunk co-occurrence
    _influences(ci, node_chunks, total=len({cid for _, cid, _ in assign}) or 1)
    # 7. summaries (nodes whose chunks changed, or without one)
    fresh = _FreshChunks(node_chunks, node_urls, chunk_vecs, chunk_text, set(changed) | set(removed))
    _summaries(ci, fresh, rebuild=rebuild)
    # 8. write pointer rows (purge then rebuild) and the graph
    ci.pages = sigs
    rows = _save_with_pointers(ci, memory, assign)
    inserted = sum(1 for e in ci.events[events_before:] if e["action"] == "insert")
    rep = UpdateReport(
        nodes=len(ci),
        edges=ci.G.number_of_edges(),
        pointers=len(rows),
        pages_changed=len(changed),
        pages_removed=len(removed),
        inserted=inserted,
        removed=n_removed,
        elapsed_s=round(time.perf_counter() - t0, 3),
    )
    log.info("concept index of %s: %s (had %d nodes)", memory.charter_id, rep, n_before)
    return ci, rep


def _section_context(s: SectionSpec) -> str:
    return f"{s.title}. {s.question}" if s.question and s.question != s.title else s.title


def _hint_parts(s: SectionSpec) -> list[str]:
    return [p.strip() for p in (s.concept or "").split(">") if p.strip()]


def _add_charter_concepts(ci: ConceptIndex, specs: list[SectionSpec]) -> None:
    """The charter's concept hints (forced, pinned chains under the root) and its section titles."""
    prime: list[str] = []
    for s in specs:
        parts = _hint_parts(s)
        prime += parts[:-1] + ([f"{parts[-1]}: {_section_context(s)}"] if parts else []) + [_section_context(s)]
    ci.embed(prime)
    for s in specs:
        ctx = _section_context(s)
        if not s.concept:
            ci.insert(s.title, kind="section", context=ctx, pinned=True)
            continue
        parent = ROOT
        parts = _hint_parts(s)
        for j, part in enumerate(parts):
            found = next((c for c in ci.children(parent) if norm_label(ci.label(c)) == norm_label(part)), None)
            if found is None:
                # the leaf of a hint is embedded with its section's question, so it attracts its chunks
                leaf_ctx = f"{part}: {ctx}" if j == len(parts) - 1 else None
                found = ci.add_node(
                    part, parent, kind="charter", context=leaf_ctx, pinned=True, reason="charter concept hint"
                )
            ci.G.nodes[found]["pinned"] = True
            parent = found
        if ci.find(s.title) is None:
            ci.add_node(s.title, parent, kind="section", context=ctx, pinned=True, reason="charter section")


def _page_headings(pages: list[Any]) -> tuple[dict[str, dict[str, Any]], Counter]:
    """Every page's headings by key (label, pages, best level) and how often one heading nests another."""
    heads: dict[str, dict[str, Any]] = {}
    nest: Counter = Counter()
    for p in pages:
        for h in page_headings(p.text, p.title):
            key = norm_label(h.text)
            if not key or len(key) < 3:
                continue
            e = heads.setdefault(key, {"label": h.text, "pages": set(), "level": h.level})
            e["pages"].add(p.url)
            e["level"] = min(e["level"], h.level)
            if h.parent:
                nest[(norm_label(h.parent), key)] += 1
    return heads, nest


def _page_concepts(
    ci: ConceptIndex, heads: dict[str, dict[str, Any]], specs: list[SectionSpec], texts: dict[str, str]
) -> list[tuple[str, str, set[str]]]:
    """(label, kind, pages) of the concepts the pages suggest: the chosen headings, then the key phrases that
    no heading or pinned concept holds already."""
    cfg = ci.config
    chosen_heads = _select_headings(ci, heads, specs, cfg.max_headings)
    phrases = key_phrases(texts, top=cfg.max_phrases)
    new_concepts = [(heads[key]["label"], "heading", set(heads[key]["pages"])) for key in chosen_heads]
    taken = [f" {stem_key(lab)} " for lab, _, _ in new_concepts]
    taken += [f" {stem_key(ci.label(n))} " for n in ci.G.nodes if n != ROOT and ci.G.nodes[n].get("pinned")]
    for st in phrases:
        if any(f" {stem_key(st.phrase)} " in t for t in taken):  # already in a heading or charter concept
            continue
        taken.append(f" {stem_key(st.phrase)} ")
        new_concepts.append((phrase_surface(st), "phrase", set(st.pages)))
    return new_concepts


def _drop_nodes(ci: ConceptIndex, drop: Callable[[dict[str, Any]], bool], reason: str) -> int:
    """Remove the page concepts (never the root or a pinned node) ``drop`` picks; how many went."""
    n_removed = 0
    for n in list(ci.G.nodes):
        d = ci.G.nodes.get(n)
        if d is not None and n != ROOT and not d.get("pinned") and drop(d):
            ci.remove_node(n, reason)
            n_removed += 1
    return n_removed


def _insert_concepts(ci: ConceptIndex, new_concepts: list[tuple[str, str, set[str]]]) -> None:
    """Insert the concepts not in the index yet, most general first (so is-a chains form top-down)."""
    new_concepts.sort(key=lambda t: specificity(t[0], ci.rarity)[0])
    vecs = ci.embed([lab for lab, _, _ in new_concepts]) if new_concepts else None
    for i, (lab, kind, pgs) in enumerate(new_concepts):
        nid = ci.find(lab)
        if nid is not None and norm_label(ci.label(nid)) == norm_label(lab):
            continue
        ci.insert(lab, kind=kind, vector=vecs[i] if vecs is not None else None, support=pgs)


def _nested_part_of(ci: ConceptIndex, nest: Counter, heads: dict[str, dict[str, Any]], wanted: set[str]) -> None:
    """``part_of`` edges between concepts whose headings nest on a page."""
    for pk, ck in nest:
        if pk in wanted and ck in wanted:
            pn, cn = ci.find(heads.get(pk, {}).get("label", pk)), ci.find(heads.get(ck, {}).get("label", ck))
            if pn and cn and pn != cn and not ci.G.has_edge(pn, cn) and not ci.G.has_edge(cn, pn):
                ci.add_edge(pn, cn, PART_OF, "nested heading")


def _node_support(
    ci: ConceptIndex, assign: list[tuple[str, str, list[str]]], chunk_vecs: dict[str, np.ndarray]
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The chunks and pages of each node; sets each node's ``support`` (pages) and ``own_vec`` (mean chunk)."""
    node_chunks: dict[str, set[str]] = defaultdict(set)
    node_urls: dict[str, set[str]] = defaultdict(set)
    for url, cid, nodes in assign:
        for n in nodes:
            node_chunks[n].add(cid)
            node_urls[n].add(url)
    for n in ci.G.nodes:
        if n == ROOT:
            continue
        d = ci.G.nodes[n]
        d["support"] = set(node_urls.get(n, set()))
        ids = [c for c in node_chunks.get(n, ()) if c in chunk_vecs]
        d["own_vec"] = np.mean(np.stack([chunk_vecs[c] for c in ids]), axis=0) if ids else None
    return node_chunks, node_urls


@dataclass
class _FreshChunks:
    """What the summaries are written from: each node's chunks and pages, the chunks' vectors and texts, and
    the pages that changed or went since the last update."""

    node_chunks: dict[str, set[str]]
    node_urls: dict[str, set[str]]
    chunk_vecs: dict[str, np.ndarray]
    chunk_text: dict[str, str]
    changed: set[str]


def _summaries(ci: ConceptIndex, fresh: _FreshChunks, *, rebuild: bool) -> None:
    """A summary for every node whose pages changed or that has none (all of them on a rebuild), from its
    chunks nearest its centroid."""
    for n in ci.G.nodes:
        if n == ROOT:
            continue
        d = ci.G.nodes[n]
        if d["summary_50w"] and not (fresh.node_urls.get(n, set()) & fresh.changed) and not rebuild:
            continue
        ids = list(fresh.node_chunks.get(n, ()))
        cen = d.get("centroid")
        if cen is not None and ids:
            vecs = fresh.chunk_vecs
            ids.sort(key=lambda c: -float(np.dot(vecs[c], cen)) if c in vecs else 0.0)
        texts = [fresh.chunk_text[c] for c in ids[:6] if c in fresh.chunk_text]
        ci.set_summary(n, extractive_summary(texts, focus=d["label"]))


def _save_with_pointers(ci: ConceptIndex, memory: Memory, assign: list[tuple[str, str, list[str]]]) -> list[Any]:
    """Write the pointer rows (purge then rebuild) and save the graph; the rows written."""
    from memory_store import pointers as ptr

    rows = _pointer_rows(ci, assign)
    with memory.write_lock():
        ptr.write_pointers(memory.path, rows)
    ci.pointer_urls = sorted({r.url for r in rows})
    ci.save()
    return rows


def _select_headings(
    ci: ConceptIndex, heads: dict[str, dict[str, Any]], specs: list[SectionSpec], limit: int
) -> list[str]:
    """The headings worth a node: shared by several pages first, then the ones closest to the charter's
    sections; at most ``limit``."""
    if not heads:
        return []
    keys = sorted(heads, key=lambda k: (-len(heads[k]["pages"]), heads[k]["level"], k))[:150]
    focus = [f"{s.title}. {s.question or ''}" for s in specs]
    rel = np.zeros(len(keys))
    if focus:
        hv = ci.embed([heads[k]["label"] for k in keys])
        fv = ci.embed(focus)
        rel = (hv @ fv.T).max(axis=1)
    n_pages = max(1, len({u for h in heads.values() for u in h["pages"]}))
    scored = []
    for i, k in enumerate(keys):
        df = len(heads[k]["pages"])
        if n_pages >= 5 and df > 0.6 * n_pages:  # boilerplate shared by almost every page
            continue
        label = heads[k]["label"].strip()
        generic = re.fullmatch(
            r"(introduction|summary|conclusion|overview|references|see also|contents|"
            r"related( articles| posts| stories)?|share|comments?|more|menu|navigation|footer|"
            r"most (read|popular|viewed).*|read more.*|don.t miss|advertisement|trending.*|"
            r"sign up.*|subscribe.*|follow us.*|newsletter.*)",
            label.lower(),
        )
        # UI shouting ("DON'T MISS"), tweet credits ("— Name (@handle) date"), bylines and dates are not concepts
        noisy = (
            (label.isupper() and len(label.split()) >= 2 and len(heads[k]["pages"]) < 2)
            or not label[:1].isalnum()
            or "@" in label
            or re.search(r"\b(19|20)\d\d\b", label) is not None
            and len(label.split()) <= 6
        )
        if noisy:
            continue
        if generic or _context_dependent(heads[k]["label"]):
            continue
        scored.append((min(df, 5) / 5 + float(rel[i]), k))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [k for _, k in scored[:limit]]


_PRONOUNS = frozenset("it its this that these those they them their he she his her we our you your".split())


def _context_dependent(label: str) -> bool:
    """Headings that only make sense on their page ("How to improve it", "What this means")."""
    from memory_store.text import tokens

    toks = [w.lower() for w in tokens(label, "apostrophe")]
    return any(t in _PRONOUNS for t in toks) or not any(len(t) >= 4 for t in toks)


def _assign_chunks(
    ci: ConceptIndex, memory: Memory, pages: list[Any]
) -> tuple[list[tuple[str, str, list[str]]], dict[str, np.ndarray], dict[str, str]]:
    """(url, chunk_id, node ids) for every chunk of every page: the nodes whose label the chunk contains,
    plus its ``assign_top`` nearest node labels with cosine >= ``assign_min``; at most 5 nodes."""
    node_ids = [n for n in ci.G.nodes if n != ROOT and ci.G.nodes[n].get("label_vec") is not None]
    chunk_vecs: dict[str, np.ndarray] = {}
    chunk_text: dict[str, str] = {}
    for row in memory.chunks(include_vectors=True):
        chunk_vecs[row["id"]] = np.asarray(row["embedding"], dtype=np.float32)
        chunk_text[row["id"]] = row["text"]
    if not node_ids:
        return [], chunk_vecs, chunk_text
    L = np.stack([ci.G.nodes[n]["label_vec"] for n in node_ids])
    patterns = [_label_pattern(ci.label(n)) for n in node_ids]
    out = []
    for p in pages:
        for cid in p.chunk_ids:
            vec = chunk_vecs.get(cid)
            if vec is None:
                continue
            chosen = _nodes_of_chunk(ci.config, node_ids, patterns, L @ vec, chunk_text[cid])
            if chosen:
                out.append((p.url, cid, chosen))
    pairs = [(p.url, cid) for p in pages for cid in p.chunk_ids if cid in chunk_vecs]
    if pairs:
        _add_best_chunks(ci.config, out, pairs, np.stack([chunk_vecs[cid] for _, cid in pairs]) @ L.T, node_ids)
    return out, chunk_vecs, chunk_text


def _label_pattern(label: str) -> re.Pattern[str] | None:
    """The pattern that finds a node's label in a chunk's normalised text; None for a label too short to
    look for (under 4 characters unless an acronym)."""
    lab = norm_label(label)
    raw = label.strip()
    ok = len(lab) >= 4 or (len(raw) >= 2 and raw.isupper())
    return re.compile(r"\b" + re.escape(lab) + r"\b") if ok else None


def _nodes_of_chunk(
    cfg: IndexConfig, node_ids: list[str], patterns: list[re.Pattern[str] | None], sims: np.ndarray, text: str
) -> list[str]:
    """The nodes one chunk points to: the ones whose label it contains (nearest first), then its nearest
    labels above ``assign_min``; at most ``MAX_NODES_PER_CHUNK``."""
    low = " ".join(re.sub(r"[^\w\s()&+-]", " ", text.lower()).split())
    chosen = [node_ids[i] for i, pat in enumerate(patterns) if pat is not None and pat.search(low)]
    chosen.sort(key=lambda n: -sims[node_ids.index(n)])
    chosen = chosen[:MAX_NODES_PER_CHUNK]
    for i in np.argsort(-sims)[: cfg.assign_top]:
        if sims[i] >= cfg.assign_min and node_ids[i] not in chosen and len(chosen) < MAX_NODES_PER_CHUNK:
            chosen.append(node_ids[i])
    return chosen


def _add_best_chunks(
    cfg: IndexConfig,
    out: list[tuple[str, str, list[str]]],
    pairs: list[tuple[str, str]],
    sims: np.ndarray,
    node_ids: list[str],
) -> None:
    """Every node also gets its own ``node_top`` best chunks (so a narrow concept is never left empty):
    added to ``out`` in place. ``sims`` is chunks (as in ``pairs``) by nodes."""
    extra: dict[int, list[str]] = defaultdict(list)
    for j, n in enumerate(node_ids):
        for i in np.argsort(-sims[:, j])[: cfg.node_top]:
            if sims[i, j] >= cfg.assign_min:
                extra[int(i)].append(n)
    index = {(u, c): k for k, (u, c, _) in enumerate(out)}
    for i, ns in extra.items():
        key = pairs[i]
        if key in index:
            lst = out[index[key]][2]
            lst.extend(n for n in ns if n not in lst)
        else:
            index[key] = len(out)
            out.append((key[0], key[1], list(ns)))


def _poisson_sf(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam)."""
    if lam <= 0:
        return 0.0 if k > 0 else 1.0
    term = math.exp(-lam)
    cdf = term
    for i in range(1, k):
        term *= lam / i
        cdf += term
    return max(0.0, 1.0 - cdf)


def _influences(ci: ConceptIndex, node_chunks: dict[str, set[str]], total: int) -> None:
    """``influences`` edges between concepts that share chunks well above chance: observed co-occurrences
    n_ab >= 3, lift n_ab / (n_a n_b / N) >= 2 and Poisson upper-tail p < 0.01; oriented from the more
    general concept to the more specific; never between a node and its ancestor; cycles refused."""
    cfg = ci.config
    for u, v in [(u, v) for u, v, d in ci.G.edges(data=True) if d["type"] == INFLUENCES]:
        ci.G.remove_edge(u, v)
    nodes = [n for n in node_chunks if n in ci.G and node_chunks[n]]
    cands: dict[str, list[tuple[float, str, dict[str, float]]]] = defaultdict(list)
    for i, a in enumerate(nodes):
        anc_a = ci.ancestors(a) | ci.descendants(a)
        for b in nodes[i + 1 :]:
            if b in anc_a:
                continue
            nab = len(node_chunks[a] & node_chunks[b])
            if nab < cfg.infl_min_count:
                continue
            exp = len(node_chunks[a]) * len(node_chunks[b]) / total
            lift = nab / exp if exp else 0.0
            p = _poisson_sf(nab, exp)
            if lift < cfg.infl_min_lift or p >= cfg.infl_max_p:
                continue
            sa, sb = specificity(ci.label(a), ci.rarity)[0], specificity(ci.label(b), ci.rarity)[0]
            src, dst = (a, b) if sa <= sb else (b, a)
            cands[src].append((lift, dst, {"n_ab": nab, "expected": exp, "lift": lift, "p": p}))
    for src, lst in cands.items():
        lst.sort(key=lambda t: -t[0])
        for _lift, dst, scores in lst[: cfg.infl_per_node]:
            ci.add_edge(src, dst, INFLUENCES, "co-occurrence above chance", scores)


def _pointer_rows(ci: ConceptIndex, assign: list[tuple[str, str, list[str]]]) -> list[Any]:
    from memory_store.pointers import PointerRow

    anc_cache: dict[str, tuple[list[str], list[str]]] = {}

    def anc(n: str) -> tuple[list[str], list[str]]:
        if n not in anc_cache:
            ids = [n] + sorted(a for a in ci.ancestors(n) if a != ROOT)
            anc_cache[n] = (ids, [ci.path(a) for a in ids])
        return anc_cache[n]

    rows = []
    for url, cid, nodes in assign:
        for n in nodes:
            ids, paths = anc(n)
            rows.append(
                PointerRow(node_id=n, path=ci.path(n), chunk_id=cid, url=url, ancestors=ids, ancestor_paths=paths)
            )
    return rows


def snapshot_records(memory: Memory) -> list[dict[str, Any]]:
    """The concept index of ``memory``'s store as snapshot records (empty when it was never built)."""
    ci = ConceptIndex(memory=memory)
    if ci.graph_file is None or not ci.graph_file.is_file():
        return []
    return ci.snapshot_records()


__all__ = ["SectionSpec", "UpdateReport", "open_index", "snapshot_records", "update_from_store"]
