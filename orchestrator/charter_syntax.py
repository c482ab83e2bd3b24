"""Charter files read strictly, before the schema sees them:

- a key given twice in one mapping (YAML or JSON) is an error naming the key and both lines: YAML and JSON
  parsers keep the last value silently, so a second ``allowed_domains`` would replace the first unseen;
- nesting deeper than ``MAX_DEPTH`` is an error naming the line (a charter needs about five levels; 30,000
  would exhaust Python's recursion in the parsers or the validator).

Both checks are iterative (no recursion), so they hold for any input size.
"""

from __future__ import annotations

import json
from typing import Any

from memory_store.errors import BrtException

__all__ = ["MAX_DEPTH", "CharterSyntaxError", "check_json", "check_yaml", "yaml_loader"]

#: Deepest nesting of mappings and lists accepted in a charter file.
MAX_DEPTH = 32


class CharterSyntaxError(BrtException, ValueError):
    """A problem found before validation; ``field`` is the key path where known ("" otherwise)."""

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field


def _too_deep(line: int) -> CharterSyntaxError:
    return CharterSyntaxError(f"nested more than {MAX_DEPTH} levels deep at line {line}; a charter is not that deep")


def check_json(raw: str) -> None:
    """Raise CharterSyntaxError for a duplicate key or nesting past MAX_DEPTH (malformed JSON is left to the
    JSON parser, which reports it)."""
    # One pass over the text: a stack of containers; for objects, the keys seen (with their lines) and
    # whether the next string is a key.
    stack: list[dict[str, Any]] = []
    line, i, n = 1, 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\n":
            line += 1
        elif ch == '"':
            j = i + 1
            while j < n and raw[j] != '"':
                j += 2 if raw[j] == "\\" else 1
            literal = raw[i : j + 1]
            top = stack[-1] if stack else None
            if top is not None and top["kind"] == "object" and top["expect_key"]:
                try:
                    key = json.loads(literal)
                except ValueError:
                    return  # malformed: the parser will say where
                if key in top["keys"]:
                    path = ".".join([*(c["key"] for c in stack if c.get("key") is not None), key])
                    raise CharterSyntaxError(
                        f"duplicate key {key!r} at line {line} (first at line {top['keys'][key]}); "
                        "the second would silently replace the first",
                        path,
                    )
                top["keys"][key] = line
                top["expect_key"] = False
                top["last"] = key
            line += literal.count("\n")
            i = j
        elif ch in "{[":
            if len(stack) >= MAX_DEPTH:
                raise _too_deep(line)
            parent = stack[-1] if stack else None
            key = parent.get("last") if parent is not None and parent["kind"] == "object" else None
            stack.append({"kind": "object" if ch == "{" else "array", "keys": {}, "expect_key": ch == "{",
                          "key": key, "last": None})
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == "," and stack and stack[-1]["kind"] == "object":
            stack[-1]["expect_key"] = True
        i += 1


def check_yaml(raw: str) -> None:
    """Raise CharterSyntaxError for nesting past MAX_DEPTH (YAML's event parser is iterative; the composer
    that builds the tree is recursive, so this runs first). Duplicate keys are refused by :func:`yaml_loader`."""
    import yaml

    depth = 0
    try:
        for event in yaml.parse(raw, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(event.start_mark.line + 1)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # malformed: yaml.load reports it with its position


def yaml_loader() -> type:
    """A SafeLoader whose mappings refuse a key given twice (merge keys ``<<`` may still be overridden)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it
            line = key_node.start_mark.line + 1
            if key in seen:
                raise CharterSyntaxError(
                    f"duplicate key {key!r} at line {line} (first at line {seen[key]}); "
                    "the second would silently replace the first",
                    str(key),
                )
            seen[key] = line
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    return StrictLoader
