"""What brt's egress proxy costs a page load: the same local pages (each with ``--subresources`` small images,
scripts and stylesheets, served from 127.0.0.1) loaded by the same Chromium, launched with brt's launch flags
alone (the baseline) and with the egress proxy's flags (every connection through ``net/proxy.py``, run in this
process's event loop, as in a harvest). Rounds alternate the two so that load on the machine hits both alike.
Nothing but 127.0.0.1 is contacted.

    .venv/bin/python bench/egress_overhead.py [--pages 30] [--subresources 20] [--rounds 3]

Writes bench/results/egress_overhead.json (and --json PATH). A loopback figure, not a network one: the baseline's
connections to the server are kept alive and limited to 6 per host, the proxy opens one upstream connection per
plain-HTTP request (asyncio streams, TCP_NODELAY) and Chromium allows more connections to a proxy; here the
proxied loads came out faster, which says the proxy adds no cost that shows at this scale, not that it speeds up
real sites (over HTTPS each browser connection is one CONNECT tunnel).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine_info, write_result  # noqa: E402


def _site(subresources: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            if path.startswith("/p/"):
                parts = []
                for i in range(subresources):
                    kind = i % 3
                    if kind == 0:
                        parts.append(f'<img src="/r/{path[3:]}-{i}.svg">')
                    elif kind == 1:
                        parts.append(f'<script src="/r/{path[3:]}-{i}.js"></script>')
                    else:
                        parts.append(f'<link rel="stylesheet" href="/r/{path[3:]}-{i}.css">')
                body = ("<!DOCTYPE html><html><head><title>p</title></head><body><p>"
                        + "The harbour page. " * 50 + "</p>" + "".join(parts) + "</body></html>").encode()
                ctype = "text/html"
            elif path.endswith(".svg"):
                body, ctype = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>', "image/svg+xml"
            elif path.endswith(".js"):
                body, ctype = b"window.__n=(window.__n||0)+1;", "text/javascript"
            else:
                body, ctype = b"p{margin:0}", "text/css"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:  # the browser closed the connection
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def _load_all(port: int, pages: int, tag: str, proxied: bool) -> list[float]:
    """Seconds per page load (to the load event), in one fresh browser."""
    from playwright.async_api import async_playwright

    from orchestrator.harvest.launch import LAUNCH_ARGS, egress_args, find_browser
    from orchestrator.harvest.net.guard import NetGuard
    from orchestrator.harvest.net.proxy import EgressProxy, GuardPolicy

    proxy = None
    args = list(LAUNCH_ARGS)
    if proxied:
        guard = NetGuard(["127.0.0.1"])
        proxy = await EgressProxy(GuardPolicy(lambda u: u.startswith("http://127.0.0.1:"), guard)).start()
        args += egress_args(proxy.url)
    times = []
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=find_browser(), args=args)
            context = await browser.new_context()
            page = await context.new_page()
            for n in range(pages):
                t0 = time.perf_counter()
                await page.goto(f"http://127.0.0.1:{port}/p/{tag}{n}.html", wait_until="load")
                times.append(time.perf_counter() - t0)
            await browser.close()
    finally:
        if proxy is not None:
            assert not proxy.refused, proxy.refused
            await proxy.aclose()
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=30)
    ap.add_argument("--subresources", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = ap.parse_args(argv)

    server = _site(args.subresources)
    port = server.server_address[1]
    runs: dict[str, list[float]] = {"direct": [], "proxy": []}
    for r in range(args.rounds):
        order = ("direct", "proxy") if r % 2 == 0 else ("proxy", "direct")
        for mode in order:
            times = asyncio.run(_load_all(port, args.pages, f"{mode}{r}-", proxied=mode == "proxy"))
            runs[mode] += times[1:]  # the first load of a browser warms it up
    server.shutdown()

    def summary(times: list[float]) -> dict[str, float]:
        return {
            "loads": len(times),
            "median_ms": round(statistics.median(times) * 1000, 1),
            "mean_ms": round(statistics.fmean(times) * 1000, 1),
            "p90_ms": round(sorted(times)[int(0.9 * (len(times) - 1))] * 1000, 1),
        }

    result = {
        "bench": "egress_overhead",
        "what": f"page loads to the load event, 1 document + {args.subresources} subresources each, 127.0.0.1",
        "pages_per_round": args.pages,
        "rounds": args.rounds,
        "direct": summary(runs["direct"]),
        "proxy": summary(runs["proxy"]),
        "machine": machine_info(),
    }
    result["median_overhead_ms"] = round(result["proxy"]["median_ms"] - result["direct"]["median_ms"], 1)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    write_result("egress_overhead", result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
