"""What a person and an agent see of a run, checked alike for local kernels and a gateway's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.client import Client

from .mcp_client import connect, ok
from .yclient import YPeer


async def start_sleeper(agent: Client, path: str, seconds: int = 30, timeout: float = 0.5) -> dict[str, Any]:
    """A new cell that sleeps, run past the call's timeout: the call returns while it runs."""
    return await ok(
        agent, "insert_and_execute", path=path, source=f"import time\ntime.sleep({seconds})", timeout=timeout
    )


async def idle_cell(person: YPeer, cell_id: str) -> Any:
    """The person's copy of the cell, once its run's end has reached them.

    Call it once the run has ended on the server (its call or ``get_execution`` said so). Waiting for
    "idle" alone is not enough: a new code cell is "idle" from its creation, before the run's first
    write, so a person still behind would pass with no outputs. ``flush`` returns once the person has
    everything the server had when it answered, the run's last write included.
    """
    await person.flush(timeout=60)
    (cell,) = [c for c in person.notebook.ycells if c["id"] == cell_id]
    assert cell.get("execution_state") == "idle", cell.get("execution_state")
    return cell


async def restart_mid_run_leaves_the_cell_idle_with_an_error(agent: Client, person: YPeer, path: str) -> None:
    await ok(agent, "execute_code", path=path, code="kept = 1")
    running = await start_sleeper(agent, path)
    await ok(agent, "restart_kernel", path=path)
    ended = await ok(agent, "get_execution", execution_id=running["execution_id"], wait=20)
    assert ended["status"] == "died" and "restarted" in ended["error"]["evalue"]
    cell = await idle_cell(person, running["cell_id"])
    # A restart interrupts first; the cell ends saying the kernel restarted.
    assert [o["ename"] for o in cell["outputs"] if o.get("output_type") == "error"][-1] == "KernelDied"
    gone = await ok(agent, "execute_code", path=path, code="'kept' in globals()")
    assert gone["status"] == "ok" and gone["cells"][0]["outputs"][0]["text"] == "False"


SLOW_KERNEL = "slowstart"  # a kernel that answers 3 s after it started (a heavy environment, a remote pod)
SLOW_START = (
    "import time; time.sleep(3); from ipykernel.kernelapp import launch_new_instance; launch_new_instance()"
)


def write_slow_kernelspec(kernels: Path) -> None:
    """The ``SLOW_KERNEL`` kernelspec in the ``kernels`` folder of a Jupyter data or share folder."""
    spec = kernels / SLOW_KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", SLOW_START, "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Slow", "language": "python"})
    )


async def first_run_on_the_slow_kernel(server_url: str, auth: dict[str, str], make_notebook: Any) -> None:
    """The agent's first run in a notebook of ``SLOW_KERNEL`` gets its result: a kernel slower to answer
    than the idle timeout is starting, not idle."""
    meta = {"kernelspec": {"name": SLOW_KERNEL, "display_name": "Slow", "language": "python"}}
    path = make_notebook("slow.ipynb", metadata=meta)
    async with connect(server_url, auth) as agent:
        result = await ok(agent, "execute_code", path=path, code="6 * 7", timeout=60)
        assert result["status"] == "ok", result
        assert result["cells"][0]["outputs"][0]["text"] == "42"
