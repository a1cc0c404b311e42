"""The third held-out question set (data/frozen-real-qa3) is well formed: every question names an existing
page with its scanned and photographed copies, its first answer is printed in that page's text layer, the
pages are none of the earlier question sets' pages, the mix of languages and page kinds is the one its
README states, and the questions can fail (an unrelated answer scores nothing)."""

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium

from jocr.checks.qa import anls_one

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = DATA / "frozen-real-qa3"
SOURCE = re.compile(r"\| (/usr/share/\S+\.pdf) \(([\d, ]+)\) \|")


def _questions() -> list[dict]:
    lines = (ROOT / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _page_text(name: str) -> str:
    pdf = pdfium.PdfDocument(ROOT / name)
    try:
        assert len(pdf) == 1, name
        return pdf[0].get_textpage().get_text_range()
    finally:
        pdf.close()


def _sources(folder: Path) -> set[tuple[str, int]]:
    """(document, page) pairs of a question set's README source table."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    return {(path, int(page)) for path, pages in SOURCE.findall(text) for page in pages.split(",")}


def test_every_question_names_a_page_and_its_copies():
    for q in _questions():
        assert set(q) == {"file", "lang", "page_kind", "question", "answers"}, q
        assert q["lang"] in ("en", "zh") and q["page_kind"] in ("title", "body"), q
        assert q["question"].strip() and q["answers"] and all(a.strip() for a in q["answers"]), q
        stem = Path(q["file"]).stem
        for path in (ROOT / q["file"], ROOT / "scan" / f"{stem}.jpg", ROOT / "photo" / f"{stem}.jpg"):
            assert path.is_file(), path


def test_every_first_answer_is_in_its_page_text_layer():
    texts: dict[str, str] = {}
    for q in _questions():
        text = texts.setdefault(q["file"], re.sub(r"\s+", "", _page_text(q["file"])))
        assert re.sub(r"\s+", "", q["answers"][0]) in text, (q["file"], q["answers"][0])


def test_mix_of_languages_and_page_kinds():
    questions = _questions()
    pages = {q["file"] for q in questions}
    assert 40 <= len(questions) <= 50 and 14 <= len(pages) <= 16
    assert len({q["question"] for q in questions}) == len(questions)
    langs = Counter(q["lang"] for q in questions)
    assert 0.35 <= langs["zh"] / len(questions) <= 0.45
    kinds = Counter(q["page_kind"] for q in questions)
    assert 0.25 <= kinds["title"] / len(questions) <= 0.45
    for page in pages:  # one kind and one language per page
        assert len({(q["lang"], q["page_kind"]) for q in questions if q["file"] == page}) == 1, page


def test_pages_have_a_source_and_are_not_earlier_sets_pages():
    ours = _sources(ROOT)
    assert len(ours) == len({q["file"] for q in _questions()})
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in {q["file"] for q in _questions()}:
        assert f"| {name}" in readme or f", {name}" in readme, name
    for earlier in ("frozen-real-qa", "frozen-real-qa2"):
        theirs = _sources(DATA / earlier)
        assert theirs and ours.isdisjoint(theirs), earlier


def test_an_unrelated_answer_scores_nothing():
    for q in _questions():
        assert anls_one("Nothing of the page.", q["answers"]) == 0.0, q["question"]
        assert anls_one(q["answers"][0], q["answers"]) == 1.0, q["question"]


def test_benchmark_scores_title_and_body_pages_apart():
    sys.path.insert(0, str(DATA.parent / "benchmarks"))
    import qa

    docs = qa.load_set(ROOT, "scan")
    assert all(doc["file"].suffix == ".jpg" for doc in docs)
    gold = [[q["answers"][0] for q in doc["questions"]] for doc in docs]
    wrong = [["" if doc["kind"] == "title" else q["answers"][0] for q in doc["questions"]] for doc in docs]
    kinds = Counter(q["page_kind"] for q in _questions())
    result = qa.scores(docs, gold, [None] * len(docs))
    assert result["all"] == {"questions": len(_questions()), "anls": 1.0, "exact_match": 1.0}
    assert result["doc:title"]["questions"] == kinds["title"]
    assert result["doc:body"]["questions"] == kinds["body"]
    result = qa.scores(docs, wrong, [None] * len(docs))
    assert result["doc:title"]["anls"] == 0.0 and result["doc:body"]["anls"] == 1.0
