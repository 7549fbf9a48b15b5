#!/usr/bin/env bash
# The shape of a deployment beyond one server, on one machine: Redis (the shared queue), one worker, two app
# replicas and nginx in front of them with sticky sessions (deploy/nginx-replicas.conf). Ctrl-C stops them all.
#
#   sudo apt-get install -y redis-server nginx && pip install -e ".[distributed]"
#   bash deploy/one-machine.sh                  # then open http://127.0.0.1:8080/
#
# Settings (environment): REDIS_PORT (6379), APP_PORTS ("8501 8502"), PROXY_PORT (8080), SLOTS (the worker's
# trainings at once: 2), ATTENTION_PLAYGROUND_RUNS (./runs), ATTENTION_PLAYGROUND_SHARED (1: a workspace per
# visitor). A Redis already answering on REDIS_PORT (Debian's service, which keeps its data across a restart) is
# used; otherwise one is started that keeps nothing on disk. tests/project/test_deploy.py runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS_PORT=${REDIS_PORT:-6379}
APP_PORTS=${APP_PORTS:-8501 8502}
PROXY_PORT=${PROXY_PORT:-8080}
SLOTS=${SLOTS:-2}
export ATTENTION_PLAYGROUND_RUNS=${ATTENTION_PLAYGROUND_RUNS:-$PWD/runs}
export ATTENTION_PLAYGROUND_SHARED=${ATTENTION_PLAYGROUND_SHARED:-1}
export ATTENTION_PLAYGROUND_BROKER="redis://127.0.0.1:$REDIS_PORT/0"
for tool in redis-server redis-cli nginx streamlit attention-playground; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
    echo "$tool is missing: sudo apt-get install -y redis-server nginx && pip install -e \".[distributed]\"" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

state=$(mktemp -d)  # Redis's and nginx's files
pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$state"; }
trap stop EXIT
trap 'exit 130' INT TERM

if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then  # e.g. Debian's redis-server service, started on install
  echo "using the Redis that answers on port $REDIS_PORT"
else
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$state" >"$state/redis.log" 2>&1 &
  pids+=($!)
  until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do sleep 0.2; done
fi

attention-playground worker --broker "$ATTENTION_PLAYGROUND_BROKER" --slots "$SLOTS" &
pids+=($!)
replicas=()
for port in $APP_PORTS; do
  streamlit run app.py --server.address 127.0.0.1 --server.port "$port" --server.headless true \
    --browser.gatherUsageStats false &
  pids+=($!)
  replicas+=("127.0.0.1:$port")
done

bash deploy/nginx-conf.sh "$PROXY_PORT" "$state" "${replicas[@]}" >"$state/nginx.conf"
"$NGINX" -c "$state/nginx.conf" -p "$state" -g "daemon off;" &
pids+=($!)

echo "open http://127.0.0.1:$PROXY_PORT/ (replicas on $APP_PORTS, a worker with $SLOTS slots, Redis on $REDIS_PORT)"
wait -n  # any part ending ends them all
