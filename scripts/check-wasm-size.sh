#!/usr/bin/env bash
# What a visitor downloads must stay small. The main WebAssembly module (the frame, the router,
# the home page and what every page shares) and its JavaScript glue load on every page: they
# must stay within R2R_WASM_BUDGET_BYTES (350,000) gzipped. Each page's own code
# (`cargo leptos --split`) is fetched the first time it is opened — its split and the shared
# chunks the manifest lists for it; every page (report, track, ShopLite, demo, and the owners'
# desk: the dashboard, the bug view and the rest of the desk) must open within
# R2R_WASM_PAGE_BUDGET_BYTES (350,000) in all. The main module must not carry the pages' read-only
# data (R2R_WASM_MAIN_DATA_BYTES, 80,000 raw): the splitter moves it all there when it cannot
# split the data segments (see frontend/build.rs). Run after the release build.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"
pkg="target/site/pkg"
budget="${R2R_WASM_BUDGET_BYTES:-350000}"
page_budget="${R2R_WASM_PAGE_BUDGET_BYTES:-350000}"
[[ "$budget" =~ ^[0-9]+$ ]] || die "R2R_WASM_BUDGET_BYTES must be a number of bytes, got '$budget'"
[[ "$page_budget" =~ ^[0-9]+$ ]] || die "R2R_WASM_PAGE_BUDGET_BYTES must be a number of bytes, got '$page_budget'"
[ -f "$pkg/r2r.wasm" ] || die "$pkg/r2r.wasm is missing: run 'cargo leptos build --release --split' first"
[ -f "$pkg/__wasm_split_manifest.json" ] || die "no split manifest in $pkg: the build ran without --split, so every visitor downloads every page"
sizes="$(python3 - "$pkg" <<'PY'
import gzip, json, os, sys
pkg = sys.argv[1]
def gz(name):
    with open(os.path.join(pkg, name), "rb") as f:
        return len(gzip.compress(f.read(), 9))
first = gz("r2r.wasm") + gz("r2r.js")
def data_bytes(name):
    # The size of a module's data section (id 11), read from its section headers.
    with open(os.path.join(pkg, name), "rb") as f:
        raw = f.read()
    at, total = 8, 0
    def leb(at):
        value, shift = 0, 0
        while True:
            byte = raw[at]; at += 1
            value |= (byte & 0x7F) << shift; shift += 7
            if byte < 0x80:
                return value, at
    while at < len(raw):
        kind = raw[at]
        size, at = leb(at + 1)
        if kind == 11:
            total += size
        at += size
    return total
main_data = data_bytes("r2r.wasm")
data_budget = int(os.environ.get("R2R_WASM_MAIN_DATA_BYTES", "80000"))
print(f"  main module's data: {main_data} bytes", file=sys.stderr)
if main_data > data_budget:
    print(f"the main module carries {main_data} bytes of data (over {data_budget}): the splitter put the pages' data in it; is frontend/build.rs's --no-merge-data-segments still applied?", file=sys.stderr)
    sys.exit(1)
worst = 0
manifest = json.load(open(os.path.join(pkg, "__wasm_split_manifest.json")))
for split, files in sorted(manifest.items()):
    page = split.strip("_").rsplit("_", 1)[0].removesuffix("_route_view")
    own = sum(gz(f + ".wasm") for f in files)
    print(f"  {page:<12} first open: {first + own:>8} bytes gzipped ({own} of its own, in {len(files)} files)", file=sys.stderr)
    worst = max(worst, first + own)
print(f"  every page: r2r.wasm + r2r.js, {first} bytes gzipped", file=sys.stderr)
print(first, worst)
PY
)"
read -r first worst <<<"$sizes"
if [ "$first" -gt "$budget" ]; then
  die "every page loads $first bytes of WebAssembly gzipped, over the budget of $budget"
fi
if [ "$worst" -gt "$page_budget" ]; then
  die "a page opens with $worst bytes of WebAssembly gzipped, over the budget of $page_budget"
fi
log "WASM size: every page loads $first bytes gzipped (budget $budget); the heaviest page opens with $worst (budget $page_budget)"
