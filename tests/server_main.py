"""``python -m tests.server_main MODULE ARGS...`` runs ``python -m MODULE ARGS...`` (a Jupyter server, the
Hub's single-user server) with one third-party start-up cost deferred to its first use.

jsonschema imports ``rfc3987_syntax`` for its ``iri`` and ``iri-reference`` formats, and that module
compiles an Earley grammar (lark) as it is imported: a quarter of a Jupyter server start's CPU, 1.5 to 2.5
CPU-s on the test machines, in every process that imports jsonschema (python-jsonschema/jsonschema#1428;
no release defers it, and nothing public turns it off). No Jupyter event, notebook or settings schema uses
those formats. Here the module is stood in for by one whose ``is_valid_syntax`` imports the real one at its
first call, so every format check still runs as it would.
"""

from __future__ import annotations

import importlib
import importlib.util
import runpy
import sys
import types

NAME = "rfc3987_syntax"
# ``python -m MODULE`` through this module: every server process the tests start begins with it.
PREFIX = (sys.executable, "-m", "tests.server_main")
# ``jupyter server`` through it (benchmarks/server.py's JupyterServer takes it as ``launcher``).
LAUNCHER = (*PREFIX, "jupyter_server")


def defer_iri_grammar() -> None:
    """Put the stand-in in ``sys.modules`` (if the real module is installed and not imported yet)."""
    if NAME in sys.modules or importlib.util.find_spec(NAME) is None:
        return
    stand_in = types.ModuleType(
        NAME, "Stands in for rfc3987_syntax until its first check (tests/server_main.py)."
    )

    def is_valid_syntax(term: str, value: str) -> bool:
        if sys.modules.get(NAME) is stand_in:
            del sys.modules[NAME]
        real = importlib.import_module(NAME)
        stand_in.is_valid_syntax = real.is_valid_syntax  # type: ignore[attr-defined]
        return real.is_valid_syntax(term, value)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in


if __name__ == "__main__":
    defer_iri_grammar()
    module, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
