"""The live notebook view for agent hosts with MCP Apps (``io.modelcontextprotocol/ui``).

``view.py`` serves the ``ui://`` resource (static HTML, script and style shipped here, under a
strict content security policy) and says which tools carry it; ``payload.py`` shapes the cells a
tool read or ran into the data the view renders, sent in the result's ``_meta``, which hosts hand to
the view and not to the model. A client that did not negotiate the extension sees none of it.
"""
