"""The tests' JupyterLab-like Yjs client, reused as is to see when an edit reaches a tab."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.support.yclient import YPeer  # noqa: E402

__all__ = ["YPeer"]
