"""The audit trail a store keeps beside its chunks, and the snapshot records made of it.

- ``<store>/charter_versions.jsonl``: the charter as each harvest (and synthesis) used it: its text, sha256,
  format and file path, one line per use (``record_charter``).
- ``<store>/synthesis.json``: the last synthesis result, every section, block and gap with chunk ids, the
  acceptance verdicts, conflicts and agreements, the concept route of each section and the sha256 of the
  charter it answered (``record_synthesis``).

``/clean`` adds them to the snapshot (``snapshot_records``) as new record types:

- ``charter``: one per distinct charter text: ``charter_id``, ``sha256`` (of ``text``, UTF-8), ``text``,
  ``format`` (yaml or json), ``source`` (the file it was read from), ``roles`` (harvest, synthesize, clean),
  ``recorded_at`` (its first use);
- ``synthesis``: the last synthesis (``synthesis_record.SynthesisRecord``'s JSON: as ``brt synthesize --json``
  prints it, plus ``charter_sha256``, ``routes``, the files written and ``markdown``);
- ``concept_graph``: the concept index as stored (``graph``: nodes, edges, events, page signatures; node
  vectors left out with ``--no-vectors``) and ``concept_pointer``: one per pointer row (node -> chunk), so a
  restore routes exactly as the harvested store did.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from ..synthesis_record import SynthesisRecord

log = logging.getLogger(__name__)

CHARTER_FILE = "charter_versions.jsonl"
SYNTHESIS_FILE = "synthesis.json"
GRAPH_VECTORS = ("label_vec", "own_vec", "centroid")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def charter_text(charter: Charter) -> tuple[str, str]:
    """(text, format) of the charter as used: its file's text when that file still says the same (it may have
    been edited since it was loaded, or the charter changed in memory, as ``brt demo`` does when it moves the
    port), else the charter serialised as YAML. A charter with secrets (``memory.storage_options``, a
    ``memory.uri`` with ``user:pass@``) is always serialised, without them: they never reach the store's
    records or a snapshot."""
    import yaml

    from memory_store import redact_uri

    from ..charter import parse_charter

    uri = charter.memory.uri
    secret = bool(charter.memory.storage_options) or bool(uri and redact_uri(uri) != uri)
    source = charter.source
    if source is not None and source.is_file() and not secret:
        try:
            text = source.read_text(encoding="utf-8")
            fmt = "json" if source.suffix.lower() == ".json" else "yaml"
            data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
            if parse_charter(data, source=source).model_dump() == charter.model_dump():
                return text, fmt
        except Exception as exc:  # noqa: BLE001 - a changed or unreadable file: serialise the charter instead
            log.debug("charter file %s does not match the charter in use: %s", source, exc)
    data = charter.model_dump(mode="json", exclude_defaults=True)  # storage_options are excluded from dumps
    data.setdefault("id", charter.id)
    if uri and isinstance(data.get("memory"), dict):
        data["memory"]["uri"] = redact_uri(uri)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "yaml"


def parse_charter_text(text: str, fmt: str) -> Charter:
    """A recorded charter text back as a Charter (CharterError when it is not valid)."""
    import yaml

    from ..charter import parse_charter
    from ..errors import CharterError

    try:
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CharterError("<recorded charter>", [("", f"unreadable {fmt}: {exc}")]) from None
    return parse_charter(data, source="<recorded charter>")


def record_charter(charter: Charter, memory: Memory, role: str) -> str:
    """Append the charter as ``role`` (harvest, synthesize) uses it to the store's charter versions (once per
    text and role); returns its sha256."""
    text, fmt = charter_text(charter)
    sha = sha256_text(text)
    if any(line.get("sha256") == sha and line.get("role") == role for line in stored_charters(memory)):
        return sha
    line = {
        "role": role,
        "recorded_at": _now(),
        "charter_id": charter.id,
        "sha256": sha,
        "format": fmt,
        "source": str(charter.source) if charter.source else None,
        "text": text,
    }
    with memory.write_lock():
        memory.path.mkdir(parents=True, exist_ok=True)
        with open(memory.path / CHARTER_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return sha


def stored_charters(memory: Memory) -> list[dict[str, Any]]:
    """The store's charter version lines, oldest first (a truncated line is skipped)."""
    path = memory.path / CHARTER_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            log.warning("skipping an unreadable line of %s", path)
    return out


def charter_records(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``charter`` snapshot record per distinct charter text, in order of first use."""
    by_sha: dict[str, dict[str, Any]] = {}
    for line in lines:
        rec = by_sha.get(line["sha256"])
        if rec is None:
            rec = by_sha[line["sha256"]] = {
                "type": "charter",
                "charter_id": line.get("charter_id"),
                "sha256": line["sha256"],
                "format": line.get("format", "yaml"),
                "source": line.get("source"),
                "roles": [],
                "recorded_at": line.get("recorded_at"),
                "text": line["text"],
            }
        if line.get("role") not in rec["roles"]:
            rec["roles"].append(line.get("role"))
    return list(by_sha.values())


def record_synthesis(
    charter: Charter, record: SynthesisRecord, memory: Memory, routes: dict[int, str | None] | None = None
) -> Path:
    """Keep ``record`` as the store's last synthesis (``<store>/synthesis.json``), with the sha256 of the
    charter it answered and each section's concept route (its files and Markdown: ``record.recorded``)."""
    from dataclasses import replace

    from ..synthesis_record import Recorded

    sha = record_charter(charter, memory, "synthesize")
    kept = replace(
        record.recorded or Recorded(),
        charter_sha256=sha,
        routes={s.title: (routes or {}).get(i) for i, s in enumerate(charter.outputs.sections)},
    )
    return write_synthesis(memory, replace(record, recorded=kept).to_json())


def write_synthesis(memory: Memory, doc: dict[str, Any]) -> Path:
    path = memory.path / SYNTHESIS_FILE
    with memory.write_lock():
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    return path


def stored_synthesis(memory: Memory) -> dict[str, Any] | None:
    """The store's last synthesis, or None."""
    try:
        return json.loads((memory.path / SYNTHESIS_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        log.warning("unreadable %s: %s", memory.path / SYNTHESIS_FILE, exc)
        return None


def graph_path(memory: Memory) -> Path:
    from concept_index.graph import GRAPH_FILE

    return memory.path / GRAPH_FILE


def snapshot_records(charter: Charter, memory: Memory, *, vectors: bool = True) -> list[dict[str, Any]]:
    """The audit trail's snapshot records: charter(s), the last synthesis, the concept graph and pointers."""
    lines = stored_charters(memory)
    if not any(line.get("role") == "harvest" for line in lines):
        # a store harvested before the trail existed: the charter /clean is given is the best record
        text, fmt = charter_text(charter)
        lines.append({"role": "clean", "recorded_at": _now(), "charter_id": charter.id, "sha256": sha256_text(text),
                      "format": fmt, "source": str(charter.source) if charter.source else None, "text": text})
    records = charter_records(lines)
    synthesis = stored_synthesis(memory)
    if synthesis is not None:
        records.append({"type": "synthesis", **synthesis})
    gpath = graph_path(memory)
    if gpath.is_file():
        graph = json.loads(gpath.read_text(encoding="utf-8"))
        if not vectors:
            for node in graph.get("nodes", []):
                for key in GRAPH_VECTORS:
                    node.pop(key, None)
        records.append({"type": "concept_graph", "vectors": vectors, "graph": graph})
        from memory_store.pointers import read_pointers

        records.extend({"type": "concept_pointer", **asdict(row)} for row in read_pointers(memory.path))
    return records
