"""The code's shape, checked on every run: no import cycle between project modules (function-local and
type-checking imports count), no private name imported from another module, the layering
``orchestrator -> concept_index -> memory_store`` (never back), the floors inside ``orchestrator`` (base < trail <
stages < audit < service < shells: no stage imports the audit, no import runs back up a floor), ``BRT_*``
variables read in one module only, and no function more complex than McCabe 15 (ruff's C901) outside a short
allow-list, and the code's citations of the contracts pointing at sections of docs/contracts.md (never at a DESIGN
file the repository does not hold), and no word or number regex outside memory_store.text, the allowlist matched
only by orchestrator.egress, and every exception class under one root. Pure AST, text and ruff: nothing of the
project is imported."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("orchestrator", "memory_store", "concept_index")
#: Layer of each package: a package may import only packages of a lower or equal layer.
LAYER = {"memory_store": 0, "concept_index": 1, "orchestrator": 2}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name of the importing file
    target: str  # dotted module imported (a project module: a file or a package __init__)
    names: tuple[str, ...]  # names taken from it (``from target import a, b``); () for ``import target``
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files() -> dict[str, Path]:
    """Dotted name -> file of every module of the three packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def _is_package(name: str, files: dict[str, Path]) -> bool:
    return name in files and files[name].name == "__init__.py"


def _resolve(importer: str, files: dict[str, Path], node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer, files):
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, files: dict[str, Path]) -> list[Import]:
    """Every import statement of module ``name`` that reaches a project module: at module level, inside
    functions and under ``if TYPE_CHECKING:`` alike."""
    tree = ast.parse(files[name].read_text(encoding="utf-8"))
    out: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    out.append(Import(name, _nearest(alias.name, files), (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(name, files, node)
            if module.split(".")[0] not in PACKAGES:
                continue
            plain: list[str] = []
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in files:  # ``from package import submodule``
                    out.append(Import(name, sub, (), node.lineno))
                else:
                    plain.append(alias.name)
            if plain:
                out.append(Import(name, _nearest(module, files), tuple(plain), node.lineno))
    return out


def _nearest(module: str, files: dict[str, Path]) -> str:
    while module and module not in files:
        module = module.rpartition(".")[0]
    return module


def all_imports() -> list[Import]:
    files = project_files()
    return [imp for name in files for imp in imports_of(name, files)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _edges(imports: list[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if imp.target != imp.importer:
            edges.setdefault(imp.importer, set()).add(imp.target)
    return edges


def test_no_import_cycles():
    cycles = _cycles(_edges(all_imports()))
    assert not cycles, "import cycles (function-local and TYPE_CHECKING imports included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _package_of(module: str) -> str:
    return module.split(".")[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_imported_across_modules():
    files = project_files()
    bad = []
    for imp in all_imports():
        for name in imp.names:
            if _private(name):
                bad.append(f"{imp.importer}:{imp.line} imports {name} from {imp.target}")
        # a private module may be used inside its own package only
        parts = imp.target.split(".")
        for i, part in enumerate(parts):
            if _private(part):
                owner = ".".join(parts[:i])
                inside = imp.importer == owner or imp.importer.startswith(owner + ".")
                if not inside:
                    bad.append(f"{imp.importer}:{imp.line} imports the private module {imp.target}")
    assert files and not bad, "\n".join(bad)


#: Underscore names that are public API (namedtuple methods).
_PUBLIC_UNDERSCORE = frozenset({"_replace", "_asdict", "_fields", "_make"})


def _own_private_attributes(tree: ast.AST) -> set[str]:
    """Private attribute names a module defines itself: ``self._x = ...`` and class-level ``_x`` fields."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                own.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = [item.target] if isinstance(item, ast.AnnAssign) else getattr(item, "targets", [])
                own.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                    own.add(item.name)
    return own


def test_no_private_attribute_reached_through_another_object():
    """``obj._x`` only on ``self``/``cls`` or on objects of a class the same module defines: no module reaches
    into another module's private state (such as ``memory._store._table(...)`` from the orchestrator)."""
    bad = []
    for name, path in project_files().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _own_private_attributes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in _PUBLIC_UNDERSCORE:
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                if node.attr in own:
                    continue
                bad.append(f"{name}:{node.lineno} .{node.attr} on {ast.unparse(owner)}")
    assert not bad, "\n".join(bad)


def test_layering():
    bad = []
    for imp in all_imports():
        src, dst = _package_of(imp.importer), _package_of(imp.target)
        if LAYER[dst] > LAYER[src]:
            bad.append(f"{imp.importer}:{imp.line} imports {imp.target} ({src} may not import {dst})")
    assert not bad, "\n".join(bad)


def test_the_checks_see_the_project():
    """The checks above must not pass because they saw nothing."""
    imports = all_imports()
    assert len(project_files()) > 30
    assert any(i.importer.startswith("orchestrator") and i.target.startswith("memory_store") for i in imports)
    # a cycle and a private import are found when present
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert _private("_x") and not _private("__version__")



# -- rooms inside orchestrator: each stage a room, the audit above the stages, the shells on top -----------------

#: The floors of ``orchestrator``, lowest first: a module may import its own floor or a lower one, never a higher.
#: Each entry is a module or a package (all below it). Every orchestrator module must stand on one floor.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("orchestrator", "orchestrator.api", "orchestrator.errors", "orchestrator.url_safety",
              "orchestrator.untrusted", "orchestrator.files", "orchestrator.safe_paths", "orchestrator.config",
              "orchestrator.charter", "orchestrator.charter_syntax", "orchestrator.charter_starter",
              "orchestrator.progress", "orchestrator.terminal", "orchestrator.formats",
              "orchestrator.synthesis_record")),
    ("trail", ("orchestrator.trail",)),
    ("stages", ("orchestrator.harvest", "orchestrator.evidence", "orchestrator.synthesize", "orchestrator.clean")),
    ("audit", ("orchestrator.audit",)),
    ("service", ("orchestrator.service", "orchestrator.evaluate", "orchestrator.doctor", "orchestrator.demo",
                 "orchestrator.browser_mcp")),
    ("shells", ("orchestrator.cli", "orchestrator.mcp")),
)
#: The stages: a synthesis, a harvest or a clean never reaches into the audit (it calls the trail below it).
STAGES = dict(FLOORS)["stages"]
#: Imports allowed to run back up a floor: ``importer -> target``. Nothing may be added.
CLIMB_ALLOWED: frozenset[str] = frozenset()


def floor_of(module: str, floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> int | None:
    """The floor (index in ``floors``) of an orchestrator module: its longest listed prefix decides."""
    best: tuple[int, int] | None = None  # (prefix length, floor)
    for level, (_, rooms) in enumerate(floors):
        for room in rooms:
            if (module == room or module.startswith(room + ".")) and (best is None or len(room) > best[0]):
                best = (len(room), level)
    return best[1] if best else None


def climbing_imports(imports: list[Import], floors: tuple[tuple[str, tuple[str, ...]], ...] = FLOORS) -> list[str]:
    """``importer:line imports target (floor -> floor)`` of every import from a lower floor to a higher one."""
    names = [name for name, _ in floors]
    out = []
    for imp in imports:
        src, dst = floor_of(imp.importer, floors), floor_of(imp.target, floors)
        if src is not None and dst is not None and dst > src:
            out.append(f"{imp.importer}:{imp.line} imports {imp.target} ({names[src]} -> {names[dst]})")
    return out


def test_every_orchestrator_module_stands_on_a_floor():
    lost = [name for name in project_files() if name.startswith("orchestrator") and floor_of(name) is None]
    assert not lost, f"place these modules on a floor of FLOORS: {lost}"


def test_no_stage_imports_audit():
    bad = [f"{imp.importer}:{imp.line} imports {imp.target}" for imp in all_imports()
           if any(imp.importer == s or imp.importer.startswith(s + ".") for s in STAGES)
           and (imp.target == "orchestrator.audit" or imp.target.startswith("orchestrator.audit."))]
    assert not bad, "a stage calls the trail (orchestrator.trail), never the audit:\n" + "\n".join(bad)


def test_no_import_runs_back_up_a_floor():
    found = climbing_imports(all_imports())
    bad = [f for f in found if f.split(":")[0] + " -> " + f.split(" imports ")[1].split(" ")[0] not in CLIMB_ALLOWED]
    assert not bad, "imports that run back up a floor (move the code down, or pass it in):\n" + "\n".join(bad)


def test_the_floor_checks_see_a_climb():
    floors = (("low", ("orchestrator.a",)), ("high", ("orchestrator.b",)))
    down = Import("orchestrator.b.x", "orchestrator.a", ("f",), 3)
    up = Import("orchestrator.a.y", "orchestrator.b.z", (), 7)
    assert climbing_imports([down, up], floors) == ["orchestrator.a.y:7 imports orchestrator.b.z (low -> high)"]
    assert floor_of("orchestrator.evidence.judge.acceptance") == floor_of("orchestrator.synthesize")
    assert floor_of("orchestrator.trail.store") < floor_of("orchestrator.harvest.run") < floor_of("orchestrator.audit")


# -- settings: the environment is read in one place ------------------------------------------------------------

#: The one module that reads ``BRT_*`` variables.
SETTINGS_MODULE = "memory_store.settings"


def _brt_constants(tree: ast.AST) -> dict[str, str]:
    """Module-level names bound to a ``"BRT_..."`` string."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and node.value.value.startswith("BRT_"):
                    out[target.id] = node.value.value
    return out


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id == "environ"


def environment_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, variable) of every read of a ``BRT_*`` variable: ``os.environ.get(...)``, ``os.getenv(...)``,
    ``os.environ[...]`` with the name as a literal or a module constant."""
    constants = _brt_constants(tree)

    def brt_name(arg: ast.AST) -> str | None:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("BRT_"):
            return arg.value
        if isinstance(arg, ast.Name):
            return constants.get(arg.id)
        return None

    reads = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            func = node.func
            if (func.attr == "get" and _is_environ(func.value)) or func.attr == "getenv":
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            key = node.slice
        name = brt_name(key) if key is not None else None
        if name:
            reads.append((node.lineno, name))
    return reads


def test_brt_variables_are_read_only_by_the_settings_module():
    bad = []
    seen_in_settings = False
    for name, path in project_files().items():
        reads = environment_reads(ast.parse(path.read_text(encoding="utf-8")))
        if name == SETTINGS_MODULE:
            seen_in_settings = True
            continue
        bad += [f"{name}:{line} reads {var}" for line, var in reads]
    assert seen_in_settings and not bad, "read BRT_* variables through memory_store.settings:\n" + "\n".join(bad)


def test_environment_reads_are_found():
    tree = ast.parse(
        "import os\nENV = 'BRT_X'\na = os.environ.get('BRT_HOME')\nb = os.getenv(ENV)\nc = os.environ['BRT_Y']\n"
        "d = os.environ.get('HOME')\n"
    )
    assert [v for _, v in environment_reads(tree)] == ["BRT_HOME", "BRT_X", "BRT_Y"]


# -- words and numbers: one module owns their patterns ----------------------------------------------------------

#: The one module that may write a word or number regex (``WORD_SHAPES``, ``NUMBER_SHAPES``).
TEXT_MODULE = "memory_store.text"
#: Modules allowed a word or number regex of their own besides it. Nothing may be added.
TOKENISER_ALLOWED: frozenset[str] = frozenset()
_RE_CALLS = frozenset({"compile", "findall", "finditer", "search", "match", "fullmatch", "split", "sub", "subn"})
_PROSE = ("the quick brown fox jumps over the lazy dog near old barns",
          "The Quick Brown Fox Jumps Over The Lazy Dog Near Old Barns")
_FIGURES = "paid 1,234.5 then 42 and 7 in 2020 for 99 items"


def _literal(node: ast.AST) -> str | None:
    """A string literal, or literals joined with ``+`` (a pattern written over several lines)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return left + right if left is not None and right is not None else None
    return None


def tokenises(pattern: str) -> str | None:
    """"word" or "number" when ``pattern`` reads words or numbers out of text (six whole words of a line of
    prose, or four numbers of a line of figures), else None: what a pattern does, however it is spelled."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return None
    for prose in _PROSE:
        found = [m.group(0) for m in compiled.finditer(prose) if m.group(0)]
        if len(found) >= 6 and all(w in prose.split() for w in found):
            return "word"
    numbers = [m.group(0).strip(".,") for m in compiled.finditer(_FIGURES) if m.group(0).strip(".,")]
    if len(numbers) >= 4 and all(re.fullmatch(r"[\d,.]+", n) for n in numbers):
        return "number"
    return None


def regex_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, pattern) of every literal pattern handed to ``re.compile`` / ``re.findall`` / ``re.sub`` …"""
    out = []
    for node in ast.walk(tree):
        func = node.func if isinstance(node, ast.Call) and node.args else None
        if (isinstance(func, ast.Attribute) and func.attr in _RE_CALLS and isinstance(func.value, ast.Name)
                and func.value.id == "re"):
            pattern = _literal(node.args[0])
            if pattern is not None:
                out.append((node.lineno, pattern))
    return out


def test_word_and_number_patterns_live_in_memory_store_text():
    bad, seen = [], 0
    for name, path in project_files().items():
        if name == TEXT_MODULE or name in TOKENISER_ALLOWED:
            continue
        for line, pattern in regex_literals(ast.parse(path.read_text(encoding="utf-8"))):
            seen += 1
            kind = tokenises(pattern)
            if kind:
                bad.append(f"{name}:{line} a {kind} pattern {pattern!r}")
    assert seen > 50 and not bad, (
        "read words and numbers with memory_store.text (word_pattern, number_pattern, tokens: add a shape "
        "there):\n" + "\n".join(bad))


def test_the_tokeniser_rule_sees_word_and_number_patterns():
    for word in (r"\w+", r"[A-Za-z]+", r"[^\W_]+", r"[a-z0-9]+", r"\b[A-Z][a-z]+\b", r"[\w][\w.+-]*"):
        assert tokenises(word) == "word", word
    for number in (r"\d+", r"\d[\d,.]*", r"[0-9]+(?:\.[0-9]+)?", r"\d"):
        assert tokenises(number) == "number", number
    for other in (r"^\d{4}-\d{2}-\d{2}\Z", r"(\d+)\.\d+\.\d+\.\d+", r"\s+", r"\b(?:not|no)\b", r"[.!?]"):
        assert tokenises(other) is None, other
    tree = ast.parse("import re\nA = re.compile(r'\\w+')\nB = re.findall('[a-z]' + '+', s)\nC = compile('x')\n")
    assert [p for _, p in regex_literals(tree)] == [r"\w+", "[a-z]+"]


# -- egress: one package owns the allowlist ---------------------------------------------------------------------

#: The package that owns the allowlist's semantics (``EgressPolicy`` and its functions).
EGRESS_PACKAGE = "orchestrator.egress"
#: The allowlist's matching and parsing: defined and called only inside the egress package. ``.allows(`` (the
#: Python API's ``Charter.allows``) is not called by brt's own code: it asks the run's policy.
ALLOWLIST_NAMES = frozenset({"host_allowed", "url_allowed", "exact_allowed", "url_patterns", "parse_allowlist"})
#: Modules allowed to match the allowlist themselves. Nothing may be added.
EGRESS_ALLOWED: frozenset[str] = frozenset()


def allowlist_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every definition of the allowlist's functions, and every use of one or of ``.allows``
    (a call, or the function handed on: ``DocumentFetcher(guard, charter.allows)``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in ALLOWLIST_NAMES:
            out.append((node.lineno, f"defines {node.name}"))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in ALLOWLIST_NAMES:
            out.append((node.lineno, f"uses {node.id}"))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and (
                node.attr in ALLOWLIST_NAMES or node.attr == "allows"):
            out.append((node.lineno, f"uses {node.attr}"))
    return sorted(out)


def test_only_the_egress_package_matches_the_allowlist():
    bad, inside = [], 0
    for name, path in project_files().items():
        uses = allowlist_uses(ast.parse(path.read_text(encoding="utf-8")))
        if name == EGRESS_PACKAGE or name.startswith(EGRESS_PACKAGE + "."):
            inside += len(uses)
            continue
        if name not in EGRESS_ALLOWED:
            bad += [f"{name}:{line} {what}" for line, what in uses]
    assert inside >= 5 and not bad, "ask the run's EgressPolicy (orchestrator.egress) instead:\n" + "\n".join(bad)


def test_the_egress_rule_sees_allowlist_matching():
    tree = ast.parse("def url_allowed(u, d):\n    pass\nx = charter.allows(u)\ny = host_allowed(h, d)\n"
                     "z = policy.permits(u)\nf = Fetcher(guard, host.charter.allows)\n")
    assert [what for _, what in allowlist_uses(tree)] == [
        "defines url_allowed", "uses allows", "uses host_allowed", "uses allows"]


# -- one exception tree -----------------------------------------------------------------------------------------

#: The root every exception class of the three packages derives from, and where it is defined.
EXCEPTION_ROOT = "BrtException"
EXCEPTION_ROOT_MODULE = "memory_store.errors"
#: Exception classes allowed another root. Nothing may be added.
EXCEPTION_ROOT_ALLOWED: frozenset[str] = frozenset()


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _is_builtin_exception(name: str) -> bool:
    import builtins

    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def exception_classes(modules: dict[str, ast.AST]) -> dict[str, tuple[str, list[str]]]:
    """``module.Class`` -> (class name, base names) of every class of ``modules`` (by name; brt's class names
    are unique enough for this)."""
    return {f"{module}.{node.name}": (node.name, [_base_name(b) for b in node.bases])
            for module, tree in modules.items() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def without_root(modules: dict[str, ast.AST], root: str = EXCEPTION_ROOT) -> list[str]:
    """Exception classes (a builtin exception, a third-party ``...Error``/``...Exception`` or another such class
    among their bases) none of whose ancestors, followed by name through ``modules``, is ``root``."""
    classes = exception_classes(modules)
    bases_of: dict[str, list[str]] = {}
    for name, bases in classes.values():
        bases_of.setdefault(name, []).extend(bases)

    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        out = set()
        for base in bases_of.get(name, []):
            if base and base not in seen:
                out |= {base} | ancestors(base, seen | {name})
        return out

    bad = []
    for where, (name, _) in sorted(classes.items()):
        found = ancestors(name)
        is_exception = any(_is_builtin_exception(a) or a.endswith(("Error", "Exception")) for a in found)
        if is_exception and name != root and root not in found and where not in EXCEPTION_ROOT_ALLOWED:
            bad.append(where)
    return bad


def test_every_exception_derives_from_the_one_root():
    modules = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in project_files().items()}
    assert f"{EXCEPTION_ROOT_MODULE}.{EXCEPTION_ROOT}" in exception_classes(modules)
    bad = without_root(modules)
    assert not bad, f"derive from {EXCEPTION_ROOT_MODULE}.{EXCEPTION_ROOT} (or a branch of it):\n" + "\n".join(bad)


def test_the_root_rule_sees_an_exception_outside_the_tree():
    tree = ast.parse("class BrtException(Exception): ...\nclass A(BrtException): ...\n"
                     "class B(A, ValueError): ...\nclass Stray(RuntimeError): ...\nclass Tool(ToolError): ...\n"
                     "class Plain: ...\n")
    assert without_root({"m": tree}) == ["m.Stray", "m.Tool"]


# -- complexity -------------------------------------------------------------------------------------------------

MAX_COMPLEXITY = 15
#: Folders whose functions the rule covers.
CHECKED = ("orchestrator", "memory_store", "concept_index", "tests", "bench", "scripts")
#: Functions above the limit that are being rewritten elsewhere: ``path::function``. Nothing may be added.
COMPLEXITY_ALLOWED: frozenset[str] = frozenset()


def too_complex(paths: list[Path], limit: int = MAX_COMPLEXITY) -> list[str]:
    """``path::function (complexity)`` of every function above ``limit``, as ruff's C901 computes it."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901", "--config",
         f"lint.mccabe.max-complexity={limit}", "--output-format", "json", "--exit-zero", *map(str, paths)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = []
    for item in json.loads(proc.stdout):
        file = Path(item["filename"]).resolve()
        rel = file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else file.name
        # "`name` is too complex (21 > 15)"
        function = item["message"].split("`")[1]
        out.append(f"{rel}::{function} {item['message'].rsplit('(', 1)[1].rstrip(')')}")
    return sorted(out)


def _ruff_available() -> bool:
    return subprocess.run([sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode == 0


needs_ruff = pytest.mark.skipif(not _ruff_available(), reason="ruff is not installed (pip install -e '.[test]')")


@needs_ruff
def test_no_function_above_mccabe_15():
    found = too_complex([ROOT / folder for folder in CHECKED if (ROOT / folder).is_dir()])
    bad = [f for f in found if f.split(" ")[0] not in COMPLEXITY_ALLOWED]
    assert not bad, f"functions above McCabe {MAX_COMPLEXITY} (split them up):\n" + "\n".join(bad)


@needs_ruff
def test_the_complexity_rule_sees_a_complex_function(tmp_path):
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(MAX_COMPLEXITY))
    sample = tmp_path / "sample.py"
    sample.write_text(f"def tangled(x):\n{branches}\n    return -1\n\n\ndef plain(x):\n    return x\n")
    found = too_complex([sample])
    assert len(found) == 1 and "::tangled" in found[0] and found[0].endswith(f"{MAX_COMPLEXITY + 1} > 15")


# -- citations of the contracts page -------------------------------------------------------------------------------

#: Folders whose Python files may cite the contracts; the repository holds no DESIGN.md, so none may cite one.
CITING = (*PACKAGES, "scripts", "tests", "bench")
_DESIGN = re.compile(r"\bDESIGN\b")
_CONTRACTS_CITE = re.compile(r'docs/contracts\.md,?\s*(?:#\s*)?\(?"([^"]+)"')


def _citing_files() -> list[Path]:
    own = Path(__file__).resolve()
    return [p for folder in CITING for p in sorted((ROOT / folder).rglob("*.py")) if p.resolve() != own]


def test_no_source_cites_a_design_file_the_repository_does_not_hold():
    assert not (ROOT / "DESIGN.md").exists(), "DESIGN.md is in the repository: cite it or fold it into the docs"
    cites = [f"{p.relative_to(ROOT)}:{n}" for p in _citing_files()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _DESIGN.search(line)]
    assert not cites, f"cite docs/contracts.md (with the section) instead of DESIGN: {cites}"


def test_every_contracts_section_cited_exists():
    headings = {line[3:].strip() for line in (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")}
    cited: dict[str, list[str]] = {}
    for p in _citing_files():
        text = " ".join(p.read_text(encoding="utf-8").split())  # a citation may be wrapped across lines
        for section in _CONTRACTS_CITE.findall(text):
            cited.setdefault(section, []).append(str(p.relative_to(ROOT)))
    assert len(cited) >= 3, cited  # the rule sees the citations (Charter, Evidence blocks, Snapshot, Guardrails)
    missing = {s: files for s, files in cited.items() if s not in headings}
    assert not missing, f"sections cited but not in docs/contracts.md ({sorted(headings)}): {missing}"
