"""Agents as collaborators: who is connected (one per MCP session, ``directory.py``), how each shows in
a notebook's room beside the people in it (``presence.py``), and carets in shared cells
(``cursors.py``). Below the person's oversight (``people/``), which takes them as services."""
