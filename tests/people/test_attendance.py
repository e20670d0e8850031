"""Who counts as a person on the server, for the loop gate (``people/attendance.py``)."""

from __future__ import annotations

import httpx

from ..support.mcp_client import RAW_HEADERS, raw_session


def attendance_of(jp_serverapp):
    (app,) = jp_serverapp.extension_manager.extension_apps["jupyter_mcp_ext"]
    return app.attendance


async def test_a_health_probe_is_nobody_but_a_file_browser_request_is_a_person(
    jp_serverapp, server_url, jp_fetch
):
    """A load balancer or a script waiting for the server asks `/api` and `/api/status`: agents keep
    the whole loop. JupyterLab's file browser listing a folder is a person, and agents make way."""
    attendance = attendance_of(jp_serverapp)
    await jp_fetch("api")
    await jp_fetch("api", "status")
    assert not attendance.person_here(), "a health probe made the gate hold agents back"
    await jp_fetch("api", "contents")
    assert attendance.person_here(), "a person's request did not count"


async def test_a_person_waits_while_a_request_of_theirs_is_served_and_never_for_an_agent(
    jp_serverapp, server_url, jp_auth_header, jp_fetch, slow_request
):
    """The gate holds agents to their smaller share exactly while a person's request is in flight:
    from its start to its end, whatever else happens; an agent's MCP calls and health probes are no
    person waiting."""
    attendance = attendance_of(jp_serverapp)
    seen: list[bool] = []
    told = attendance.on_wait
    attendance.on_wait = lambda waiting: (seen.append(waiting), told(waiting))
    await jp_fetch("api")
    await jp_fetch("api", "status")
    async with httpx.AsyncClient(headers={**jp_auth_header, **RAW_HEADERS}, timeout=30) as http:
        session = await raw_session(http, f"{server_url}mcp")
        pong = await http.post(
            f"{server_url}mcp", headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}
        )
        assert pong.status_code == 200
    assert seen == [] and not attendance.waiting, (
        "an agent's call or a health probe counted as a person waiting"
    )
    async with slow_request():
        assert attendance.waiting and seen == [True], "a person's request being served was not seen"
        await jp_fetch("api", "contents")  # a second request of theirs, begun and ended meanwhile
        assert attendance.waiting and seen == [True], (
            "the person stopped waiting while a request was in flight"
        )
    assert not attendance.waiting and seen == [True, False], "the person still waits after the request ended"
    await jp_fetch("api", "contents")
    assert seen == [True, False, True, False]
