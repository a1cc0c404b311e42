"""The bundle's anchored member drafts its run references (jocr.engine.reference_lookup): on a frozen vector
page, the tokens are exactly plain decoding's, several a verifier pass."""

from __future__ import annotations

from pathlib import Path

import jocr
from jocr.pipeline import load_model

ROOT = Path(__file__).resolve().parents[2]
PAGE = sorted((ROOT / "data" / "frozen-test" / "vector" / "pdfs").glob("*.pdf"))[0]
MAX_TOKENS = 160


def test_the_anchored_member_drafts_references_exactly_as_greedy():
    bundle = load_model(ROOT / "models")
    member = bundle.anchored
    assert member.reads_anchors and not bundle.reads_anchors
    assert member.engine("auto").config.drafter == "refs"  # the lookup alone: the head is not run
    assert bundle.engine("auto").config.drafter == "mtp"  # the image model keeps its head
    plain = jocr.parse(PAGE, model=bundle, spec=0, max_tokens=MAX_TOKENS)
    drafted = jocr.parse(PAGE, model=bundle, spec=7, max_tokens=MAX_TOKENS)
    assert plain.pages[0].anchor.anchored and drafted.pages[0].anchor.anchored
    assert [p.raw for p in drafted.pages] == [p.raw for p in plain.pages]
    assert drafted.markdown == plain.markdown
    # Measured 4.05 tokens per verifier pass with the lookup alone (4.21 with the head drafting the rows the
    # lookup cannot, at the cost of its catch-up over every prompt; the head alone: about 1.3-1.4 on such
    # pages, docs/engine.md).
    assert member.engine(7).stats.tau >= 4.0
