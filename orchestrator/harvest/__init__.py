"""The harvest: a charter's allowed pages read with a real browser into its store.

    harvest(charter, replay=None, browser_url=None, via="playwright", refresh=False) -> HarvestReport

Modules (data flows top to bottom):

- ``run``: ``harvest()`` / ``harvest_async()``: checks, the store's harvest lock, the reader, the concept index;
- ``crawl``: the breadth-first frontier, limits, politeness and retries, robots.txt, the extraction of what a
  reader read and its hand-over to ``writer`` (the store, in batches) and ``journal`` (events as they settle);
- ``reader``: the ``PageReader`` interface the crawl drives, and the ``CrawlHost`` it offers readers;
- ``readers/playwright`` (Playwright + Chromium: ``browser``, ``routes``, ``replay``, ``bounds``, ``reader``) and
  ``readers/devtools_mcp`` (chrome-devtools-mcp: ``client``, ``reader``);
- ``net/``: the document ``fetcher``, the SSRF ``guard``, the browser's egress ``proxy``, ``urls`` (canonical form,
  link filter), ``politeness`` (per-host slots, backoff, retries, robots.txt);
- ``har`` (recording, merge, incomplete marks, replay maps and index), ``revalidate`` (``--refresh``
  fingerprints), ``pdf`` (``pdf_child``: extraction in a killable child), ``extract`` (trafilatura),
  ``workers`` (page content read in killable worker processes, bounded in time and memory: ``work_child``),
  ``detached`` (their fallback where no process can be started), ``downloads``, ``crash`` (relaunches), ``launch``
  (finding the browser, its flags), ``pages`` (one page into the store: the harvest's and MCP ``add_page``'s
  path), ``models`` (events, report), ``summary``.

A new reader implements ``reader.PageReader`` and is chosen in ``run.harvest_async``.
"""

from ..api import make_module_callable
from .models import HarvestEvent, HarvestReport, Outcome, StageTimings
from .reader import CrawlHost, PageReader
from .run import harvest, harvest_async

__all__ = [
    "CrawlHost",
    "HarvestEvent",
    "HarvestReport",
    "Outcome",
    "PageReader",
    "StageTimings",
    "harvest",
    "harvest_async",
]

make_module_callable(__name__, "harvest")
