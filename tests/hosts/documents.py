"""The hosts' client ID metadata documents, served where a lab that can reach them finds them.

Claude Code's ``client_id`` is ``https://claude.ai/oauth/claude-code-client-metadata`` and Codex's
``https://chatgpt.com/oauth/codex/<id>/client.json``: fixed names on the internet, which this machine
cannot reach. So documents of the same shape (that URL's path, the host's ``client_name``, its
loopback callback as redirect URI, any port) are served over TLS from loopback, under a certificate
for those names from a CA made for the test; the lab's process alone is told to trust that CA
(``SSL_CERT_FILE``) and to connect to this server for those names (``connect_to_main``). The lab's
own fetch, resolver check and TLS verification run as in production.
"""

from __future__ import annotations

import datetime
import json
import re
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# cryptography comes with JupyterHub (certipy), which the test extra installs.
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SITES = ("claude.ai", "chatgpt.com")
CLAUDE = "https://claude.ai/oauth/claude-code-client-metadata"
CODEX = re.compile(r"^/oauth/codex/([A-Za-z0-9_-]{1,64})/client\.json$")


def document(path: str) -> dict[str, object] | None:
    """The document at ``path``, shaped as the host's own (the names and callbacks they use)."""
    if path == "/oauth/claude-code-client-metadata":
        callbacks = ["http://localhost/callback", "http://127.0.0.1/callback"]
        return {"client_id": CLAUDE, "client_name": "Claude Code", "redirect_uris": callbacks}
    found = CODEX.match(path)
    if found:
        callbacks = [
            f"http://127.0.0.1/callback/{found.group(1)}",
            f"http://localhost/callback/{found.group(1)}",
        ]
        return {"client_id": f"https://chatgpt.com{path}", "client_name": "Codex", "redirect_uris": callbacks}
    return None


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA for the test, and a certificate it signs for ``SITES``: (ca.pem, cert.pem, key.pem)."""
    now = datetime.datetime.now(datetime.UTC)
    life = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=2))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder(
            subject_name=_name("jupyter-mcp-ext test CA"), issuer_name=_name("jupyter-mcp-ext test CA")
        )
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(life[0])
        .not_valid_after(life[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder(subject_name=_name(SITES[0]), issuer_name=ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(life[0])
        .not_valid_after(life[1])
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(s) for s in SITES]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


@dataclass
class Published:
    """The documents' server: its port, its CA, and the paths the lab fetched."""

    port: int
    ca: Path
    fetched: list[str] = field(default_factory=list)

    @property
    def connect_to(self) -> str:
        """For ``connect_to_main``: each site's https port goes to this server."""
        return ",".join(f"{site}:443:127.0.0.1:{self.port}" for site in SITES)


@contextmanager
def published(folder: Path) -> Iterator[Published]:
    """Serve the hosts' documents over TLS on a loopback port, in a thread, until the block ends."""
    ca, cert, key = make_certificates(folder)
    fetched: list[str] = []

    class Documents(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(f"{self.headers.get('Host')}{self.path}")
            found = document(self.path)
            body = json.dumps(found).encode() if found else b"{}"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Published(server.server_address[1], ca, fetched)
    finally:
        server.shutdown()
        server.server_close()
