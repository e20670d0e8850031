"""Kernels: the notebook's own kernel, found or started through the server's session manager.

A notebook's kernel is its Jupyter session, the one a JupyterLab tab attaches to when it opens. The
agent talks to it through one long-lived client per kernel, with a session identity of its own
(clients made by the kernel manager share one ZMQ identity and steal each other's replies).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from jupyter_core.utils import ensure_async

from ..errors import ToolError
from . import iopub, messages
from .gateway_link import open_link
from .link import KernelLink

log = logging.getLogger(__name__)

KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"

Listener = Callable[[dict[str, Any]], None]


class KernelService:
    def __init__(self, serverapp: Any, *, idle_timeout: float, keep_chars: int):
        self.sessions = serverapp.session_manager
        self.kernels = serverapp.kernel_manager
        self.kernelspecs = serverapp.kernel_spec_manager
        self.contents = serverapp.contents_manager
        gateway = getattr(serverapp, "gateway_config", None)
        self.gateway = gateway if gateway is not None and gateway.gateway_enabled else None
        self.idle_timeout = idle_timeout
        self.keep_chars = keep_chars  # of one stream message: more could not be kept anyway
        self._links: dict[str, KernelLink] = {}
        self._binding = defaultdict[str, asyncio.Lock](asyncio.Lock)
        self._started_here: dict[str, float] = {}  # kernel id -> last use, for kernels we started
        self._connecting: Counter[str] = Counter()  # kernel id -> clients waiting for it to answer
        self._shutting: dict[str, asyncio.Task[None]] = {}  # kernel id -> the culler's shutdown of it
        self._listeners: list[Listener] = []
        self._culler: asyncio.Task[None] | None = None
        with contextlib.suppress(Exception):
            serverapp.event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=self._on_kernel_action)

    # -- finding the notebook's kernel ---------------------------------------------------

    async def session_for(self, path: str) -> dict[str, Any] | None:
        with contextlib.suppress(Exception):
            return await ensure_async(self.sessions.get_session(path=path))
        return None

    async def bind(
        self, path: str, kernel_name: str | None, *, before_start: Callable[[], Awaitable[None]] | None = None
    ) -> str:
        """The kernel id of the notebook's session, starting one (once, however many ask) if none.

        ``before_start`` runs only when a kernel is about to be started (it may refuse by raising).
        """
        async with self._binding[path]:
            session = await self.session_for(path)
            if session and session.get("kernel") and session["kernel"]["id"] in self.kernels:
                kernel_id = session["kernel"]["id"]
            else:
                if before_start is not None:
                    await before_start()
                name = kernel_name or self.kernels.default_kernel_name
                await self.check_kernelspec(name)
                try:
                    if session:  # the session outlived its kernel: give it a new one
                        kernel_id = await self.sessions.start_kernel_for_session(
                            session["id"], path, os.path.basename(path), "notebook", name
                        )
                        await self.sessions.update_session(session["id"], kernel_id=kernel_id)
                    else:
                        session = await self.sessions.create_session(
                            path=path, name=os.path.basename(path), type="notebook", kernel_name=name
                        )
                        kernel_id = session["kernel"]["id"]
                except Exception as err:
                    raise ToolError(f"The kernel '{name}' failed to start: {err}") from err
                self._started_here[kernel_id] = time.monotonic()
                self._ensure_culler()
            self.touch(kernel_id)
            return kernel_id

    async def check_kernelspec(self, name: str) -> None:
        specs = await ensure_async(self.kernelspecs.get_all_specs())
        if name not in specs:
            raise ToolError(
                f"No kernel named '{name}' is installed. Installed: {', '.join(sorted(specs)) or 'none'}; "
                "use set_kernel to choose one."
            )

    async def link(self, kernel_id: str) -> KernelLink:
        """Our long-lived client on the kernel, connected and ready."""
        link = self._links.get(kernel_id)
        if link is not None and link.client.channels_running:
            if link.shared is not None:  # the server replaces its stream when a restart moves ports
                self._share_iopub(link)
            return link
        if link is not None:  # its connection ended (a gateway's websocket): connect afresh
            await self.forget_link(kernel_id)
        if self.gateway is not None:  # a remote kernel: the gateway's own client is unusable
            with self._waiting_for(kernel_id):
                return await open_link(
                    self.gateway,
                    kernel_id,
                    keep_chars=self.keep_chars,
                    on_died=lambda: self._announce(kernel_id, "died"),
                    on_ready=lambda: self.touch(kernel_id),
                    keep=lambda link: self._links.setdefault(kernel_id, link),
                )
        kernel = self.kernels.get_kernel(kernel_id)
        client = kernel.client()
        client.session.session = f"jupyter-mcp-ext-{uuid.uuid4().hex}"
        client.start_channels()
        try:
            with self._waiting_for(kernel_id):
                await client.wait_for_ready(timeout=60)
        except Exception as err:
            client.stop_channels()
            raise ToolError(f"The kernel did not answer: {err}. Try restart_kernel.") from err
        link = self._links.setdefault(kernel_id, KernelLink(kernel_id, client))
        if link.client is client:
            link.readers = [asyncio.create_task(self._read(link, "shell", client.get_shell_msg))]
            if self._share_iopub(link) is not None:
                client.iopub_channel.stop()  # needed only until the kernel answered: see iopub.py
            else:
                link.readers.append(
                    asyncio.create_task(self._read(link, "iopub", lambda: self._recv_iopub(link)))
                )
            with contextlib.suppress(Exception):
                self.kernels.add_restart_callback(
                    kernel_id, lambda: self._announce(kernel_id, "died"), "restart"
                )
                self.kernels.add_restart_callback(
                    kernel_id, lambda: self._announce(kernel_id, "died"), "dead"
                )
        else:
            client.stop_channels()
        return link

    @contextlib.contextmanager
    def _waiting_for(self, kernel_id: str) -> Iterator[None]:
        """While a client waits for the kernel's first answer the culler leaves the kernel alone, local or
        remote: a slow start is not idleness. Its answer counts as use."""
        self._connecting[kernel_id] += 1
        try:
            yield
        finally:
            self._connecting[kernel_id] -= 1
            if not self._connecting[kernel_id]:
                del self._connecting[kernel_id]
        self.touch(kernel_id)

    def _share_iopub(self, link: KernelLink) -> Any | None:
        """Receive the kernel's iopub on the server's own stream (one copy of a huge output, not three)."""
        stream = iopub.share(
            self.kernels.get_kernel(link.kernel_id), lambda frames: self._routed(link, frames)
        )
        if stream is not link.shared and link.shared is not None:
            iopub.unshare(link.shared)
        link.shared = stream
        return stream

    def _routed(self, link: KernelLink, frames: list[Any]) -> None:
        msg = messages.read(link.client.session, frames, self.keep_chars, link.routes, link.budgets)
        if msg is not None:
            link.route("iopub", msg)

    async def _recv_iopub(self, link: KernelLink) -> dict[str, Any] | None:
        """An iopub message of ours; a huge stream output is decoded only as far as it can be kept."""
        frames = await link.client.iopub_channel.socket.recv_multipart(copy=False)
        return messages.read(link.client.session, frames, self.keep_chars, link.routes, link.budgets)

    async def _read(self, link: KernelLink, channel: str, get: Callable[..., Any]) -> None:
        while True:
            try:
                msg = await get()
            except asyncio.CancelledError:
                raise
            except Exception:
                if not link.client.channels_running:
                    return  # closed under us (restart, shutdown)
                await asyncio.sleep(0.05)
                continue
            if msg is not None:
                link.route(channel, msg)

    # -- lifecycle -----------------------------------------------------------------------

    def touch(self, kernel_id: str) -> None:
        if kernel_id in self._started_here:
            self._started_here[kernel_id] = time.monotonic()

    def on_kernel_event(self, listener: Listener) -> None:
        """Call ``listener({"kernel_id", "action"})`` when a kernel restarts, dies or shuts down."""
        self._listeners.append(listener)

    def _announce(self, kernel_id: str, action: str) -> None:
        for listener in self._listeners:
            listener({"kernel_id": kernel_id, "action": action})

    async def _on_kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        if data.get("status") == "success" and data.get("action") in ("restart", "shutdown"):
            kernel_id = data.get("kernel_id", "")
            if data["action"] == "shutdown":
                await self.forget(kernel_id)
            self._announce(kernel_id, data["action"])

    async def forget(self, kernel_id: str) -> None:
        self._started_here.pop(kernel_id, None)
        await self.forget_link(kernel_id)

    async def forget_link(self, kernel_id: str) -> None:
        """Drop our client on a kernel (after a restart the next call connects afresh)."""
        link = self._links.pop(kernel_id, None)
        if link is not None:
            await link.close()

    async def switch(self, path: str, kernel_name: str) -> str:
        """Give the notebook's session a kernel of another kind, as JupyterLab's kernel picker does."""
        async with self._binding[path]:
            session = await self.session_for(path)
            if session is None:
                session = await self.sessions.create_session(
                    path=path, name=os.path.basename(path), type="notebook", kernel_name=kernel_name
                )
                kernel_id = session["kernel"]["id"]
            else:
                old = (session.get("kernel") or {}).get("id")
                try:
                    kernel_id = await self.sessions.start_kernel_for_session(
                        session["id"], path, os.path.basename(path), "notebook", kernel_name
                    )
                except Exception as err:
                    raise ToolError(f"The kernel '{kernel_name}' failed to start: {err}") from err
                await self.sessions.update_session(session["id"], kernel_id=kernel_id)
                if old and old in self.kernels:
                    others = [
                        s
                        for s in await ensure_async(self.sessions.list_sessions())
                        if (s.get("kernel") or {}).get("id") == old
                    ]
                    if not others:
                        await self.forget(old)
                        await ensure_async(self.kernels.shutdown_kernel(old))
            self._started_here[kernel_id] = time.monotonic()
            self._ensure_culler()
            return kernel_id

    def _ensure_culler(self) -> None:
        if self._culler is None or self._culler.done():
            self._culler = asyncio.create_task(self._cull_idle())

    async def _cull_idle(self) -> None:
        """Shut down kernels started for agents once no tab is connected and nothing ran for a while."""
        while self._started_here:
            await asyncio.sleep(max(0.2, min(self.idle_timeout / 4, 30)))
            now = time.monotonic()
            for kernel_id, last in list(self._started_here.items()):
                link = self._links.get(kernel_id)
                busy = kernel_id in self._connecting or (link is not None and link.lock.locked())
                if busy or now - last < self.idle_timeout or kernel_id not in self.kernels:
                    if kernel_id not in self.kernels:
                        await self.forget(kernel_id)
                    continue
                if (await ensure_async(self.kernels.kernel_model(kernel_id))).get("connections", 0):
                    self._started_here.pop(kernel_id, None)  # a tab uses it now: the server's culler owns it
                    continue
                # In a task of its own: stop() cancels the culler, and a shutdown cancelled halfway leaves
                # the server's kernel manager unable to shut that kernel down (its `ready` never set).
                shutting = self._shutting[kernel_id] = asyncio.create_task(self.shutdown(kernel_id))
                shutting.add_done_callback(lambda _t, k=kernel_id: self._shutting.pop(k, None))
                await asyncio.shield(shutting)

    async def shutdown(self, kernel_id: str) -> None:
        await self.forget(kernel_id)
        with contextlib.suppress(Exception):
            for session in await ensure_async(self.sessions.list_sessions()):
                if (session.get("kernel") or {}).get("id") == kernel_id:
                    await self.sessions.delete_session(session["id"])
        with contextlib.suppress(Exception):
            if kernel_id in self.kernels:
                await ensure_async(self.kernels.shutdown_kernel(kernel_id))
        log.info("Shut down idle agent kernel %s", kernel_id)

    async def stop(self) -> None:
        if self._culler is not None:
            self._culler.cancel()
        # A shutdown under way ends (the kernel manager bounds it) before the server shuts its kernels down.
        await asyncio.gather(*self._shutting.values(), return_exceptions=True)
        for kernel_id in list(self._links):
            await self.forget(kernel_id)
