"""``import lancedb`` without paying for the REST namespace client it never uses for a local store.

lancedb imports ``lance_namespace`` eagerly, which imports the generated OpenAPI client
``lance_namespace_urllib3_client``: its package ``__init__`` and its ``models`` package import every API class
and every pydantic model (about 300), roughly 1.5 s on a small CPU (lance-format/lance#9273). Both ``__init__``
files are nothing but ``from X import Y`` lines, so they are replaced by modules that import each name from its
own submodule on first access (PEP 562 ``__getattr__``). The same names resolve to the same objects; only the
ones somebody asks for are imported. If the files ever hold anything else, the real modules are used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import threading
from types import ModuleType
from typing import Any

LAZY_PACKAGES = ("lance_namespace_urllib3_client", "lance_namespace_urllib3_client.models")
_FROM_IMPORT = re.compile(r"^from\s+([\w.]+)\s+import\s+(\w+)(?:\s+as\s+(\w+))?\s*(?:#.*)?$")
_VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']\s*$""")
_lock = threading.Lock()


def _parse_init(source: str) -> tuple[dict[str, tuple[str, str]], dict[str, Any]] | None:
    """name -> (module, attribute) for an ``__init__`` made of plain ``from X import Y`` lines; None otherwise."""
    names: dict[str, tuple[str, str]] = {}
    plain: dict[str, Any] = {}
    in_doc = False
    for raw in source.splitlines():
        line = raw.strip()
        if line.count('"""') % 2 == 1:
            in_doc = not in_doc
            continue
        if in_doc or not line or line.startswith("#") or line.startswith('"""'):
            continue
        m = _FROM_IMPORT.match(line)
        if m:
            names[m.group(3) or m.group(2)] = (m.group(1), m.group(2))
            continue
        v = _VERSION.match(line)
        if v:
            plain["__version__"] = v.group(1)
            continue
        return None  # anything else (code, multi-line imports): not safe to make lazy
    return names, plain


class _LazyInitLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.machinery.ModuleSpec, names: dict[str, tuple[str, str]], plain: dict) -> None:
        self._real = real
        self._names = names
        self._plain = plain

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        names = self._names
        module.__dict__.update(self._plain)
        module.__all__ = list(names)  # type: ignore[attr-defined]

        def __getattr__(attr: str) -> Any:
            target = names.get(attr)
            if target is None:
                raise AttributeError(f"module {module.__name__!r} has no attribute {attr!r}")
            value = getattr(importlib.import_module(target[0]), target[1])
            setattr(module, attr, value)
            return value

        def __dir__() -> list[str]:
            return sorted(set(module.__dict__) | set(names))

        module.__getattr__ = __getattr__  # type: ignore[attr-defined]
        module.__dir__ = __dir__  # type: ignore[method-assign]


class _LazyInitFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LAZY_PACKAGES:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or not real.origin or not real.submodule_search_locations:
            return None
        try:
            with open(real.origin, encoding="utf-8") as fh:
                parsed = _parse_init(fh.read())
        except OSError:
            return None
        if parsed is None:
            return None
        spec = importlib.util.spec_from_file_location(
            fullname,
            real.origin,
            loader=_LazyInitLoader(real, *parsed),
            submodule_search_locations=list(real.submodule_search_locations),
        )
        return spec


_finder = _LazyInitFinder()


_lancedb: ModuleType | None = None


def import_lancedb() -> ModuleType:
    """``import lancedb`` with the namespace client's package ``__init__`` files made lazy (see module doc)."""
    global _lancedb
    if _lancedb is not None:
        return _lancedb
    # Not sys.modules: while one thread imports lancedb, sys.modules already holds the half-initialised module
    # (another thread would find no ``connect`` in it); ``import`` under the lock waits for the import to end.
    with _lock:
        if _lancedb is None:
            if not any(name in sys.modules for name in LAZY_PACKAGES) and _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            try:
                import lancedb
            finally:
                if _finder in sys.meta_path:
                    sys.meta_path.remove(_finder)
            _lancedb = lancedb
    return _lancedb
