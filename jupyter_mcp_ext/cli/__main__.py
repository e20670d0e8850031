"""``python -m jupyter_mcp_ext.cli``: the same as ``jupyter mcp``."""

import sys

from .commands import main

sys.exit(main())
