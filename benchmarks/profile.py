"""Summarise a py-spy raw profile (``--profile DIR`` writes one per scenario group): where the server's CPU went.

``python -m benchmarks.profile DIR/editing.txt [--top 25] [--only jupyter_mcp_ext]``
prints, per function (``name (file:line)`` of its definition as py-spy reports it), the share of
samples in which it is on the stack (total) and on top of it (self).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def frames(stack: str) -> list[str]:
    return [f for f in stack.split(";") if f]


def short(frame: str) -> str:
    """``func (path/to/site-packages/pkg/mod.py:12)`` -> ``func (pkg/mod.py:12)``."""
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "lib/python3.":
                path = "stdlib/" + path.split("/", 1)[1]
            break
    line = f":{match['line']}" if match["line"] else ""
    return f"{match['name']} ({path}{line})"


def summarise(raw: Path, top: int = 25, only: str | None = None) -> str:
    total: Counter[str] = Counter()
    own: Counter[str] = Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        samples += n
        names = [short(f) for f in frames(stack)]
        # Lines differ within a function: aggregate by function (file of definition, first line seen).
        for name in set(re.sub(r":\d+\)$", ")", x) for x in names):
            total[name] += n
        own[re.sub(r":\d+\)$", ")", names[-1])] += n if names else 0
    out = [f"{raw.name}: {samples} samples"]
    for title, counter in (("total (on the stack)", total), ("self (on top)", own)):
        out.append(f"  {title}:")
        shown = 0
        for name, n in counter.most_common():
            if only and only not in name:
                continue
            out.append(f"    {100 * n / max(1, samples):5.1f}%  {name}")
            shown += 1
            if shown >= top:
                break
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--only", help="keep functions whose name or file contains this")
    args = parser.parse_args()
    for raw in args.files:
        print(summarise(raw, args.top, args.only))


if __name__ == "__main__":
    main()
