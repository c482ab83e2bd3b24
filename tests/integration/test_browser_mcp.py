"""``brt browser-mcp`` (issue 41.4): the Claude Code plugin's browser for an agent is chrome-devtools-mcp with its
Chromium behind brt's egress proxy. Real chrome-devtools-mcp (Node), real Chromium, an MCP client over stdio, and
the egress tests' sentinel on 127.0.0.2 standing for an internal service: it must accept no TCP connection
whatever the agent asks (a new page, a navigation, a script's fetch, a name that resolves to it), while an allowed
page loads and its title comes back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.sites.egress import start_sentinel, wait_quiet
from tests.sites.pages import start_site

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def devtools_command() -> list[str]:
    from orchestrator.harvest.readers.devtools_mcp.client import DevtoolsMcpNotFound, find_devtools_mcp

    pytest.importorskip("mcp")
    try:
        command = find_devtools_mcp()
    except DevtoolsMcpNotFound as exc:
        pytest.skip(f"chrome-devtools-mcp is not installed: {exc}")
    if "--no-install" in command:
        pytest.skip("chrome-devtools-mcp is not installed (bash scripts/dev.sh setup installs it)")
    return command


def _server(home: Path, *args: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("BRT_", "PATH", "HOME", "TMPDIR", "LANG"))}
    env.update({"BRT_HOME": str(home), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
                # a made-up name that resolves to the internal host: refused for its address, not its name
                "BRT_HOST_RESOLVER_RULES": "MAP intranet.test 127.0.0.2"})
    return StdioServerParameters(command=sys.executable, args=["-m", "orchestrator.cli", "-v", "browser-mcp", *args],
                                 env=env, cwd=str(ROOT))


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _session_run(params: Any, errlog: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    out: list[str] = []
    with open(errlog, "w") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert {"new_page", "navigate_page", "evaluate_script"} <= tools, tools
                for name, arguments in calls:
                    out.append(_text(await s.call_tool(name, arguments)))
    return out


def test_the_agents_browser_reaches_no_internal_address(devtools_command: list[str], tmp_path: Path) -> None:
    import anyio

    sentinel = start_sentinel()
    site = start_site(tmp_path / "site")
    try:
        inside = [sentinel.url("secret.html"), sentinel.url("", host="intranet.test"),
                  f"http://127.0.0.2:{sentinel.port}\\@example.com/"]
        fetch = ("async () => { try { const r = await fetch(%s); return 'GOT ' + await r.text(); } "
                 "catch (e) { return 'refused ' + e; } }")
        calls: list[tuple[str, dict[str, Any]]] = [("new_page", {"url": u}) for u in inside]
        calls += [("evaluate_script", {"function": fetch % json.dumps(sentinel.url("api"))}),
                  ("new_page", {"url": "file:///etc/hostname"})]
        # no charter: any public host, nothing internal (loopback 127.0.0.1 included)
        out = anyio.run(_session_run, _server(tmp_path / "home"), tmp_path / "any.log",
                        [*calls, ("new_page", {"url": site.url("a.html")})])
        assert wait_quiet(sentinel)["accepts"] == 0, sentinel.seen()
        assert not any("INTERNAL-SENTINEL" in o for o in out), out
        assert "Lighthouse" not in out[-1]  # 127.0.0.1 is internal too without a charter that names it
        # a charter that names 127.0.0.1 exactly: its pages load (titles come back), the internal host stays out
        charter = tmp_path / "c.yaml"
        charter.write_text(yaml.safe_dump({"id": "browse", "title": "t", "allowed_domains": ["127.0.0.1"],
                                           "seeds": [site.url("index.html")]}), encoding="utf-8")
        out = anyio.run(_session_run, _server(tmp_path / "home", "--charter", str(charter)),
                        tmp_path / "charter.log", [("new_page", {"url": site.url("a.html")}), *calls])
        assert "Lighthouse" in out[0], out[0]
        assert wait_quiet(sentinel)["accepts"] == 0, sentinel.seen()
        assert not any("INTERNAL-SENTINEL" in o for o in out), out
        hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").is_file() else ""
        assert not hostname or hostname not in out[-1], out[-1]  # no file: navigation
        log = (tmp_path / "charter.log").read_text(encoding="utf-8", errors="replace")
        assert "refused 127.0.0.2" in log, log[-2000:]  # brt's proxy said no, before any connection
    finally:
        sentinel.stop()
        site.stop()
