"""The tests. Importing the package defers a grammar jsonschema compiles at import to its first use
(tests/support/iri_grammar.py): in every pytest process, and in every server process tests/support/server_main.py starts."""

from .support.iri_grammar import defer_iri_grammar

defer_iri_grammar()
