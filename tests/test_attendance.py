"""Who counts as a person on the server, for the loop gate (``people/attendance.py``)."""

from __future__ import annotations


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
