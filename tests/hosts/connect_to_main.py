"""``python -m tests.hosts.connect_to_main jupyter_server ARGS...``: a lab that connects to the test's
own server for some names, as curl's ``--connect-to`` does (an /etc/hosts entry of this process
alone). ``JUPYTER_MCP_TEST_CONNECT_TO`` is ``host:port:to_host:to_port,...``; every other name
resolves as usual. For the host tests' published client documents (``documents.py``) only."""

from __future__ import annotations

import os
import runpy
import socket
import sys
from typing import Any

from ..support.iri_grammar import defer_iri_grammar

VARIABLE = "JUPYTER_MCP_TEST_CONNECT_TO"


def connect_to(routes: str) -> None:
    table = {}
    for route in filter(None, routes.split(",")):
        host, port, to_host, to_port = route.rsplit(":", 3)
        table[(host.lower(), int(port))] = (to_host, int(to_port))
    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(host).lower(), int(port or 0))
        return resolve(*table[key], *args, **kwargs) if key in table else resolve(host, port, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


if __name__ == "__main__":
    connect_to(os.environ[VARIABLE])
    defer_iri_grammar()
    module, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
