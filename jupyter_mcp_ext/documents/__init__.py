"""Live shared documents: rooms, notebook cells, text files, notebooks as percent scripts, paths."""
