"""Remote kernels (``--gateway-url``): our own websocket client on the gateway's kernel channels.

With a Kernel or Enterprise Gateway the server's managers start, interrupt and restart kernels
over HTTP, but the kernel client they hand out (``GatewayKernelClient``) is not usable by a server
extension: its websocket omits the gateway's auth token, connecting blocks the event loop, waiting
for a message busy-loops a core and it gives up on a kernel slower than a second. This client offers
the few calls our runs make (``execute``, ``stop_channels``, ``channels_running``) over one tornado
websocket opened with the connection arguments of the server's ``GatewayClient``, and hands every
message to ``KernelLink.route`` by parent message id, as the ZMQ readers do for local kernels.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import uuid
from collections.abc import Callable
from typing import Any

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import deserialize_binary_message
from jupyter_server.utils import url_path_join
from tornado.escape import url_escape
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from ..errors import ToolError
from .link import KernelLink
from .messages import LARGE

log = logging.getLogger(__name__)

# A kernel sends what a cell printed between two flushes as one message, and the gateway relays it
# as one websocket frame: tornado's 10 MiB default would drop the connection on a print flood. Its
# websocket client cannot read a frame over 100 MiB at all (a fixed read buffer), so that is the cap.
MAX_MESSAGE_BYTES = 100 * 1024 * 1024
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
_HEAD = 65536  # header, parent header and metadata come before the content; buffers and channel after


async def open_link(
    gateway: Any,
    kernel_id: str,
    *,
    keep_chars: int,
    on_died: Callable[[], None],
    on_ready: Callable[[], None],
    keep: Callable[[KernelLink], KernelLink],
) -> KernelLink:
    """A connected, ready link on a gateway kernel; one per kernel, however many ask at once.

    ``gateway`` is the server's GatewayClient. ``on_ready`` is told once the kernel answered (a slow
    start is not idleness); ``keep`` keeps the link for the kernel and gives back the one kept, which
    is another when a concurrent call's link was kept first (this one's connection is then closed).
    """
    client = GatewayKernelClient(gateway, kernel_id, keep_chars=keep_chars, on_died=on_died)
    try:
        await client.connect(timeout=60)
    except Exception as err:
        client.stop_channels()
        raise ToolError(
            f"The kernel did not answer through the gateway ({gateway.url}): {err}. Try restart_kernel."
        ) from err
    on_ready()
    link = keep(KernelLink(kernel_id, client))
    if link.client is client:
        client.route = link.route
    else:
        client.stop_channels()
    return link


class GatewayKernelClient:
    """One websocket to ``<gateway>/api/kernels/<id>/channels`` (the JSON protocol a browser speaks)."""

    def __init__(self, gateway: Any, kernel_id: str, *, keep_chars: int, on_died: Callable[[], None]) -> None:
        self.gateway = gateway  # the server's GatewayClient: URL, headers, token, certificates
        self.kernel_id = kernel_id
        self.keep_chars = keep_chars
        self.on_died = on_died
        self.route: Callable[[str, dict[str, Any]], None] = lambda channel, msg: None
        # Our own identity: the gateway gives each websocket its own shell socket, so replies come here.
        self.session = Session(session=f"jupyter-mcp-ext-{uuid.uuid4().hex}", username="jupyter-mcp-ext")
        self._ws: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stopped = False
        self._lost: str | None = None  # why the connection ended, if it ended without stop_channels
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}  # our own requests (kernel_info)
        self._open: dict[str, set[str]] = {}  # execute msg id -> what it still awaits: reply, idle

    @property
    def channels_running(self) -> bool:
        return self._ws is not None and not self._stopped and self._lost is None

    async def connect(self, timeout: float) -> None:
        """Open the websocket and wait until the kernel answers a ``kernel_info_request``."""
        url = url_path_join(
            self.gateway.ws_url or "", self.gateway.kernels_endpoint, url_escape(self.kernel_id), "channels"
        )
        request = HTTPRequest(
            f"{url}?session_id={url_escape(self.session.session)}", **self.gateway.load_connection_args()
        )
        self._ws = await asyncio.wait_for(
            websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES), timeout
        )
        self._reader = asyncio.create_task(self._read(), name=f"jupyter-mcp-ext gateway {self.kernel_id}")
        msg_id = self._send("shell", "kernel_info_request", {})
        reply = self._replies[msg_id] = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(reply, timeout)
        finally:
            self._replies.pop(msg_id, None)

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
        allow_stdin: bool = False,
        stop_on_error: bool = True,
    ) -> str:
        """Send an ``execute_request``; its messages go to ``route``. Returns the message id."""
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": allow_stdin,
            "stop_on_error": stop_on_error,
        }
        msg_id = self._send("shell", "execute_request", content)
        self._open[msg_id] = {"reply", "idle"}
        if not self.channels_running:
            # Ended before the caller could listen: answer on the next loop turn, once it does.
            asyncio.get_running_loop().call_soon(self._fail, msg_id)
        return msg_id

    def stop_channels(self) -> None:
        self._stopped = True
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.close()
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(ConnectionError("the client was closed"))
        for msg_id in list(self._open):  # sent, and now never answered here
            self._fail(msg_id)

    # -- wire ----------------------------------------------------------------------------

    def _send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        msg = self.session.msg(msg_type, content)
        if self.channels_running and self._ws is not None:
            msg["channel"] = channel
            sent = self._ws.write_message(json.dumps(msg, default=json_default))
            sent.add_done_callback(self._on_sent)
        return msg["header"]["msg_id"]

    def _on_sent(self, sent: asyncio.Future[None]) -> None:
        if not sent.cancelled() and sent.exception() is not None:
            log.warning("Could not send to gateway kernel %s: %s", self.kernel_id, sent.exception())

    async def _read(self) -> None:
        assert self._ws is not None
        reason = "the gateway closed the connection"
        try:
            while (data := await self._ws.read_message()) is not None:
                self._ack_quickly()
                try:
                    msg = self._decode(data)
                except Exception as err:
                    log.warning("Unreadable message from gateway kernel %s: %s", self.kernel_id, err)
                    continue
                self._dispatch(msg)
            if self._ws.close_code is None:
                reason = "the connection to the gateway broke (a single output message over 100 MB does that)"
            else:
                reason += f" (code {self._ws.close_code}{', ' + self._ws.close_reason if self._ws.close_reason else ''})"
        except asyncio.CancelledError:
            raise
        except Exception as err:
            reason = f"the connection to the gateway failed: {err}"
        if not self._stopped:
            self._lost = reason
            log.warning("Gateway kernel %s: %s", self.kernel_id, reason)
            for reply in self._replies.values():
                if not reply.done():
                    reply.set_exception(ConnectionError(reason))
            for msg_id in list(self._open):
                self._fail(msg_id)

    def _ack_quickly(self) -> None:
        """Acknowledge at once what the gateway sends next (Linux; re-armed per message).

        The gateway's websocket leaves Nagle's algorithm on: it holds a reply's next small message
        until the last one is acknowledged, and a delayed ACK waits 40 ms. Measured on loopback, this
        takes an ``execute`` of ``1+1`` from ~51 ms to ~15 ms (p50).
        """
        if _QUICKACK is not None and self._ws is not None:
            with contextlib.suppress(OSError, AttributeError):
                self._ws.stream.socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        channel = msg.pop("channel", None) or "iopub"
        msg_type = msg["header"]["msg_type"]
        parent = (msg.get("parent_header") or {}).get("msg_id")
        if channel == "iopub" and msg_type == "status" and not parent:
            if msg["content"].get("execution_state") in ("restarting", "dead"):
                self.on_died()  # the gateway saw the kernel die (and maybe restarted it)
            return
        waiting = self._open.get(parent) if parent else None
        if waiting is not None:
            if channel == "shell":
                waiting.discard("reply")
            elif msg_type == "status" and msg["content"].get("execution_state") == "idle":
                waiting.discard("idle")
            if not waiting:
                del self._open[parent]
        reply = self._replies.get(parent) if parent and channel == "shell" else None
        if reply is not None and not reply.done():
            reply.set_result(msg)
        self.route(channel, msg)

    def _fail(self, msg_id: str) -> None:
        """End an execution whose messages will never come: an error output, a reply, idle."""
        waiting = self._open.pop(msg_id, None)
        if not waiting:
            return
        why = (
            f"Lost the connection to the kernel on the gateway: {self._lost}. The kernel may still be running; the next call connects again."
            if self._lost
            else "The connection to the kernel was closed (a restart or shutdown) before this cell ended."
        )
        error = {"ename": "ConnectionError", "evalue": why, "traceback": []}
        parent = {"msg_id": msg_id, "msg_type": "execute_request"}
        if "idle" in waiting:
            self.route("iopub", self._made("error", error, parent))
        if "reply" in waiting:
            self.route("shell", self._made("execute_reply", {"status": "error", **error}, parent))
        if "idle" in waiting:
            self.route("iopub", self._made("status", {"execution_state": "idle"}, parent))

    def _made(self, msg_type: str, content: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
        return self.session.msg(msg_type, content, parent=parent)

    def _decode(self, data: str | bytes) -> dict[str, Any]:
        if isinstance(data, bytes):  # a message with binary buffers
            return deserialize_binary_message(data)
        if len(data) > max(LARGE, 6 * self.keep_chars + 1024):
            with contextlib.suppress(ValueError, KeyError):
                msg = _large_stream(data, self.keep_chars)
                if msg is not None:
                    return msg
        return json.loads(data)


def _large_stream(data: str, keep_chars: int) -> dict[str, Any] | None:
    """A huge stream message decoded only as far as it can be kept (see messages.py).

    jupyter_server writes ``{"header", "msg_id", "msg_type", "parent_header", "metadata",
    "content", "buffers", "channel"}`` in that order, the stream's text last in the content.
    """
    head = data[:_HEAD]
    if '"msg_type": "stream"' not in head:
        return None
    at = head.find('"content": {')
    end = data.rfind('}, "buffers": ', len(data) - _HEAD)
    if at < 0 or end < 0:
        return None
    msg = json.loads(data[:at] + '"content": {}' + data[end + 1 :])
    body = data[at : at + 256]
    text_at = body.find('"text": "')
    edges = body + data[end - 64 : end + 1]
    name = "stdout" if '"name": "stdout"' in edges else "stderr" if '"name": "stderr"' in edges else None
    if msg.get("msg_type") != "stream" or text_at < 0 or name is None:
        return None
    start = at + text_at + len('"text": "')
    # Six characters per character at most (a \uXXXX escape); then step back off a cut escape.
    chunk = data[start : start + 6 * keep_chars]
    slash = chunk.rfind("\\", max(0, len(chunk) - 6))
    while slash > 0 and chunk[slash - 1] == "\\":
        slash -= 1
    if slash >= 0:
        chunk = chunk[:slash]
    decoded = json.loads(f'"{chunk}"')
    text = decoded[:keep_chars]
    # UTF-8 bytes not kept: the rest of the decoded head, and the undecoded rest of the text at the
    # bytes-per-escaped-character rate of the head (jupyter_server escapes non-ASCII as \uXXXX).
    size = len(decoded.encode())
    rest = (end - start - len(chunk)) * size / max(1, len(chunk))
    msg["content"] = {"name": name, "text": text, "omitted": size - len(text.encode()) + round(rest)}
    return msg
