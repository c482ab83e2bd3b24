"""Where a charter's settings come together: the charter's values, overridden by the ``BRT_*`` environment
variables (read by ``memory_store.settings``, the one place that reads them), overridden in turn by CLI flags
where the CLI has one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memory_store.settings import brt_home, settings

if TYPE_CHECKING:
    from memory_store import Memory

    from .charter import Charter


def memory_basepath() -> Path:
    return brt_home() / "memory"


def snapshots_dir() -> Path:
    return brt_home() / "snapshots"


def default_snapshot_path(charter_id: str) -> Path:
    """Where ``clean`` writes a charter's snapshot when no path is given (a new file each run)."""
    from memory_store.clock import file_stamp

    return snapshots_dir() / f"{charter_id}-{file_stamp()}.jsonl"


def embedding_model(charter: Charter | None = None) -> str | None:
    """The embedding model: BRT_EMBED_MODEL overrides the charter's memory.embedding_model; None = bundled default."""
    env = settings().embed_model
    if env:
        return env
    return charter.memory.embedding_model if charter is not None else None


def store_uri(charter: Charter | None = None) -> str | None:
    """Where the charter's store lives: BRT_STORE_URI overrides the charter's memory.uri; None = the local
    folder under $BRT_HOME/memory."""
    env = settings().store_uri
    if env:
        return env
    return charter.memory.uri if charter is not None else None


def storage_options(charter: Charter | None = None) -> dict[str, str]:
    """The object store's options from the charter (the standard AWS_* variables are read by the store)."""
    return dict(charter.memory.storage_options) if charter is not None else {}


def store_exists(charter: Charter) -> bool:
    """True when the charter's store exists (locally or on object storage)."""
    from memory_store import Memory

    return Memory.exists(
        charter.id, basepath=memory_basepath(), uri=store_uri(charter), storage_options=storage_options(charter)
    )


def open_memory(charter: Charter, *, create: bool = True) -> Memory:
    """The charter's evidence store (create=False raises StoreNotFound when it was never harvested; a charter
    with ``memory.enabled: false`` has none: MemoryDisabled)."""
    from memory_store import Memory

    require_memory(charter)

    return Memory(
        charter.id,
        basepath=memory_basepath(),
        model=embedding_model(charter),
        create=create,
        uri=store_uri(charter),
        storage_options=storage_options(charter),
    )


def require_memory(charter: Charter) -> None:
    """MemoryDisabled when the charter keeps no store (``memory.enabled: false``)."""
    if charter.memory.enabled:
        return
    from .errors import MemoryDisabled

    raise MemoryDisabled(
        f"charter {charter.id} has memory.enabled: false: its harvests keep the pages' text in a snapshot "
        "(brt harvest says where) and write no store to search or synthesize from; set memory.enabled: true "
        "and harvest again, or build a store from a kept snapshot with brt restore SNAPSHOT"
    )
