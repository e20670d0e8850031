#!/usr/bin/env bash
# The package as people install it: build the sdist and the wheel, check that the wheel built from the
# sdist equals the one built from the tree, install it into a fresh venv with no Node.js on the PATH,
# and check there that JupyterLab has the panel, the server has the extension, and a started
# `jupyter lab` answers MCP (`jupyter mcp check`). Any failed check fails the script.
#
#   bash .ci/wheel.sh        (from .ci/run; needs `build` and the ui's node_modules, as after
#                             `pip install -e .`, so that the panel's production build needs no network)
# PYTHON picks the interpreter (default python). WHEEL_WORK keeps the work dir (default: a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python}"
WORK="${WHEEL_WORK:-$(mktemp -d)}"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
    [ -n "${WHEEL_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "wheel.sh: FAIL: $*" >&2; exit 1; }
mkdir -p "$WORK/dist/tree"

# 1. Build. An editable install leaves the panel's development build in jupyter_mcp_ext/labextension,
# and the build hook skips building when that is there: remove it, so the wheel gets a production build.
rm -rf jupyter_mcp_ext/labextension
"$PYTHON" -m build --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; fail "python -m build"; }
"$PYTHON" -m build --wheel --outdir "$WORK/dist/tree" . >>"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; fail "python -m build --wheel"; }
WHEEL=$(ls "$WORK"/dist/*.whl)
SDIST=$(ls "$WORK"/dist/*.tar.gz)

# 2. The sdist's wheel (python -m build makes the wheel from the sdist) equals the tree's, and carries
# what an install needs; print its size and contents.
"$PYTHON" - "$WHEEL" "$WORK"/dist/tree/*.whl "$SDIST" <<'EOF'
import collections, hashlib, os, sys, zipfile

def files(path):
    with zipfile.ZipFile(path) as z:
        return {i.filename: (hashlib.sha256(z.read(i)).hexdigest(), i.file_size) for i in z.infolist()
                if not i.filename.endswith(".dist-info/RECORD")}  # RECORD lists the same hashes

from_sdist, from_tree = files(sys.argv[1]), files(sys.argv[2])
differ = sorted(n for n in from_sdist.keys() | from_tree.keys() if from_sdist.get(n) != from_tree.get(n))
if differ:
    sys.exit(f"the sdist's wheel differs from the tree's in {len(differ)} files: {differ[:10]}")
data = "jupyter_mcp_ext-"
needed = {
    "the panel": "/data/share/jupyter/labextensions/jupyter-mcp-ext/package.json",
    "the panel's install.json": "/data/share/jupyter/labextensions/jupyter-mcp-ext/install.json",
    "the panel's code": "/data/share/jupyter/labextensions/jupyter-mcp-ext/static/style.js",
    "the server extension's config": "/data/etc/jupyter/jupyter_server_config.d/jupyter_mcp_ext.json",
    "the extension": "jupyter_mcp_ext/app.py",
    "the notebook view (MCP Apps)": "jupyter_mcp_ext/apps/view.html",
    "the notebook view's script": "jupyter_mcp_ext/apps/view.js",
    "the consent page": "jupyter_mcp_ext/auth/templates/mcp_consent.html",
    "the sign-in refusal page": "jupyter_mcp_ext/auth/templates/mcp_oauth_error.html",
    "the sign-in pages' frame": "jupyter_mcp_ext/auth/templates/mcp_oauth_page.html",
    "the CLI's entry point": ".dist-info/entry_points.txt",
}
missing = [what for what, end in needed.items() if not any(n.endswith(end) for n in from_sdist)]
if missing:
    sys.exit(f"the wheel lacks {', '.join(missing)}")
groups = collections.Counter()
sizes = collections.Counter()
for name, (_, size) in from_sdist.items():
    parts = name.split("/")
    key = "/".join(parts[:6]) if ".data/" in name else "/".join(parts[:2]) if len(parts) > 2 else parts[0]
    groups[key] += 1
    sizes[key] += size
print(f"wheel {os.path.basename(sys.argv[1])}: {os.path.getsize(sys.argv[1]) / 1e6:.2f} MB, "
      f"{len(from_sdist)} files, {sum(sizes.values()) / 1e6:.2f} MB unpacked; "
      f"sdist {os.path.getsize(sys.argv[3]) / 1e6:.2f} MB; the sdist's wheel equals the tree's")
for key in sorted(groups):
    print(f"  {groups[key]:4d} files {sizes[key] / 1e3:9.1f} kB  {key}")
EOF

# 3. A fresh venv, the wheel in it (pip's cache makes the dependencies quick), and a PATH without Node.js:
# the venv's bin and a folder of links to the few system tools a server may call.
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip
"$WORK/venv/bin/python" -m pip install -q "$WHEEL"
mkdir -p "$WORK/tools"
for tool in sh bash env uname cat ls; do
    found=$(command -v "$tool") && ln -sf "$found" "$WORK/tools/$tool"
done
NODELESS="$WORK/venv/bin:$WORK/tools"
if PATH="$NODELESS" command -v node >/dev/null 2>&1; then fail "node is still on the PATH used for the wheel"; fi
export JUPYTER_CONFIG_DIR="$WORK/config" JUPYTER_DATA_DIR="$WORK/data" JUPYTER_RUNTIME_DIR="$WORK/runtime"
export IPYTHONDIR="$WORK/ipython"
in_venv() { env -u PYTHONPATH -u VIRTUAL_ENV PATH="$NODELESS" HOME="$WORK/home" "$@"; }
mkdir -p "$WORK/root" "$WORK/home"

labs=$(in_venv jupyter labextension list 2>&1)
echo "$labs" | grep -E "jupyter-mcp-ext .*enabled.*OK" || { echo "$labs"; fail "the panel is not enabled and OK in jupyter labextension list"; }
servers=$(in_venv jupyter server extension list 2>&1)
echo "$servers" | grep -E "jupyter_mcp_ext .*enabled" >/dev/null || { echo "$servers"; fail "jupyter_mcp_ext is not enabled in jupyter server extension list"; }
echo "$servers" | grep -E "jupyter_mcp_ext .*OK" || { echo "$servers"; fail "jupyter_mcp_ext does not validate OK"; }

# 4. A started JupyterLab answers MCP, and has no warning about a missing panel.
PORT=$(in_venv python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
TOKEN="wheel-check-$RANDOM$RANDOM"
in_venv jupyter lab --no-browser --allow-root --ip=127.0.0.1 --port="$PORT" --ServerApp.port_retries=0 \
    --ServerApp.root_dir="$WORK/root" --IdentityProvider.token="$TOKEN" >"$WORK/lab.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 240); do
    grep -q "MCP endpoint:" "$WORK/lab.log" && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/lab.log"; fail "jupyter lab exited"; }
    sleep 0.5
done
grep "MCP endpoint: http://127.0.0.1:$PORT/mcp " "$WORK/lab.log" || { cat "$WORK/lab.log"; fail "no MCP endpoint line in the log"; }
if grep -E "no MCP panel|Another extension also routes" "$WORK/lab.log"; then fail "the server warned at start"; fi
in_venv jupyter mcp check --url "http://127.0.0.1:$PORT/mcp" --token "$TOKEN" | tee "$WORK/check.txt"
grep -q "^OK " "$WORK/check.txt" && ! grep -q "^WARN " "$WORK/check.txt" || fail "jupyter mcp check"
in_venv python - "$PORT" "$TOKEN" <<'EOF' || fail "JupyterLab's page does not load the panel"
import sys, urllib.request
page = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/lab?token={sys.argv[2]}", timeout=30).read()
assert b"jupyter-mcp-ext" in page, "jupyter-mcp-ext not among the page's federated extensions"
EOF
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
echo "wheel.sh: the wheel installs without Node.js and serves the panel and MCP ($SECONDS s)"
