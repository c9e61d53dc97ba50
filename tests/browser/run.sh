#!/usr/bin/env bash
# report.html in a real browser: make a small report (`icl repro zhang2025 --scale smoke`, 8 inline SVG
# figures) and load it in headless Chromium (check.py, standard-library Python over the DevTools pipe):
# every figure has a non-zero box and a screenshot of it is not blank, and the page requests nothing but
# itself (any other URL is recorded, blocked and fails the test). A self-test then checks a broken copy
# (an empty figure, a blank one, an http:// image, an image beside the report) and fails unless all four
# are caught. Needs `chromium` (Debian's package); the page screenshot is left in target/browser/.
#
#   tests/browser/run.sh        (ICL=path/to/icl to test another binary; default: target/debug/icl, built)
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
if [ -z "${ICL:-}" ]; then
  cargo build --locked -q -p icl-cli
  ICL=$PWD/target/debug/icl
fi
work=$(mktemp -d /tmp/icl-browser-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p target/browser
"$ICL" repro zhang2025 --scale smoke --quiet --out "$work/report" >/dev/null
python3 tests/browser/check.py "$work/report/report.html" --self-test --screenshot target/browser/report.png
echo "browser test: done in $(( $(date +%s) - start )) s"
