"""What a cell's outputs become as kernel messages arrive (no server needed)."""

from __future__ import annotations

import json

from jupyter_mcp_ext.kernels.messages import content_of
from jupyter_mcp_ext.kernels.output_model import OutputModel, fold_line


def feed(model: OutputModel, *messages: tuple[str, dict]) -> list:
    ops = []
    for msg_type, content in messages:
        ops += model.apply(msg_type, content)
    return ops


def out(text: str, name: str = "stdout") -> tuple[str, dict]:
    return "stream", {"name": name, "text": text}


def test_streams_merge_by_name_and_fold_like_a_terminal():
    model = OutputModel(10_000)
    feed(
        model, out("a\rb\n"), out("10%"), out("\r50%"), out("\r100%\n"), out("oops", "stderr"), out("more\n")
    )
    assert [(o["name"], o["text"]) for o in model.outputs] == [
        ("stdout", "b\n100%\n"),
        ("stderr", "oops"),
        ("stdout", "more\n"),
    ]
    assert fold_line("abc\b\bX") == "aXc"  # backspace moves the cursor, as in a terminal
    assert fold_line("progress 99%\rdone") == "doneress 99%"


def test_stream_edits_are_splices_of_the_last_line():
    model = OutputModel(10_000)
    ops = feed(model, out("10%"), out("\r20%"), out("\r30%\nnext"))
    assert ops[0][0] == "append"
    assert ops[1:] == [("text", 0, "10%", "20%"), ("text", 0, "20%", "30%\nnext")]


def test_clear_output_wait_clears_at_the_next_output():
    model = OutputModel(10_000)
    feed(model, out("first\n"), ("clear_output", {"wait": True}))
    assert model.outputs[0]["text"] == "first\n"  # still shown until something replaces it
    ops = feed(model, out("second\n"))
    assert ops[0] == ("clear",) and [o["text"] for o in model.outputs] == ["second\n"]
    feed(model, ("clear_output", {"wait": False}))
    assert model.outputs == []


def test_update_display_data_rewrites_outputs_with_that_display_id():
    model = OutputModel(10_000)
    display = {"data": {"text/plain": "0%"}, "metadata": {}, "transient": {"display_id": "bar"}}
    feed(model, ("display_data", display), out("log\n"))
    ops = feed(model, ("update_display_data", {**display, "data": {"text/plain": "100%"}}))
    assert ops == [
        ("replace", 0, {"output_type": "display_data", "data": {"text/plain": "100%"}, "metadata": {}})
    ]
    assert model.outputs[0]["data"] == {"text/plain": "100%"}


def test_the_cap_keeps_the_head_and_says_so_once():
    model = OutputModel(100)
    feed(model, out("x" * 60), out("y" * 60), out("z" * 60))
    texts = [o["text"] for o in model.outputs]
    assert texts[0] == "x" * 60 + "y" * 40
    assert "Output limit reached" in texts[1] and len(texts) == 2
    assert model.dropped_bytes == 20 + 60


def test_errors_and_results_keep_their_fields():
    model = OutputModel(10_000)
    feed(
        model,
        ("execute_result", {"data": {"text/plain": "42"}, "metadata": {}, "execution_count": 3}),
        ("error", {"ename": "ValueError", "evalue": "bad", "traceback": ["line 1", "line 2"]}),
    )
    assert model.outputs[0]["execution_count"] == 3
    assert model.outputs[1] == {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "bad",
        "traceback": ["line 1", "line 2"],
    }


def test_a_huge_stream_message_is_decoded_only_as_far_as_it_is_kept():
    keep = 100_000
    cases = [
        ('é"\\\n' * 500_000 + "tail", False),  # escapes and a two-byte character, cut anywhere
        ("€😀ab" * 300_000, False),  # three- and four-byte characters sent as they are
        ("€😀ab" * 300_000, True),  # the same as \u escapes, a surrogate pair cut in half
        ("x" * 3_000_000, False),  # plain text: decoded straight from the frame
        ("\\" * 3_000_000, False),  # one long run of escaped backslashes, cut inside it
        ("a" + "\\" * 3_000_000, False),  # the same, cut at the other parity
    ]
    for text, ascii_only in cases:
        for order in ({"name": "stdout", "text": text}, {"text": text, "name": "stdout"}):
            raw = json.dumps(order, ensure_ascii=ascii_only).encode()
            content = content_of("stream", raw, keep)
            kept = content["text"]
            assert content["name"] == "stdout" and text.startswith(kept)
            encoded = len(json.dumps(kept, ensure_ascii=ascii_only).encode()) - 2
            assert keep - 12 <= encoded <= keep and content["omitted"] > 0
    small = json.dumps({"name": "stderr", "text": "short"}).encode()
    assert content_of("stream", small, keep) == {"name": "stderr", "text": "short"}
