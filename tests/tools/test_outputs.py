"""Outputs as an agent reads them: text without terminal codes, bounded, every cut said out loud,
images as image content; and the outline's one line per cell."""

from __future__ import annotations

import base64
import struct
import zlib

import nbformat

from jupyter_mcp_ext.limits import Limits
from jupyter_mcp_ext.tools import outputs

from ..support.mcp_client import connect, ok


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG, built by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = base64.b64encode(tiny_png()).decode()


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def image(data: str = PNG) -> dict:
    return {
        "output_type": "display_data",
        "data": {"image/png": data, "text/plain": "<Figure size 640x480 with 1 Axes>"},
        "metadata": {},
    }


def error(evalue: str = "division by zero") -> dict:
    return {
        "output_type": "error",
        "ename": "ZeroDivisionError",
        "evalue": evalue,
        "traceback": [
            "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
            "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
            "Cell \x1b[0;32mIn[1], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m\n",
            f"\x1b[0;31mZeroDivisionError\x1b[0m: {evalue}",
        ],
    }


# -- unit tests of outputs.py ---------------------------------------------------------------


def test_terminal_codes_are_stripped():
    colours = "\x1b[1;31mError\x1b[0m and \x1b[38;5;241mgrey\x1b[39m"
    title = "\x1b]0;window title\x07done"
    link = "see \x1b]8;;https://example.org\x1b\\the docs\x1b]8;;\x1b\\ here"
    assert outputs.strip_ansi(colours) == "Error and grey"
    assert outputs.strip_ansi(title) == "done"
    assert outputs.strip_ansi(link) == "see the docs here"


def test_progress_bars_show_only_what_the_notebook_shows():
    # tqdm redraws a line with carriage returns; JupyterLab shows the last state of each line.
    bar = "\r  0%|          | 0/3\r 33%|###       | 1/3\r100%|##########| 3/3\nDone\r\n"
    text, _ = outputs.render(stream(bar, "stderr"), outputs.Budget(Limits()))
    assert text == "100%|##########| 3/3\nDone\n"
    assert outputs.render(stream("abcdef\rXY"), outputs.Budget(Limits()))[0] == "XYcdef"


def test_long_output_is_cut_in_the_middle_with_the_count():
    budget = outputs.Budget(Limits(max_output_chars=300))
    text, form = outputs.render(stream("".join(f"line {i:04}\n" for i in range(100))), budget)
    assert text.startswith("line 0000\n") and text.endswith("line 0099\n")  # head and tail kept
    assert "[… 700 characters cut …]" in text
    assert form["text"] == text
    assert budget.chars_cut == 700
    assert budget.truncation() == {"chars_cut": 700}
    assert budget.notes() == ["700 characters of output cut"]


def test_result_stays_within_its_byte_budget_and_says_what_was_left_out():
    budget = outputs.Budget(Limits(max_result_bytes=1000, max_output_chars=10_000))
    texts = [outputs.render(stream("x" * 600), budget)[0] for _ in range(3)]
    assert texts[0] == "x" * 600
    assert "characters cut" in texts[1]
    assert texts[2] == "[output omitted: result size limit reached]"
    assert budget.used <= 1000
    assert budget.truncation()["outputs_omitted"] == 1
    assert "1 outputs omitted (result size limit)" in budget.notes()


def test_byte_budget_counts_bytes_not_characters():
    budget = outputs.Budget(Limits(max_result_bytes=400, max_output_chars=10_000))
    text, _ = outputs.render(stream("😀" * 200), budget)  # 800 bytes in 200 characters
    assert len(text.encode()) <= 400 and budget.used <= 400
    assert "characters cut" in text and text.startswith("😀")
    assert budget.chars_cut > 0


def test_images_beyond_the_limit_are_counted_not_sent():
    budget = outputs.Budget(Limits(max_images=2))
    texts = [outputs.render(image(), budget)[0] for _ in range(3)]
    assert texts == ["[image/png image 0]", "[image/png image 1]", "[image/png image omitted]"]
    assert budget.images == [("image/png", PNG), ("image/png", PNG)]
    assert budget.truncation() == {"images_omitted": 1}
    assert any("1 images omitted" in note and "2" in note for note in budget.notes())


def test_image_too_big_for_the_result_is_counted_with_the_right_reason():
    budget = outputs.Budget(Limits(max_result_bytes=len(PNG) + 10, max_images=4))
    outputs.render(image(), budget)
    assert outputs.render(image(), budget)[0] == "[image/png image omitted]"
    assert [note for note in budget.notes() if "images omitted" in note] == [
        "1 images omitted (at most 4 images and " + f"{len(PNG) + 10:,}" + " bytes per result)"
    ]


def test_image_base64_split_over_lines_is_sent_as_one_string():
    budget = outputs.Budget(Limits())
    outputs.render(image(data="\n".join([PNG[:20], PNG[20:]]) + "\n"), budget)
    assert budget.images == [("image/png", PNG)]


def test_error_shows_its_traceback_as_plain_text():
    text, form = outputs.render(error(), outputs.Budget(Limits()))
    assert "\x1b" not in text
    assert "----> 1 1/0" in text and text.endswith("ZeroDivisionError: division by zero")
    assert form["ename"] == "ZeroDivisionError" and form["evalue"] == "division by zero"
    without_trace = {**error(), "traceback": []}
    assert outputs.render(without_trace, outputs.Budget(Limits()))[0] == "ZeroDivisionError: division by zero"


def test_outline_is_one_line_per_cell():
    line = outputs.outline([stream("a\nb\n"), image(), error(), stream("x"), stream("y")])
    assert "\n" not in line
    assert line == "stdout: 2 lines; image/png; error: ZeroDivisionError: division by zero; +2 more"
    assert outputs.outline([]) == ""
    result = {"output_type": "execute_result", "data": {"text/plain": "\x1b[1m42\x1b[0m\nmore"}}
    assert outputs.outline([result]) == "result: 42"


# -- through the server ---------------------------------------------------------------------


async def test_agent_reads_outputs_as_text_and_images_and_sees_the_outline(
    server_url, jp_auth_header, make_notebook
):
    long_text = "".join(f"row {i:05}\n" for i in range(2000))  # 20,000 characters
    path = make_notebook(
        "outputs.ipynb",
        cells=[
            {
                "source": "print(colourful)",
                "outputs": [nbformat.v4.new_output("stream", text="\x1b[32mgreen\x1b[0m text\n")],
                "execution_count": 1,
            },
            {"source": "print(many_rows)", "outputs": [nbformat.from_dict(stream(long_text))]},
            {"source": "plot()", "outputs": [nbformat.from_dict(image())]},
            {"source": "1/0", "outputs": [nbformat.from_dict(error())], "execution_count": 4},
            {"cell_type": "markdown", "source": "# No outputs here"},
        ],
    )
    async with connect(server_url, jp_auth_header) as agent:
        result = await agent.call_tool("read_cells", {"path": path})
        assert not result.is_error
        images = [block for block in result.content if block.type == "image"]
        assert [(i.mime_type, i.data) for i in images] == [("image/png", PNG)]
        text = "\n".join(block.text for block in result.content if block.type == "text")
        assert "\x1b" not in text
        assert "green text" in text
        assert "row 00000" in text and "row 01999" in text
        assert "characters cut" in text and "read fewer cells" in text  # what was cut, and what to do
        assert "ZeroDivisionError: division by zero" in text
        cells = result.structured_content["cells"]
        assert cells[0]["outputs"] == [{"type": "stream", "name": "stdout", "text": "green text\n"}]
        assert cells[2]["outputs"][0]["image"] == 0
        assert result.structured_content["truncated"]["chars_cut"] == len(long_text) - 8000
        assert "outputs" not in cells[4]

        without = await ok(agent, "read_cells", path=path, include_outputs=False)
        assert all("outputs" not in c for c in without["cells"])

        outline = await agent.call_tool("get_notebook", {"path": path})
        lines = outline.content[0].text.splitlines()[1:]
        assert len(lines) == 5
        assert lines[0].endswith("→ stdout: 1 lines")
        assert lines[1].endswith("→ stdout: 2000 lines")
        assert lines[2].endswith("→ image/png")
        assert lines[3].endswith("→ error: ZeroDivisionError: division by zero")
        assert "→" not in lines[4]
        summaries = [c["outputs"] for c in outline.structured_content["cells"]]
        assert summaries[2] == "image/png" and summaries[4] == ""


def test_source_too_big_for_the_result_is_cut_at_whole_characters_and_said():
    budget = outputs.Budget(Limits(max_result_bytes=101))
    text = budget.take_text_whole("é" * 100)  # 200 bytes
    assert text.startswith("é" * 50 + "\n[… 50 characters of source cut: read this cell alone …]")
    assert budget.chars_cut == 50
