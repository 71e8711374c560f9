#!/usr/bin/env bash
# fla's own delta-rule tests against fwp.fla (test/fla/conftest.py says
# what stands in for what). fla's tests are not on PyPI: FLA_SOURCE is a
# checkout of fla at the tag that matches the pinned fla-core (v0.5.2):
#   git clone https://github.com/fla-org/flash-linear-attention .fla
#   git -C .fla checkout v0.5.2
# Usage: run.sh [PYTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
source_dir="${FLA_SOURCE:-$root/.fla}"
tests="$source_dir/tests/ops/test_delta.py"
if [[ ! -f "$tests" ]]; then
  echo "fla-tests: no $tests; check fla out there (see $0)" >&2
  exit 2
fi
python="${FWP_PYTHON:-$("$root/scripts/python-env.sh")}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root/test/fla/conftest.py" "$tests" "$work/"
echo "fla tests: $tests ($(git -C "$source_dir" describe --tags --always 2> /dev/null || echo 'no git'))"
echo "fla-core: $("$python" -c 'import fla; print(fla.__version__)' 2> /dev/null)"
cd "$work"
FWP_TEST_PYTHON_DIR="$root/test/python" PYTHONPATH="$root/python" \
  "$python" -m pytest -p no:cacheprovider -v "$@" test_delta.py
