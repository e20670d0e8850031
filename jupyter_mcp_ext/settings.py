"""The extension's settings (``c.MCPExtensionApp.<name>``) and the state files they name."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Enum, Float, Int, List, TraitError, Unicode, validate

from .documents.secrets import DEFAULT_DENIED


class MCPSettings(ExtensionApp):
    """Every setting, apart from the app's wiring; ``MCPExtensionApp`` is the one to configure."""

    path = Unicode(
        "mcp",
        config=True,
        help="Path of the MCP endpoint under the server's base URL: 'mcp' serves <base_url>/mcp. Change it "
        "when another extension routes the same path (the server log then says which), e.g. 'jupyter-mcp'.",
    )

    @validate("path")
    def _valid_path(self, proposal: dict) -> str:
        value = str(proposal["value"]).strip("/")
        if not re.fullmatch(r"[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*", value):
            raise TraitError(
                f"MCPExtensionApp.path must be a URL path such as 'mcp', not {proposal['value']!r}."
            )
        return value

    room_idle_timeout = Float(
        300.0,
        config=True,
        help="Seconds after an agent's last use before a notebook room it opened, and that no tab has "
        "open, is closed (its content is saved first). Once every agent that used it has left (its MCP "
        "session ended), it closes sooner, after collaboration's document_cleanup_delay, as after a "
        "tab. Rooms that a tab uses are left to the collaboration layer.",
    )
    room_ready_timeout = Float(
        30.0,
        config=True,
        allow_none=True,
        help="Seconds a tool call waits for a notebook's shared document to load before it fails with a "
        "tool error. A load still under way goes on for the next call; a room whose update store could not "
        "open its database is closed, so that a retry opens it afresh. None: wait without end.",
    )
    session_idle_timeout = Float(
        1800.0,
        config=True,
        allow_none=True,
        help="Seconds without requests after which an MCP session is closed; None keeps sessions "
        "until the client ends them.",
    )
    sse_retry_interval = Int(
        1000,
        config=True,
        help="Milliseconds a client waits before reconnecting a dropped SSE stream (the SSE 'retry' field).",
    )
    max_result_bytes = Int(64_000, config=True, help="Bytes of text and images one tool result may carry.")
    max_output_chars = Int(8_000, config=True, help="Characters kept of any one output in a result.")
    max_images = Int(4, config=True, help="Images one tool result may carry; more are counted, not sent.")
    kernel_idle_timeout = Float(
        3600.0,
        config=True,
        help="Seconds without runs after which a kernel this extension started, for a notebook no tab is "
        "connected to, is shut down. The server's own culling settings apply as well.",
    )
    default_timeout = Float(
        120.0, config=True, help="Seconds an execution call waits when the agent gives no timeout."
    )
    max_timeout = Float(
        600.0, config=True, help="Largest timeout, in seconds, an agent may ask an execution call for."
    )
    max_document_output_bytes = Int(
        5_000_000,
        config=True,
        help="Bytes of output one cell run keeps, in the notebook and in memory; past it the cell says it was cut.",
    )
    max_source_chars = Int(
        1_000_000, config=True, help="Largest cell source, in characters, an agent may write."
    )
    max_file_bytes = Int(
        10_000_000,
        config=True,
        help="Largest file, in bytes, read_file and edit_file load and write_file writes.",
    )
    max_download_bytes = Int(
        1_000_000, config=True, help="Largest file, in bytes, download_file returns (before base64)."
    )
    journal_size = Int(
        1000,
        config=True,
        help="Agent calls the journal keeps in memory for review and revert; oldest dropped first.",
    )
    journal_bytes = Int(
        64_000_000,
        config=True,
        help="Bytes the journal's entries may hold in memory (a rewrite of big cells holds them whole, "
        "to revert it); oldest entries dropped first, and one larger alone is kept without its undo.",
    )
    journal_file = Unicode(
        "",
        config=True,
        allow_none=True,
        help="SQLite file keeping the journal (agent changes, who kept or undid them, checkpoints) across "
        "restarts, readable by the owner alone; bounded like the journal in memory (journal_size, "
        "journal_bytes, journal_max_age). Empty: jupyter_mcp_ext/journal-<hash>.sqlite in Jupyter's data "
        "folder, one per root folder and base_url. None: the journal is kept in memory only.",
    )
    journal_max_age = Float(
        14 * 24 * 3600.0,
        config=True,
        allow_none=True,
        help="Seconds an agent call stays in the journal (in memory and in journal_file) for review and "
        "revert; older ones are dropped, at start too. None: no age limit.",
    )
    approval_timeout = Float(
        300.0,
        config=True,
        help="Seconds a call waits for a person's approval (policy 'ask') before it gives up with an error.",
    )
    max_pending_approvals = Int(
        8,
        config=True,
        help="Calls one agent may have waiting for a person's approval at once (policy 'ask'), and a "
        "quarter of what all agents of one credential (a token, a user) may have; one more is refused "
        "with an error that says so.",
    )
    max_approval_chars = Int(
        100_000,
        config=True,
        help="Characters of code or change a call waiting for approval may show (policy 'ask'). A person "
        "is shown a call whole or not at all: a larger call is refused with an error that says so.",
    )
    approval_turn_calls = Int(
        10,
        config=True,
        help="Calls 'approve the rest of this turn' lets through without asking: the same tool on the "
        "same path, by the same agent. 0 turns the choice off.",
    )
    approval_turn_seconds = Float(
        120.0,
        config=True,
        help="Seconds from the approval during which 'approve the rest of this turn' holds; they do not "
        "restart with each call.",
    )
    policy_file = Unicode(
        "",
        config=True,
        help="JSON file keeping the agent policy across restarts; empty: jupyter_mcp_ext/policy.json in "
        "Jupyter's data folder.",
    )
    hide_forbidden_tools = Bool(
        False,
        config=True,
        help="Leave out of tools/list the tools the caller may not use (by the authorizer); by default "
        "they are listed, marked NOT PERMITTED with the permission they need.",
    )
    agent_name_suffix = Unicode(
        None,
        config=True,
        allow_none=True,
        help="Appended to an agent's client name to make the name people see it by, e.g. ' (agent)' "
        "gives 'Claude Code (agent)'; '{user}' in it is the name of the person it acts for. None: "
        "' (agent)', or \" ({user}'s agent)\" under JupyterHub.",
    )
    agent_idle_timeout = Float(
        600.0,
        config=True,
        allow_none=True,
        help="Seconds without a tool call after which an agent leaves the notebooks it is present in "
        "(it comes back with its next call); None keeps it until its MCP session ends.",
    )

    revision_memory_bytes = Int(
        32_000_000,
        config=True,
        help="Bytes of cell and file texts kept, least recently used first out, to merge an agent's "
        "whole-text write with what people typed since its read. A write whose read was forgotten "
        "asks the agent to read again.",
    )

    max_sessions_per_user = Int(
        64,
        config=True,
        allow_none=True,
        help="MCP sessions one user (or one token) may hold open; a new one closes that user's oldest idle "
        "session first. None: no per-user limit.",
    )
    max_sessions = Int(
        1000,
        config=True,
        allow_none=True,
        help="MCP sessions open in all; at the limit a new one closes the oldest idle session (its own user's "
        "first), or gets HTTP 503 if all are busy. None: no limit.",
    )

    conformance_tools = Bool(
        False,
        config=True,
        help="List the tools the MCP conformance suite calls (test_reconnection); for CI only.",
    )
    max_save_delay = Float(
        2.0,
        config=True,
        allow_none=True,
        help="Seconds after which a notebook or open text file this extension reads or writes, and that "
        "keeps changing, is saved anyway (the collaboration layer waits for changes to pause: an agent editing "
        "steadily or a cell streaming output would postpone it without end). None: never forced.",
    )
    denied_files = List(
        Unicode(),
        list(DEFAULT_DENIED),
        config=True,
        help="Patterns of secret files agents may not read, write, move or delete (case-insensitive; "
        "without a slash, the file's name: '*.pem'; with one, the end of its path: '.git/config'). "
        "Symbolic links are followed. An empty list turns the check off.",
    )

    mcp_loop_share = Float(
        0.8,
        config=True,
        help="Largest share (0-1) of the server's event loop time (wall clock, not CPU) that MCP calls and "
        "the outputs of agents' runs may use while a person uses the server (a tab open on a shared "
        "document, or a request in the last 30 s); calls over it wait their turn, so people's typing, "
        "file browser and kernels are served first. 1: no limit but mcp_loop_waiting_share.",
    )

    mcp_loop_waiting_share = Float(
        0.25,
        config=True,
        min=0.01,
        max=1.0,
        help="Largest share of the event loop time that MCP work may use while a request of a person's "
        "is in flight (a folder listing, a save), if lower than mcp_loop_share: the request is served as "
        "if the agents were elsewhere. 1: mcp_loop_share alone.",
    )

    mcp_loop_free_step_ms = Float(
        0.0,
        config=True,
        help="Steps of MCP work shorter than this (milliseconds of loop time) are not charged to "
        "mcp_loop_share: the gate then holds agents back only for the long steps a person would wait "
        "behind. 0: every step is charged.",
    )

    mcp_loop_slice_ms = Float(
        3.0,
        config=True,
        help="While a person uses the server, MCP work holds the event loop for about this long at most "
        "(milliseconds) before the loop next looks for people's keystrokes and requests, which then go "
        "first; the rest of the MCP work waits for that look. 0: MCP work runs as it comes.",
    )

    freeze_startup_objects = Bool(
        True,
        config=True,
        help="Once the server has started, leave the objects that exist then (modules, classes, functions: "
        "about 270,000 with JupyterLab) out of Python's full garbage collections (gc.freeze), which otherwise "
        "walk them all every few seconds while agents work, holding the server's loop 110-180 ms each time. "
        "Process-wide. False: Python's collector as it is.",
    )

    agents_file = Unicode(
        "",
        config=True,
        help="SQLite file keeping agents' credentials (token hashes, never tokens) across restarts; empty: "
        "jupyter_mcp_ext/agents.sqlite in Jupyter's data folder, shared by the person's servers (each "
        "credential belongs to the server, root folder and base_url, that issued it). A .json name "
        "(older versions' file) is read once and its records adopted into <name>.sqlite.",
    )
    accept_jupyter_token = Bool(
        True,
        config=True,
        help="Accept the person's own Jupyter token at /mcp (set-ups made before agent tokens). False: "
        "agents must use an agent token of their own (`jupyter mcp token create`, or OAuth).",
    )
    oauth = Bool(
        True,
        config=True,
        help="Serve OAuth 2.1 for agents (MCP's authorization spec): agent hosts that support it sign in "
        "through the browser, and the person allows them on a page of this server. False: discovery "
        "answers 404 and agents use tokens only.",
    )
    access_token_lifetime = Float(
        3600.0, config=True, help="Seconds an OAuth access token of an agent is valid (then it refreshes)."
    )
    refresh_token_lifetime = Float(
        30 * 24 * 3600.0,
        config=True,
        help="Seconds an OAuth refresh token of an agent is valid; past it the person consents again.",
    )

    oauth_client_documents = Enum(
        ["https", "https+loopback", "off"],
        "https",
        config=True,
        help="Client ID metadata documents (an OAuth client whose client_id is the https URL of its "
        "description, fetched with size, time and address bounds): 'https', 'off', or "
        "'https+loopback' (also http://127.0.0.1 and localhost; for tests, never for a shared server). "
        "A document this server cannot reach (no internet) lets its client sign in unverified, as a "
        "registered one, if its answer goes to a loopback address; elsewhere it is refused.",
    )

    def _agents_path(self) -> Path:
        """The credentials database: one for every server of this data folder (rows say whose)."""
        if self.agents_file:
            path = Path(self.agents_file)
            return path.with_suffix(".sqlite") if path.suffix == ".json" else path
        return Path(jupyter_data_dir()) / "jupyter_mcp_ext" / "agents.sqlite"

    def _legacy_agents_path(self) -> Path:
        """The JSON file older versions kept per base_url (its records are adopted once)."""
        if self.agents_file and Path(self.agents_file).suffix == ".json":
            return Path(self.agents_file)
        base = self.serverapp.base_url if self.serverapp is not None else "/"
        name = (
            "agents.json" if base == "/" else f"agents-{hashlib.sha256(base.encode()).hexdigest()[:8]}.json"
        )
        return Path(jupyter_data_dir()) / "jupyter_mcp_ext" / name

    def _server_identity(self) -> str:
        """Who issued a credential: the root folder and base_url, not the port (a restart on another
        port keeps its agents; two servers of one person on different folders never share them)."""
        assert self.serverapp is not None
        where = f"{Path(self.serverapp.root_dir).resolve()}|{self.serverapp.base_url}"
        return hashlib.sha256(where.encode()).hexdigest()[:16]

    def _journal_path(self) -> Path | None:
        if self.journal_file is None:
            return None
        if self.journal_file:
            return Path(self.journal_file)
        assert self.serverapp is not None
        where = f"{Path(self.serverapp.root_dir).resolve()}|{self.serverapp.base_url}"
        name = f"journal-{hashlib.sha256(where.encode()).hexdigest()[:8]}.sqlite"
        return Path(jupyter_data_dir()) / "jupyter_mcp_ext" / name

    @classmethod
    def setting_names(cls) -> list[str]:
        return list(MCPSettings.class_own_traits(config=True))
