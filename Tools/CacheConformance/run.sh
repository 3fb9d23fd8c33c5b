#!/bin/sh
# Runs the HTTP cache tests (github.com/http-tests/cache-tests) against Courier's ResponseCache as a private cache.
# Usage: Tools/CacheConformance/run.sh CACHE_TESTS_DIR [results.json]
# Needs Node 20 (no npm packages: the one test that imports undici, for interim responses, errors) and a Swift
# toolchain. The suite's code is not part of this repository: pass a checkout of it.
set -eu
TESTS=$(cd "$1" && pwd)
RESULTS=${2:-$(pwd)/courier-results.json}
HERE=$(cd "$(dirname "$0")" && pwd)
CONFIGURATION=${CONFIGURATION:-debug}
swift build -c "$CONFIGURATION" --package-path "$HERE" --product CacheConformanceDriver >&2
DRIVER="$HERE/.build/$CONFIGURATION/CacheConformanceDriver"
ORIGIN_PORT=${ORIGIN_PORT:-8000}
PROXY_PORT=${PROXY_PORT:-8001}

cd "$TESTS"
npm_package_config_protocol=http npm_package_config_port=$ORIGIN_PORT \
  npm_package_config_pidfile=/tmp/courier-cache-tests-origin.pid node test-engine/server/server.mjs >&2 &
ORIGIN_PID=$!
ORIGIN=http://localhost:$ORIGIN_PORT DRIVER=$DRIVER PORT=$PROXY_PORT node "$HERE/proxy.mjs" &
PROXY_PID=$!
trap 'kill $ORIGIN_PID $PROXY_PID 2>/dev/null || true' EXIT
sleep 2
npm_config_base=http://127.0.0.1:$PROXY_PORT npm_config_id= npm_package_config_id= \
  node --no-warnings test-engine/cli.mjs > "$RESULTS"
node "$HERE/summarize.mjs" "$TESTS" "$RESULTS" interim-
