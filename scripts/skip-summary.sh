#!/usr/bin/env bash
# After ctest: why tests were skipped (a missing GPU, ptxas or libdevice),
# so that a skip is never silent. Usage: skip-summary.sh BUILD_DIR
set -euo pipefail
log="${1:-build}/Testing/Temporary/LastTest.log"
[[ -f "$log" ]] || exit 0
reasons=$( { grep -h -A1 ': Skipped$' "$log" | grep -v -e 'Skipped$' -e '^--$' || true
             grep -h -o 'note: .*skipping.*' "$log" | sed 's/^note: //' || true; } |
           sort | uniq -c | sort -rn)
if [[ -n "$reasons" ]]; then
  echo "Skipped tests, by reason:"
  echo "$reasons"
fi
