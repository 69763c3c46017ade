#!/usr/bin/env bash
# README's picture of report.html, generated, not drawn: the embedded CPU example run as
# README's first command runs it (in a scratch copy), its report.html screenshot in headless
# Chromium (Debian's package) -> docs/report-html.png.   usage: bash docs/report_screenshot.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp -r "$repo/examples/cmake-cpu" "$work/example"
(cd "$work/example" && kernelopt run . --state-root "$work/state") | tail -3
page=$(ls -d "$work"/state/runs/*/report.html | tail -1)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --hide-scrollbars --window-size=1220,1000 \
  --screenshot="$repo/docs/report-html.png" "file://$page" 2>/dev/null
echo "docs/report-html.png from $page"
