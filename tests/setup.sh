#!/usr/bin/env bash
# Everything the tests need on a fresh Debian machine, each installed only when it is missing:
#   chromium      the browser tests and static figure export drive Debian's /usr/bin/chromium
#   haproxy       the cluster test puts HAProxy in front of two app processes
#   redis-server  class mode's store tests run a real /usr/bin/redis-server
#   python3-venv  for the virtual environment below
# then the project with its test extra in .venv (torch pinned as the README's app command pins it).
#
#   tests/setup.sh            install what is missing (apt-get, through sudo unless root), then .venv
#   tests/setup.sh --missing  only print the Debian packages that are missing, one a line
set -euo pipefail
cd "${0%/*}/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v haproxy >/dev/null || missing+=(haproxy)
[ -x /usr/bin/redis-server ] || missing+=(redis-server)
python3 -c "import ensurepip, venv" 2>/dev/null || missing+=(python3-venv)

if [ "${1:-}" = "--missing" ]; then
  [ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
  exit 0
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/setup.sh: installing ${missing[*]} with apt-get" >&2
  sudo=""
  [ "$EUID" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q torch==2.13.0 -e ".[test]"
