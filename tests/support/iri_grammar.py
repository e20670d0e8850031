"""jsonschema imports ``rfc3987_syntax`` for its ``iri`` and ``iri-reference`` formats, and that module compiles
an Earley grammar (lark) as it is imported: 1.5 to 2.5 CPU-s on the test machines, in every process that
imports jsonschema (python-jsonschema/jsonschema#1428; no release defers it, and nothing public turns it off).
That is a quarter of a Jupyter server start, and as much again in each pytest process (the xdist controller
and every worker import nbformat, hence jsonschema, while they load tests/conftest.py).

No Jupyter event, notebook or settings schema uses those formats. The real module is stood in for by one
whose ``is_valid_syntax`` imports it at its first call, so every format check still runs as it would
(tests/integration/test_start_cost.py checks both). ``tests/__init__.py`` puts the stand-in in place: the package is
imported before any conftest or test module, and before ``tests.support.server_main`` runs a server process.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

NAME = "rfc3987_syntax"


def defer_iri_grammar() -> None:
    """Put the stand-in in ``sys.modules`` (if the real module is installed and not imported yet)."""
    if NAME in sys.modules or importlib.util.find_spec(NAME) is None:
        return
    stand_in = types.ModuleType(
        NAME, "Stands in for rfc3987_syntax until its first check (tests/support/iri_grammar.py)."
    )

    def is_valid_syntax(term: str, value: str) -> bool:
        if sys.modules.get(NAME) is stand_in:
            del sys.modules[NAME]
        real = importlib.import_module(NAME)
        stand_in.is_valid_syntax = real.is_valid_syntax  # type: ignore[attr-defined]
        return real.is_valid_syntax(term, value)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in
