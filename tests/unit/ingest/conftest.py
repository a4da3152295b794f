"""Make ``tests.builders`` / ``tests.corpus`` importable when pytest is run without ``python -m``."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
