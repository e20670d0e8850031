"""Who is calling: agent credentials (their store, their principal), apart from Jupyter's people."""
