"""Prompts give an agent a good start on a notebook: the task, and the outline with the cell ids."""

from __future__ import annotations

import nbformat
import pytest
from mcp.shared.exceptions import MCPError

from ..support.mcp_client import connect, ok

ERROR_OUTPUT = nbformat.v4.new_output(
    "error",
    ename="NameError",
    evalue="name 'df' is not defined",
    traceback=["NameError: name 'df' is not defined"],
)


async def test_prompts_embed_the_notebook_outline_with_its_cell_ids(
    server_url, jp_auth_header, make_notebook
):
    path = make_notebook(
        "work/report.ipynb",
        cells=[
            {"cell_type": "markdown", "id": "title", "source": "# Report"},
            {"id": "broken", "source": "df.head()", "execution_count": 1, "outputs": [ERROR_OUTPUT]},
        ],
    )
    async with connect(server_url, jp_auth_header) as agent:
        listed = (await agent.list_prompts()).prompts
        assert [p.name for p in listed] == ["explain_notebook", "fix_failing_cell", "clean_run"]
        assert all(p.arguments[0].name == "path" and p.arguments[0].required for p in listed)

        outline = await agent.call_tool("get_notebook", {"path": path})
        for prompt in listed:
            result = await agent.get_prompt(prompt.name, {"path": path})
            text = result.messages[0].content.text
            assert result.messages[0].role == "user"
            assert outline.content[0].text in text  # the outline exactly as get_notebook gives it
            assert "broken" in text and "NameError" in text
        fix = (await agent.get_prompt("fix_failing_cell", {"path": path})).messages[0].content.text
        assert fix.startswith("Find the first cell whose outputs show an error")


async def test_a_prompt_for_a_missing_notebook_or_without_a_path_is_refused(
    server_url, jp_auth_header, make_notebook
):
    make_notebook("here.ipynb")
    async with connect(server_url, jp_auth_header) as agent:
        with pytest.raises(MCPError, match=r"No notebook at 'gone\.ipynb'"):
            await agent.get_prompt("explain_notebook", {"path": "gone.ipynb"})
        with pytest.raises(MCPError, match="needs the argument 'path'"):
            await agent.get_prompt("explain_notebook", {})
        with pytest.raises(MCPError, match="Unknown prompt"):
            await agent.get_prompt("write_my_thesis", {"path": "here.ipynb"})
        with pytest.raises(MCPError, match=r"outside|'\.\.'"):
            await agent.get_prompt("clean_run", {"path": "../here.ipynb"})
        assert (await ok(agent, "list_notebooks"))["notebooks"][0]["path"] == "here.ipynb"
