"""The calls harvest, synthesis and clean make into the trail (each marked "audit" at its call site); none of
them may stop the stage that calls it.

- ``after_synthesis``: the store keeps the result (``store.record_synthesis``);
- ``after_harvest_start``: the store keeps the charter a harvest uses (``store.record_charter``);
- ``clean_records``: the audit trail's snapshot records (``store.snapshot_records``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_store import Memory

    from ..charter import Charter
    from ..synthesis_record import SynthesisRecord

log = logging.getLogger(__name__)


def after_synthesis(
    charter: Charter, record: SynthesisRecord, memory: Memory, routes: dict[int, str | None] | None = None
) -> None:
    """Keep the synthesis in the store for /clean's snapshot; never fails the synthesis."""
    from .store import record_synthesis

    try:
        record_synthesis(charter, record, memory, routes)
    except Exception:  # the outputs are written; only the snapshot's copy is missing
        log.exception("cannot keep the synthesis of %s in its store", charter.id)


def after_harvest_start(charter: Charter, memory: Memory) -> None:
    """Keep the charter a harvest uses in the store; never fails the harvest."""
    from .store import record_charter

    try:
        record_charter(charter, memory, "harvest")
    except Exception:
        log.exception("cannot keep the charter of %s in its store", charter.id)


def clean_records(charter: Charter, memory: Memory, *, vectors: bool) -> list[dict[str, Any]]:
    from .store import snapshot_records

    return snapshot_records(charter, memory, vectors=vectors)
