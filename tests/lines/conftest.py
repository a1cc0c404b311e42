"""The PDF fixtures (tests/documents/pdf_fixtures.py, layer_fixtures.py) are shared with tests/documents."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "documents"))
