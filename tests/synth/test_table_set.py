"""The frozen table set (jocr.synth.tables): every committed PDF is the one its manifest names, has a
usable text layer, and its ground truth is a well-formed table with the style's rules."""

import hashlib
import json
from pathlib import Path

from jocr.checks.teds import table_tree
from jocr.documents.pages import LoadOptions, open_source
from jocr.synth.tables import STYLES, TABLE_SET_VERSION

TABLE_SET = Path(__file__).resolve().parents[2] / "data/frozen-test/tables"


def test_manifest_matches_the_committed_pages():
    summary = json.loads((TABLE_SET / "manifest.json").read_text())
    assert summary["version"] == TABLE_SET_VERSION and summary["count"] == 40
    rows = [json.loads(line) for line in (TABLE_SET / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 40 and {r["style"] for r in rows} == set(STYLES)
    for row in rows:
        data = (TABLE_SET / row["pdf"]).read_bytes()
        assert hashlib.sha256(data).hexdigest()[:16] == row["sha256"]
        assert table_tree(row["html"]) is not None
        x0, y0, x1, y1 = row["region"]
        assert 0 <= x0 < x1 <= 612 and 0 <= y0 < y1 <= 792


def test_pages_have_a_usable_text_layer_holding_the_cells():
    row = json.loads((TABLE_SET / "manifest.jsonl").read_text().splitlines()[5])
    with open_source(str(TABLE_SET / row["pdf"]), LoadOptions()) as source:
        layer = source.text_layer(0)
    assert layer.usable
    first_cell = row["html"].split(">")[3].split("<")[0]
    assert first_cell in layer.text
