"""What loading the extension costs every server start: modules it may not import until a tool needs them.

Checked in this process, not a new one (a fresh interpreter importing Jupyter Server costs seconds of
CPU): our package is imported again with the named modules made unimportable, then everything is put
back as it was."""

from __future__ import annotations

import importlib.abc
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

# jupytext (with markdown-it and its plugins) was a tenth of a server start's CPU; only the text tools use it.
LATE = ("jupytext",)


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in LATE:
            raise ImportError(f"{name} imported while the extension loads")
        return None


@pytest.mark.parametrize("module", ["jupyter_mcp_ext.app"])
def test_loading_the_extension_imports_no_tool_only_library(module):
    saved = dict(sys.modules)
    refuse = Refuse()
    try:
        for name in [n for n in sys.modules if n.split(".")[0] in ("jupyter_mcp_ext", *LATE)]:
            del sys.modules[name]
        sys.meta_path.insert(0, refuse)
        importlib.import_module(module)  # raises if it imports one of LATE
    finally:
        sys.meta_path.remove(refuse)
        sys.modules.clear()
        sys.modules.update(saved)


def test_the_test_servers_defer_the_iri_grammar_and_still_check_iris():
    """tests/support/iri_grammar.py's stand-in, put in place by importing the ``tests`` package (as every pytest process
    and every server process through tests/support/server_main.py does): jsonschema loads without compiling the
    grammar, and its ``iri`` format check still tells a valid IRI from an invalid one (compiling it at the
    first check)."""
    code = (
        "import sys\n"
        "import tests\n"
        "import jsonschema\n"
        "assert 'lark' not in sys.modules, 'the grammar was compiled at import'\n"
        "checker = jsonschema.Draft7Validator.FORMAT_CHECKER\n"
        "assert checker.conforms('https://example.org/caf\u00e9?q=1#top', 'iri')\n"
        "assert not checker.conforms('http://exa mple.org/', 'iri')\n"
        "assert checker.conforms('../up', 'iri-reference') and not checker.conforms('a b', 'iri-reference')\n"
        "assert 'lark' in sys.modules\n"
        "print('ok')\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_this_pytest_process_loaded_jsonschema_without_compiling_the_iri_grammar():
    """Every pytest process (the xdist controller and each worker) imports jsonschema while it loads
    tests/conftest.py; the ``tests`` package's import must come first, or each pays 2 CPU-s for the grammar.
    jsonschema binds the checker it imported, so the stand-in's function is what it holds when the
    deferral came first (a private name of jsonschema: this test only, no product code, reads it)."""
    from jsonschema import _format

    assert _format._rfc3987_is_valid_syntax.__module__ == "tests.support.iri_grammar"


def test_each_tools_argument_schema_is_built_once_per_process(monkeypatch):
    """Every server start lists the tools, and every ``tools/call`` on the 2026 transport asks for the tool's
    input schema: pydantic builds a model's JSON schema anew each time it is asked (about 1 ms a tool, 0.03
    CPU-s a start), so it is built once; each definition still gets a schema of its own to change."""
    from jupyter_mcp_ext.tools import ALL

    built: Counter[str] = Counter()
    for model in {spec.args for spec in ALL}:
        real = model.model_json_schema

        def counting(*args, _real=real, _name=model.__name__, **kwargs):  # type: ignore[no-untyped-def]
            built[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(model, "model_json_schema", counting)
    first = [spec.definition() for spec in ALL]
    first[0].input_schema["properties"] = {}  # a caller changing its copy
    second = [spec.definition() for spec in ALL]
    assert all(n <= 1 for n in built.values()), built
    assert second[0].input_schema != first[0].input_schema and second[1:] == first[1:]
