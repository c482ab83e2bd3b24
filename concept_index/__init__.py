"""concept_index: a per-charter DAG of concepts (networkx) that routes retrieval to a subtree of the store.

Concepts come from the charter's sections and concept hints, page headings and salient key phrases; edges are
typed is-a / part-of / influences; the graph and its pointer rows (node -> chunk ids) live in the charter's
store. Imports memory_store, never orchestrator.

Modules: ``dag`` (the graph, typed edges, cycle guard, centroids), ``insertion`` (O(depth) insertion and
promotion), ``status`` (stable/tentative, summaries), ``routing`` (``resolve_path``), ``persistence`` (graph.json,
JSON export, snapshot records), ``graph`` (``ConceptIndex``, the facade), ``build`` (incremental update from the
store), ``text`` (headings, key phrases, specificity), ``render`` (tree, Mermaid, DOT), ``errors``.
"""

from .build import SectionSpec, UpdateReport, open_index, snapshot_records, update_from_store
from .dag import EDGE_TYPES, INFLUENCES, IS_A, PART_OF, ROOT, IndexConfig
from .errors import ConceptIndexError, CycleRefused
from .graph import ConceptIndex
from .render import render, render_dot, render_json, render_mermaid, render_tree

__all__ = [
    "EDGE_TYPES",
    "INFLUENCES",
    "IS_A",
    "PART_OF",
    "ROOT",
    "ConceptIndex",
    "ConceptIndexError",
    "CycleRefused",
    "IndexConfig",
    "SectionSpec",
    "UpdateReport",
    "open_index",
    "render",
    "render_dot",
    "render_json",
    "render_mermaid",
    "render_tree",
    "snapshot_records",
    "update_from_store",
]
