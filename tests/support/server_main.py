"""``python -m tests.support.server_main MODULE ARGS...`` runs ``python -m MODULE ARGS...`` (a Jupyter server, the
Hub's single-user server) with jsonschema's IRI grammar deferred to its first use: importing the ``tests``
package, as ``-m tests.support.server_main`` does first, puts its stand-in in place (tests/support/iri_grammar.py).
"""

from __future__ import annotations

import runpy
import sys

from .iri_grammar import defer_iri_grammar

# ``python -m MODULE`` through this module: every server process the tests start begins with it.
PREFIX = (sys.executable, "-m", "tests.support.server_main")
# ``jupyter server`` through it (tests/support/server.py's JupyterServer takes it as ``launcher``).
LAUNCHER = (*PREFIX, "jupyter_server")


if __name__ == "__main__":
    defer_iri_grammar()  # done already by the package's import; said here too, as this is what it is for
    module, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
