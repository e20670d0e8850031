"""The reliability suite: bounded (minutes, loopback only) tries at breaking the server.

Its figures are printed at the end of the run by ``tests/conftest.py``, which also gathers them from
pytest-xdist's workers."""
