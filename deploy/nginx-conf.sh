#!/usr/bin/env bash
# deploy/nginx-replicas.conf for given ports, its log, pid and temporary files in one folder (for nginx run by a
# user, not as Debian's service): the text on standard output.
#
#   bash deploy/nginx-conf.sh PROXY_PORT FOLDER HOST:PORT [HOST:PORT …] > FOLDER/nginx.conf
#   nginx -c FOLDER/nginx.conf -p FOLDER -g "daemon off;"
#
# Used by deploy/one-machine.sh and by the tests' nginx (tests/helpers/proxy.py).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PROXY_PORT FOLDER HOST:PORT [HOST:PORT …]" >&2; exit 2; }
port=$1 dir=$2
shift 2
conf=$(awk -v replicas="$*" -v port="$port" -v dir="$dir" '
  /server 127\.0\.0\.1:85/ {  # the two replicas of the recipe: these, with the same options
    if (!done) { match($0, /^ */); indent = substr($0, 1, RLENGTH); options = $0; sub(/^ *server [^ ]+ /, "", options)
                 n = split(replicas, r, " "); for (i = 1; i <= n; i++) print indent "server " r[i] " " options; done = 1 }
    next }
  { gsub("listen 127.0.0.1:8080;", "listen 127.0.0.1:" port ";")
    gsub("/var/log/nginx/attention-playground-error.log", dir "/nginx-error.log")
    gsub("/run/attention-playground-nginx.pid", dir "/nginx.pid") }
  /^http \{/ { print; for (i = split("client_body proxy fastcgi uwsgi scgi", t, " "); i > 0; i--)
                 print "    " t[i] "_temp_path " dir "/" t[i] ";"; next }
  { print }' "$(dirname "$0")/nginx-replicas.conf")
for made in "listen 127.0.0.1:$port;" "pid $dir/nginx.pid;" "error_log $dir/nginx-error.log;" "server $1 "; do
  grep -qF -- "$made" <<<"$conf" || { echo "deploy/nginx-replicas.conf changed: no '$made' made from it" >&2; exit 1; }
done
printf '%s\n' "$conf"
