"""Carets in shared cells, as the browser writes and reads them (yjs relative positions)."""

from __future__ import annotations

from pycrdt import Array, Assoc, Doc, Map, StickyIndex, Text

from jupyter_mcp_ext.agents.cursors import caret_at_end, cell_of, relative


def notebook(*sources: str) -> tuple[Doc, list[Text]]:
    doc = Doc()
    cells = doc.get("cells", type=Array)
    with doc.transaction():
        for i, source in enumerate(sources):
            cells.append(Map({"id": f"c{i}", "source": Text(source), "metadata": Map()}))
    return doc, [cells[i]["source"] for i in range(len(sources))]


def test_the_agents_caret_sits_after_the_last_character_counted_in_utf16() -> None:
    _doc, (emoji, empty) = notebook("s = 'é😀'", "")
    (cursor,) = caret_at_end(emoji)
    head = cursor["head"]
    assert set(head) == {"type", "tname", "item", "assoc"} and head["item"] is not None
    assert StickyIndex.from_json(head, emoji).get_index() == 9  # 8 characters, the emoji is 2 units
    # An empty cell has no character: the caret sticks to the text itself.
    (cursor,) = caret_at_end(empty)
    assert cursor["head"]["type"] is not None and cursor["head"]["item"] is None
    assert StickyIndex.from_json(cursor["head"], empty).get_index() == 0


def test_a_persons_caret_is_found_in_its_cell_wherever_it_sticks() -> None:
    doc, texts = notebook("a = 1", "s = 'é😀 x'", "", "b")
    for index, text in enumerate(texts):
        length = len(str(text).encode("utf-16-le")) // 2
        for at in range(length + 1):
            if at < length:
                assert cell_of(relative(text, at, Assoc.AFTER), doc) == f"c{index}"
            if at > 0:
                assert cell_of(relative(text, at, Assoc.BEFORE), doc) == f"c{index}"
        # yjs writes a caret at the very end as the text itself with assoc 0.
        end = {**relative(text, 0, Assoc.BEFORE), "assoc": 0}
        assert cell_of(end, doc) == f"c{index}"
    # Tried first when given, and right or not, the answer is the same.
    position = relative(texts[1], 3, Assoc.AFTER)
    assert cell_of(position, doc, ("c0", texts[0])) == "c1" == cell_of(position, doc, ("c1", texts[1]))


def test_a_caret_the_document_does_not_know_is_no_cell_and_no_crash() -> None:
    doc, _ = notebook("a = 1")
    unknown = {"type": None, "tname": None, "item": {"client": 12345, "clock": 99}, "assoc": 0}
    assert cell_of(unknown, doc) is None
    assert cell_of({"item": {"client": doc.client_id, "clock": 10_000}}, doc) is None
    assert (
        cell_of({"item": "garbage"}, doc) is None and cell_of(None, doc) is None and cell_of({}, doc) is None
    )
