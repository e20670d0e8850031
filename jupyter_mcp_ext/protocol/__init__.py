"""The MCP edge: the Jupyter route, the Streamable HTTP transport and the SDK server.

It knows HTTP and MCP and nothing of notebooks: calls go down to ``tools``.
"""
