"""Asking a page: the question's prompt ids (the DeepSeek-OCR free-form prompt form, the anchor as parse
builds it), `jocr ask` / `jocr extract` end to end with tiny random checkpoints (garbage answers, real
pipeline), run references and boxes with a scripted engine, and the schema checks' one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fake_engine import FixedAnswerEngine, save_model
from layer_fixtures import PROSE, layer_pdf, lines_content, plain_pdf
from pdf_fixtures import image_bytes, text_pdf
from tokenizers import AddedToken, models, pre_tokenizers
from tokenizers import Tokenizer as HFTokenizer

from jocr.cli import main
from jocr.config import OCRConfig
from jocr.documents.pages import open_source
from jocr.layout.request import PageRequestBuilder
from jocr.lines.anchor import ANCHOR_VERSION
from jocr.lines.references import anchor_runs
from jocr.lines.source import page_lines
from jocr.pipeline import AskError, ask, extract, load_model
from jocr.pipeline.ask import (
    MAX_FIELDS,
    AskConfig,
    FieldSpec,
    answer_span,
    extract_prompt,
    parse_schema,
    question_anchor,
    question_ids,
    read_fields_answer,
)
from jocr.pipeline.model import ANCHORED_MEMBER
from jocr.tokenizer import ANCHOR_CLOSE, ANCHOR_OPEN, SPECIAL_TOKENS, Tokenizer

QUESTION = "What is the total amount?"


def published_layout_tokenizer() -> Tokenizer:
    """A tokenizer laid out like the published DeepSeek-OCR one: bytes first, the specials after them."""
    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    hf = HFTokenizer(models.BPE(vocab=vocab, merges=[]))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.add_special_tokens([AddedToken(t, special=True) for t in reversed(SPECIAL_TOKENS)])
    return Tokenizer(hf)


def test_question_prompt_is_the_free_form_template():
    """DeepSeek-OCR documents free-form prompts as "<image>\\n" + text (plain template, BOS added): the
    question's ids are exactly that conversation's, split at <image>, with the published layout's ids."""
    tok = published_layout_tokenizer()
    assert tok.bos_id > 255 and tok.image_id > 255
    builder = PageRequestBuilder(tok, OCRConfig.preset("tiny").vision)
    conversation = "<image>\n" + QUESTION
    before, after = conversation.split("<image>")
    reference = [tok.bos_id] + tok.encode(before) + [tok.image_id] * 7 + tok.encode(after)
    assert question_ids(builder, 7, "  " + QUESTION + "\n", None) == reference
    # an anchored model gets the anchor after the question, as parse gives it after the OCR prompt
    anchored = question_ids(builder, 7, QUESTION, "page 612x792\n@1 72,60 Total: $5.00")
    assert anchored == reference + tok.encode(
        ANCHOR_OPEN + "page 612x792\n@1 72,60 Total: $5.00" + ANCHOR_CLOSE
    )
    with pytest.raises(AskError, match="empty"):
        question_ids(builder, 7, " \n", None)


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ask-bundle")
    image = save_model(root / "image", seed=1, anchor_version=0)
    shutil.copytree(image, root / "bundle")
    save_model(root / "bundle" / ANCHORED_MEMBER, seed=2, anchor_version=ANCHOR_VERSION)
    return root / "bundle"


def scripted(directory, answer: str):
    loaded = load_model(directory, cache=False)
    engine = FixedAnswerEngine(loaded.tokenizer, answer)
    for member in (loaded, loaded.anchored):
        if member is not None:
            member.engine = lambda spec="auto", batch_size=8, engine=engine: engine
    return loaded, engine


def test_an_anchored_answer_in_run_references_is_resolved_and_located(bundle_dir):
    loaded, engine = scripted(bundle_dir, "@2")
    answer = ask(plain_pdf(), QUESTION, model=loaded)
    assert answer.answer == PROSE[1] and answer.page == 1
    assert len(engine.prompts) == 1 and engine.prompts[0].startswith("\n" + QUESTION + ANCHOR_OPEN + "page ")
    x0, y0, x1, y1 = answer.box
    assert 0 <= x0 < x1 and 0 <= y0 < y1 and answer.pages[0].anchored
    # --anchor off: the image alone, the question alone; the answer still located in the text layer
    loaded, engine = scripted(bundle_dir, "jumps over the lazy")
    answer = ask(plain_pdf(), QUESTION, model=loaded, anchor="off")
    assert engine.prompts == ["\n" + QUESTION] and answer.box is not None and not answer.pages[0].anchored
    # several questions: one Answer each, all asked in one engine call
    loaded, engine = scripted(bundle_dir, "@3")
    answers = ask(plain_pdf(), [QUESTION, "Which line comes last?"], model=loaded)
    assert [a.answer for a in answers] == [PROSE[2]] * 2 and [a.question for a in answers][1].startswith(
        "Which"
    )
    assert len(engine.prompts) == 2 and "Which line comes last?" + ANCHOR_OPEN in engine.prompts[1]
    with pytest.raises(AskError, match="no question"):
        ask(plain_pdf(), [], model=loaded)
    # an answer that is no span of the page has no box
    loaded, _ = scripted(bundle_dir, "Zebra 42")
    answer = ask(plain_pdf(), QUESTION, model=loaded)
    assert answer.answer == "Zebra 42" and answer.box is None and answer.page == 1


def scripted_prompts(bundle_dir, pdf, focus: str) -> list[str]:
    """The prompts asking `pdf` the bug-report question sends with `focus`."""
    loaded, engine = scripted(bundle_dir, "@2")
    ask(pdf, "Where should bug reports be sent?", model=loaded, focus=focus)
    return engine.prompts


def test_a_question_is_asked_over_the_runs_that_share_its_words(bundle_dir):
    filler = [f"Filler line number {i} of the body text." for i in range(30)]
    lines = filler[:20] + ["Bug reports should be sent to someone@example.org today."] + filler[20:]
    pdf = layer_pdf(lines_content(lines, size=9, top=760))
    loaded, engine = scripted(bundle_dir, "@2")
    answer = ask(pdf, "Where should bug reports be sent?", model=loaded, focus=True)
    # the window starts one run before the best match, so its run 2 is the page's run 21
    assert answer.answer.startswith("someone@example.org") and len(engine.prompts) == 1
    assert engine.prompts[0].count("\n@") == 12  # FOCUS_RUNS runs, cut marks before and after
    loaded, engine = scripted(bundle_dir, "@2")
    assert "number 1 " in ask(pdf, "Where should bug reports be sent?", model=loaded).answer  # off by default
    # a question sharing no word with the page is asked over the page's windows
    loaded, engine = scripted(bundle_dir, "@2")
    assert "number 1 " in ask(pdf, "What colour is the sky?", model=loaded, focus=True).answer
    # "both": the focused window and the page's windows are asked, the answer chosen among them (the focused
    # window's first among equals)
    loaded, engine = scripted(bundle_dir, "@2")
    answer = ask(pdf, "Where should bug reports be sent?", model=loaded, focus="both")
    page_prompts = scripted_prompts(bundle_dir, pdf, "off")
    assert answer.answer.startswith("someone@example.org") and engine.prompts[0].count("\n@") == 12
    # a page window holding the same runs as the focused one is not asked twice
    assert engine.prompts[1:] == [p for p in page_prompts if p != engine.prompts[0]]
    with pytest.raises(AskError, match="focus must be one of off, window, both"):
        ask(pdf, "Where?", model=loaded, focus="sometimes")


RECEIPT = Path(__file__).resolve().parents[2] / "data" / "frozen-test" / "docqa" / "pdfs"
RECEIPT = RECEIPT / "docqa_receipt_en_2000000000.pdf"


def test_a_referenced_answer_is_cut_from_its_run_and_boxed_by_it(bundle_dir):
    loaded, _ = scripted(bundle_dir, "@2")
    answer = ask(str(RECEIPT), "Which store issued the receipt?", model=loaded)
    with open_source(str(RECEIPT)) as source:
        image = source.render(0)
        lines = page_lines(source, 0, image, "none")
        decision, _ = question_anchor(source, 0, image, loaded, AskConfig(ocr="none"))
    store = next(line for line in lines.lines if line.text.startswith("Store:"))
    sx, sy = image.size[0] / lines.width, image.size[1] / lines.height
    expected = [round(v * s) for v, s in zip(store.box, (sx, sy, sx, sy))]
    # run 2 is "Store: Orion Tools Inc": its label dropped, its line the box
    assert answer.answer == "Orion Tools Inc" and answer.pages[0].raw == "@2" and answer.box == expected
    # a value across two runs: the box spans both lines
    loaded, _ = scripted(bundle_dir, "@2 @3")
    number = next(line for line in lines.lines if line.text.startswith("Receipt No"))
    both = ask(str(RECEIPT), "Which store issued the receipt?", model=loaded).box
    assert both == [
        expected[0],
        expected[1],
        max(expected[2], round(number.box[2] * sx)),
        round(number.box[3] * sy),
    ]
    # extracted values likewise, each cut under its field's name
    total = next(n for n, t in anchor_runs(decision.texts[0]).items() if t.startswith("Total:"))
    loaded, _ = scripted(bundle_dir, f'{{"store": "@2", "total": "@{total}"}}')
    result = extract(str(RECEIPT), ["store", "total"], model=loaded)
    assert result.values == {"store": "Orion Tools Inc", "total": "$288.62"}
    assert result.where["store"]["box"] == expected


def test_answer_span_exact_then_fuzzy():
    class Line:
        def __init__(self, text):
            self.text = text

    lines = [Line("Invoice number: INV-2031"), Line("Total due: $1,234.50")]
    assert answer_span("inv-2031", lines) == 0
    assert answer_span("total due: $1,234.5O", lines) == 1  # one misread character: still that line
    assert answer_span("nothing like it", lines) is None and answer_span("", lines) is None


def test_extraction_answer_reads_json_types_and_references():
    fields = parse_schema(
        {
            "type": "object",
            "properties": {
                "number": {"type": "string", "description": "the invoice number"},
                "total": {"type": "number"},
                "items": {"type": "integer"},
                "paid": {"type": "boolean"},
                "missing": {"type": "string"},
            },
        }
    )
    text = 'x {"number": "@1", "total": "$1,234.50", "items": "3", "paid": "yes", "other": 1} y'
    anchor = 'page 612x792\n@1 10,10 INV-"7"'
    values = read_fields_answer(text, fields, anchor)
    assert values == {"number": 'INV-"7"', "total": 1234.5, "items": 3, "paid": True, "missing": None}
    assert read_fields_answer("no json here", fields) == dict.fromkeys(values)
    prompt = extract_prompt([FieldSpec("total", "number", "amount due")])
    assert prompt.startswith("Extract these fields") and prompt.endswith(': {"total":"number: amount due"}')


def test_extract_with_a_scripted_model_gives_values_and_where(bundle_dir):
    loaded, _ = scripted(bundle_dir, '{"first": "@1", "count": "12"}')
    result = extract(plain_pdf(), {"first": "the first line", "count": "how many"}, model=loaded)
    assert result.values == {"first": PROSE[0], "count": "12"}
    detail = result.to_dict(detail=True)["fields"]
    assert detail["first"]["page"] == 1 and detail["first"]["box"] is not None
    assert detail["count"]["box"] is None  # "12" is printed nowhere on the page


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#"}}}, "$ref is not supported"),
        (
            {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(MAX_FIELDS + 1)}},
            "at most 200",
        ),
        ([1, 2], "non-empty strings"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "not supported"),
        ({"type": "array"}, "must be object"),
        ({"a": {"description": "x" * 5000}}, "over 4,096 bytes"),
        ([], "no fields"),
        (["a", "a"], "named twice"),
    ],
)
def test_schema_errors_are_one_line(schema, message):
    with pytest.raises(AskError, match=message.replace("$", r"\$")) as info:
        parse_schema(schema)
    assert "\n" not in str(info.value)


def cli(capsys, args):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_jocr_ask_and_extract_with_a_tiny_random_model(tmp_path, model_dir, bundle_dir, capsys):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(text_pdf(["one", "two", "three"]))
    base = ["--model", str(model_dir), "--max-tokens", "4"]
    code, out, err = cli(capsys, ["ask", str(pdf), QUESTION, "--pages", "2", *base])
    assert code == 0, err
    assert out.endswith("\n") and out.count("\n") >= 1
    code, out, err = cli(capsys, ["ask", str(pdf), QUESTION, "--pages", "2", "--format", "json", *base])
    data = json.loads(out)
    assert code == 0 and data["page"] in (2, None) and [p["page"] for p in data["pages"]] == [2]
    assert set(data) >= {"page", "answer", "box"}
    # the bundle: the anchored member reads the PDF page's text layer after the question
    code, out, err = cli(
        capsys,
        ["ask", str(pdf), QUESTION, "--format", "json", "--model", str(bundle_dir), "--max-tokens", "4"],
    )
    assert code == 0 and all(p["anchored"] for p in json.loads(out)["pages"])
    png = tmp_path / "scan.png"
    png.write_bytes(image_bytes("png", (300, 400)))
    code, out, err = cli(capsys, ["extract", str(pdf), str(png), "--fields", "total,date", *base])
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 2 and all(set(r) == {"total", "date"} for r in rows)
    schema = tmp_path / "fields.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"total": {"type": "number"}}}))
    code, out, err = cli(capsys, ["extract", str(pdf), "--schema", str(schema), "--format", "json", *base])
    row = json.loads(out)
    assert code == 0 and set(row["fields"]["total"]) == {"value", "page", "box"}


def test_cli_bad_questions_and_schemas_are_one_line_errors(tmp_path, model_dir, capsys):
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(text_pdf(["one"]))
    deep = tmp_path / "deep.json"
    deep.write_text(
        json.dumps({"type": "object", "properties": {"a": {"type": "string", "items": {"$ref": "#"}}}})
    )
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"type": "object", "properties": {f"f{i}": {} for i in range(201)}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    cases = [
        (["ask", str(pdf), "  "], "the question is empty"),
        (["ask", str(pdf), "x" * 5000], "at most 4,096"),
        (["ask", str(tmp_path / "nope.pdf"), QUESTION], "no such file"),
        (["ask", str(pdf), QUESTION, "--pages", "9"], "out of range"),
        (["extract", str(pdf), "--schema", str(deep)], "$ref is not supported"),
        (["extract", str(pdf), "--schema", str(many)], "at most 200"),
        (["extract", str(pdf), "--schema", str(broken)], "is not JSON"),
        (["extract", str(pdf), "--fields", "a,,b"], "non-empty strings"),
    ]
    for args, message in cases:
        code, out, err = cli(capsys, [*args, "--model", str(model_dir), "--max-tokens", "2"])
        assert code == 2 and message in err and err.count("\n") == 1 and not out, (args, err)
