#!/usr/bin/env bash
# Dependency floors: install every dependency at the lower bound pyproject.toml declares (plus the
# transitive packages we talk to directly) in a venv of its own, then run the tests there. Proves the
# floors are real, so installing into an existing JupyterLab does not force upgrades.
#
#   bash .ci/floors.sh                  # a representative subset of the tests
#   FLOORS_FULL=1 bash .ci/floors.sh    # the whole suite
#   FLOORS_VENV=/path bash .ci/floors.sh   # reuse a venv (default .ci/.floors-venv, git-ignored)
#
# Optional in CI: it installs a second environment. PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${FLOORS_VENV:-.ci/.floors-venv}"
PYTHON="${PYTHON:-python3}"
# Not our direct dependencies, but what we talk to: held at the versions the floors were found with.
TRANSITIVE=("jupyter-server-ydoc==3.0.0")

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# shellcheck disable=SC1091
source "$VENV/bin/activate"
python -m pip install -q --upgrade pip

# "name>=X,<Y" in [project].dependencies becomes the constraint "name==X".
python - >"$VENV/floors.txt" <<'EOF'
import re
import tomllib

for dep in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    found = re.match(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([^,;\s]+)", dep)
    if found:
        print(f"{found.group(1)}=={found.group(2)}")
EOF
printf '%s\n' "${TRANSITIVE[@]}" >>"$VENV/floors.txt"
echo "[floors] constraints:" && sed 's/^/  /' "$VENV/floors.txt"

# The package at its floors, then the test tools by name only: their own lower bounds (ipykernel 7.4
# wants tornado 6.5.7) are about the kernel and the test client, not about what this package needs.
python -m pip install -q -e . -c "$VENV/floors.txt"
mapfile -t TEST_TOOLS < <(python -c '
import re, tomllib
for dep in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]:
    print(re.split(r"[<>=!~;\s]", dep, maxsplit=1)[0])
')
python -m pip install -q "${TEST_TOOLS[@]}" -c "$VENV/floors.txt"
python -m pip list 2>/dev/null | grep -iE "^(jupyter[-_]server|jupyter-collaboration|jupyter-server-ydoc|jupyter[-_]ydoc|pycrdt|jupyterlab|mcp|tornado|nbformat|traitlets|jupytext|regex|diff-match-patch) " \
  | sed 's/^/[floors] installed /'

if [ "${FLOORS_FULL:-0}" = 1 ]; then
  pytest -q -p no:cacheprovider
else
  # Every layer: the MCP edge, tools, rooms and live edits, kernels, three-way merges (diff-match-patch),
  # people (journal, policy, presence, carets), the panel's API and events, the loop gate, the CLI.
  pytest -q -p no:cacheprovider tests/protocol/test_transport.py tests/auth/test_auth.py tests/tools/test_tools.py \
    tests/documents/test_rooms.py tests/documents/test_live_editing.py tests/kernels/test_execution.py tests/documents/test_notebook_text.py \
    tests/integration/test_first_ten_minutes.py tests/protocol/test_sessions_cap.py tests/tools/test_schemas.py \
    tests/documents/test_merge.py tests/documents/test_rebase.py tests/tools/test_files.py tests/documents/test_undo_text.py \
    tests/people/test_journal.py tests/people/test_policy.py tests/agents/test_agents.py tests/agents/test_presence.py \
    tests/agents/test_cursors.py tests/api/test_api.py tests/loop/test_gate.py tests/cli/test_cli.py
fi
