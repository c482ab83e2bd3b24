"""The demo's sample output in the README and the quick start, made from a real `brt demo` run so it cannot go stale.

    python scripts/demo_sample.py            # run brt demo (a temporary folder and BRT_HOME), write both samples
    python scripts/demo_sample.py --check    # run it and exit 1 when a sample differs from what the demo prints

Each page holds the sample between two markers (:data:`BEGIN`, :data:`END`): the demo's harvest line, the report's
header, the sections :data:`SECTIONS`, the acceptance criteria and the snapshot line, as the demo prints them.
``tests/e2e/test_demo.py`` compares the pages with its own demo run (:func:`normalise` leaves out what changes from
run to run: the time, the seconds, the snapshot's time stamp), so a change to what the demo prints fails there until
this script is run again.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", ROOT / "docs" / "quickstart.md")
BEGIN = "<!-- demo-output: made by scripts/demo_sample.py from a real brt demo; tests/e2e/test_demo.py checks it -->"
END = "<!-- /demo-output -->"
#: The report's sections the sample shows (the others are left out: "Abridged").
SECTIONS = ("LCP threshold", "CLS mitigation")
_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), re.DOTALL)


def abridge(output: str) -> str:
    """The sample made of a demo's stdout: the harvest line, the report's header, :data:`SECTIONS`, the acceptance
    criteria and the snapshot line (its folder shown as the default ``~/.brt/snapshots/``)."""
    lines = output.splitlines()
    keep = [next(ln for ln in lines if ln.startswith("brt demo: harvest:")), ""]
    keep += [next(ln for ln in lines if ln.startswith("Charter `")), ""]
    for title in (*SECTIONS, "Acceptance criteria"):
        start = lines.index(f"## {title}")
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("## ", "brt demo:"))), len(lines))
        keep += [*lines[start:end]]
        if keep[-1] != "":
            keep.append("")
    snapshot = next(ln for ln in lines if ln.startswith("brt demo: snapshot written to "))
    keep.append(re.sub(r"(written to )\S*?snapshots/", r"\1~/.brt/snapshots/", snapshot))
    return "```text\n" + "\n".join(keep) + "\n```"


def normalise(sample: str) -> str:
    """``sample`` without what changes from one run to the next: the time, seconds, the snapshot's time stamp."""
    sample = re.sub(r"generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "generated <time>", sample)
    sample = re.sub(r"; \d+(?:\.\d+)? s$", "; <seconds> s", sample, flags=re.MULTILINE)
    return re.sub(r"demo_cwv-\d{8}T\d{6}Z", "demo_cwv-<time>", sample)


def sample_of(page: Path) -> str:
    """The sample a page holds (ValueError when it has none)."""
    found = _BLOCK.search(page.read_text(encoding="utf-8"))
    if found is None:
        raise ValueError(f"{page} holds no demo sample between {BEGIN!r} and {END!r}")
    return found.group(1)


def run_demo() -> str:
    """The stdout of `brt demo` run from this checkout in a temporary folder with a temporary BRT_HOME."""
    work = tempfile.mkdtemp(prefix="brt-demo-sample-")
    home = os.path.join(work, "home")
    env = dict(os.environ, BRT_HOME=home, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "demo"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"brt demo failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare the pages with a demo run instead of writing")
    args = ap.parse_args(argv)
    sample = abridge(run_demo())
    stale = []
    for page in PAGES:
        if normalise(sample_of(page)) == normalise(sample):
            continue
        stale.append(page)
        if not args.check:
            text = page.read_text(encoding="utf-8")
            page.write_text(_BLOCK.sub(lambda _m: f"{BEGIN}\n{sample}\n{END}", text, count=1), encoding="utf-8")
            print(f"wrote the demo sample into {page.relative_to(ROOT)}", file=sys.stderr)
    if args.check and stale:
        print("out of date: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
              + " (run python scripts/demo_sample.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
