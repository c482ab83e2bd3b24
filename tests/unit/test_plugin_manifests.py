"""The Claude Code plugin (``integrations/claude-code``) and the marketplace that lists it
(``.claude-plugin/marketplace.json`` at the repository root), validated against the published format: the
Claude Code plugin and marketplace references (code.claude.com/docs, "Plugins reference" and "Plugin
marketplaces", as of Claude Code 2.1), written here as JSON Schemas, plus the rules the schemas cannot say:
relative paths that start with ``./`` and exist, names that agree, skill and command front matter, and slash
commands that only run ``brt`` commands that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"

KEBAB = r"^[a-z0-9]+(-[a-z0-9]+)*$"
SEMVER = r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
RELATIVE = r"^\./"
#: Marketplace names Claude Code reserves for Anthropic's own marketplaces.
RESERVED = ["claude-code-marketplace", "claude-code-plugins", "claude-plugins-official", "anthropic-marketplace",
            "anthropic-plugins", "agent-skills", "anthropic-agent-skills", "life-sciences", "knowledge-work-plugins"]

AUTHOR = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "required": ["name"],
         "properties": {"name": {"type": "string", "minLength": 1}, "email": {"type": "string"},
                        "url": {"type": "string"}}},
    ]
}
PATHS = {"oneOf": [{"type": "string", "pattern": RELATIVE},
                   {"type": "array", "items": {"type": "string", "pattern": RELATIVE}}]}
PATH_OR_INLINE = {"oneOf": [{"type": "string", "pattern": RELATIVE}, {"type": "object"},
                            {"type": "array", "items": {"type": "string", "pattern": RELATIVE}}]}
METADATA = {
    "name": {"type": "string", "pattern": KEBAB},
    "version": {"type": "string", "pattern": SEMVER},
    "description": {"type": "string", "minLength": 1},
    "author": AUTHOR,
    "homepage": {"type": "string"},
    "repository": {"type": "string"},
    "license": {"type": "string"},
    "keywords": {"type": "array", "items": {"type": "string"}},
    "commands": PATHS,
    "agents": PATHS,
    "skills": PATHS,
    "hooks": PATH_OR_INLINE,
    "mcpServers": PATH_OR_INLINE,
    "lspServers": PATH_OR_INLINE,
}
PLUGIN_SCHEMA = {"type": "object", "required": ["name"], "properties": METADATA}
PLUGIN_SOURCE = {
    "oneOf": [
        {"type": "string", "pattern": RELATIVE},
        {"type": "object", "required": ["source"],
         "properties": {"source": {"enum": ["github", "url", "git-subdir", "npm", "pip"]}}},
    ]
}
MARKETPLACE_SCHEMA = {
    "type": "object",
    "required": ["name", "owner", "plugins"],
    "properties": {
        "name": {"type": "string", "pattern": KEBAB, "not": {"enum": RESERVED}},
        "owner": {"type": "object", "required": ["name"],
                  "properties": {"name": {"type": "string", "minLength": 1}, "email": {"type": "string"}}},
        "metadata": {"type": "object", "properties": {"description": {"type": "string"},
                                                      "version": {"type": "string", "pattern": SEMVER},
                                                      "pluginRoot": {"type": "string"}}},
        "plugins": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "object", "required": ["name", "source"],
                      "properties": {**METADATA, "source": PLUGIN_SOURCE, "category": {"type": "string"},
                                     "tags": {"type": "array", "items": {"type": "string"}},
                                     "strict": {"type": "boolean"}}},
        },
    },
}
MCP_SCHEMA = {
    "type": "object",
    "required": ["mcpServers"],
    "properties": {
        "mcpServers": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "oneOf": [
                    {"type": "object", "required": ["command"], "not": {"required": ["url"]},
                     "properties": {"type": {"const": "stdio"}, "command": {"type": "string", "minLength": 1},
                                    "args": {"type": "array", "items": {"type": "string"}},
                                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "cwd": {"type": "string"}}},
                    {"type": "object", "required": ["type", "url"],
                     "properties": {"type": {"enum": ["http", "sse"]}, "url": {"type": "string"},
                                    "headers": {"type": "object"}}},
                ]
            },
        }
    },
}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def front_matter(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert m, f"{path}: no YAML front matter"
    return yaml.safe_load(m.group(1)), m.group(2)


def plugin_roots() -> list[tuple[dict[str, Any], Path]]:
    market = load(MARKETPLACE)
    return [(entry, (ROOT / entry["source"]).resolve()) for entry in market["plugins"]]


def test_marketplace_manifest() -> None:
    market = load(MARKETPLACE)
    jsonschema.validate(market, MARKETPLACE_SCHEMA)
    assert len({p["name"] for p in market["plugins"]}) == len(market["plugins"])
    for entry, root in plugin_roots():
        assert root.is_dir() and ROOT in root.parents, entry["source"]  # inside the repository
        manifest = load(root / ".claude-plugin" / "plugin.json")
        assert manifest["name"] == entry["name"]
        assert manifest.get("version", entry.get("version")) == entry.get("version", manifest.get("version"))


@pytest.mark.parametrize(("entry", "root"), plugin_roots(), ids=lambda x: getattr(x, "name", None) or "entry")
def test_plugin_manifest_and_its_paths(entry: dict[str, Any], root: Path) -> None:
    manifest = load(root / ".claude-plugin" / "plugin.json")
    jsonschema.validate(manifest, PLUGIN_SCHEMA)
    for key in ("commands", "agents", "skills", "hooks", "mcpServers"):
        value = manifest.get(key)
        for rel in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            target = (root / rel).resolve()
            assert target.exists() and root in [target, *target.parents], f"{key}: {rel}"
    # components in the standard layout, none inside .claude-plugin/
    assert sorted(p.name for p in (root / ".claude-plugin").iterdir()) == ["plugin.json"]
    assert (root / "commands").is_dir() and (root / "skills").is_dir() and (root / ".mcp.json").is_file()


def test_mcp_servers_register_brt_mcp_and_devtools() -> None:
    for _entry, root in plugin_roots():
        servers = load(root / ".mcp.json")
        jsonschema.validate(servers, MCP_SCHEMA)
        brt = servers["mcpServers"]["brt"]
        assert [brt["command"], *brt.get("args", [])] == ["brt", "mcp"]
        # issue 41.4: the agent's own browser is never a bare chrome-devtools-mcp: brt runs it behind its egress
        # proxy (tests/integration/test_browser_mcp.py), and nothing else in the plugin starts a browser
        devtools = servers["mcpServers"]["chrome-devtools"]
        assert [devtools["command"], *devtools.get("args", [])] == ["brt", "browser-mcp"]
        for name, server in servers["mcpServers"].items():
            line = " ".join([server["command"], *server.get("args", [])])
            assert "chrome-devtools-mcp" not in line and "npx" not in line, (name, line)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'brt = "orchestrator.cli:main"' in pyproject  # the command the server entry runs


def test_skills_front_matter() -> None:
    for _entry, root in plugin_roots():
        skills = sorted((root / "skills").glob("*/SKILL.md"))
        assert skills
        for path in skills:
            meta, body = front_matter(path)
            assert meta["name"] == path.parent.name and re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"])
            assert 1 <= len(meta["description"]) <= 1024
            assert "check_report" in body and "clean" in body  # the loop: ... write, check, clean


def test_commands_run_only_brt_commands_that_exist() -> None:
    from orchestrator.cli import cli

    names = {"harvest", "synthesize", "clean", "check"}
    for _entry, root in plugin_roots():
        commands = {p.stem: p for p in (root / "commands").glob("*.md")}
        assert names <= set(commands)
        for path in commands.values():
            meta, body = front_matter(path)
            assert meta["description"] and "$ARGUMENTS" in body
            for tool in re.findall(r"Bash\(brt ([a-z ]+?):\*\)", str(meta.get("allowed-tools", ""))):
                group: Any = cli
                for word in tool.split():
                    group = group.commands.get(word) if hasattr(group, "commands") else None
                    assert group is not None, f"{path.name}: `brt {tool}` is not a brt command"
            for used in re.findall(r"`brt ([a-z]+)", body):
                assert used in cli.commands, f"{path.name}: `brt {used}` is not a brt command"
