"""The agents' share of Jupyter Server's event loop: the gate that meters MCP work and holds it back
while a person is served, the driver that meters each step, the start-up heap left out of
Python's full garbage collections, and the C heap's free pages returned once no agent is left."""
