"""Documents with exact answers: invoices, receipts, forms and letters in English and Chinese, with their
fields and question/answer pairs generated from the same source as the page (docs/synth.md, "Asking a
document").

    doc = make_document(seed)                     # DocContent: kind, lang, fields, questions, html, markdown
    with VectorRenderer() as renderer:
        page = docqa_page(seed, renderer)         # + the PDF Chromium prints (a real text layer)

Every answer is either a span printed on the page (extractive: a field's value exactly as printed) or a
value computed from what is printed (how many line items, which item costs most, a sum), so a scorer can
hold a reader to it. Amounts are printed with two decimals and a thousands separator, dates in the
language's usual spelling; the field values keep the printed form, and `jocr.checks.qa.normalise_value`
makes "1,234.50" and "1234.5" the same value when scoring.
"""

from __future__ import annotations

import html
import random
from dataclasses import asdict, dataclass, field
from typing import Any

DOCQA_VERSION = 1
KINDS = ("invoice", "receipt", "form", "letter")
LANGS = ("en", "zh")

_COMPANIES = {
    "en": [
        "Northwind Traders",
        "Blue Harbor Supply",
        "Kestrel Analytics",
        "Maple & Finch Ltd",
        "Orion Tools Inc",
        "Silverline Foods",
        "Granite Peak Press",
        "Lumen Office Systems",
    ],
    "zh": [
        "华东贸易有限公司",
        "蓝港供应链公司",
        "星河数据科技",
        "青松文具有限公司",
        "远航工具制造厂",
        "金谷食品有限公司",
        "明德印刷厂",
        "光华办公设备公司",
    ],
}
_PEOPLE = {
    "en": [
        "Alice Moreno",
        "David Chen",
        "Priya Natarajan",
        "Tom Becker",
        "Grace Okafor",
        "Liam O'Neill",
        "Sofia Rossi",
        "Ken Watanabe",
    ],
    "zh": ["王晓明", "李静", "张伟", "刘洋", "陈红", "杨帆", "赵磊", "孙丽"],
}
_CITIES = {
    "en": ["Springfield", "Riverton", "Lakewood", "Fairview", "Georgetown", "Ashford"],
    "zh": ["上海市", "杭州市", "南京市", "成都市", "武汉市", "苏州市"],
}
_ITEMS = {
    "en": [
        "A4 copy paper (box)",
        "Ballpoint pens (pack of 12)",
        "Desk lamp",
        "USB-C cable",
        "Stapler",
        "Printer toner",
        "Notebook, ruled",
        "Office chair",
        "Whiteboard markers",
        "Paper shredder",
        "Label printer",
        "Monitor stand",
    ],
    "zh": [
        "A4复印纸（箱）",
        "圆珠笔（12支装）",
        "台灯",
        "数据线",
        "订书机",
        "打印机硒鼓",
        "笔记本",
        "办公椅",
        "白板笔",
        "碎纸机",
        "标签打印机",
        "显示器支架",
    ],
}
_MONTHS_EN = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_LABELS = {
    "en": {
        "invoice_number": "Invoice No.",
        "date": "Date",
        "seller": "From",
        "buyer": "Bill to",
        "total": "Total",
        "subtotal": "Subtotal",
        "tax": "Tax",
        "receipt_number": "Receipt No.",
        "store": "Store",
        "name": "Full name",
        "phone": "Phone",
        "city": "City",
        "applicant_id": "Application ID",
        "sender": "Sender",
        "recipient": "Recipient",
        "subject": "Subject",
    },
    "zh": {
        "invoice_number": "发票号码",
        "date": "日期",
        "seller": "销售方",
        "buyer": "购买方",
        "total": "合计",
        "subtotal": "小计",
        "tax": "税额",
        "receipt_number": "收据编号",
        "store": "商店",
        "name": "姓名",
        "phone": "电话",
        "city": "城市",
        "applicant_id": "申请编号",
        "sender": "发件人",
        "recipient": "收件人",
        "subject": "主题",
    },
}
_TITLES = {
    "en": {"invoice": "INVOICE", "receipt": "RECEIPT", "form": "Membership Application Form", "letter": ""},
    "zh": {"invoice": "发票", "receipt": "收据", "form": "会员申请表", "letter": ""},
}
_ITEM_HEAD = {"en": ["Description", "Qty", "Unit price", "Amount"], "zh": ["品名", "数量", "单价", "金额"]}


@dataclass
class Question:
    """A question with its accepted answers; `kind` is "extractive" (a span of the page) or "computed"."""

    question: str
    answers: list[str]
    kind: str = "extractive"
    field: str | None = None  # the field an extractive answer is the value of


@dataclass
class DocContent:
    """One document's source: what the page prints (`html`, `markdown`) and what can be asked of it."""

    kind: str
    lang: str
    fields: dict[str, str]
    questions: list[Question]
    html: str
    markdown: str
    items: list[dict[str, str]] = field(default_factory=list)
    # Figures without a printed caption (`jocr.synth.charts`): type, reference caption, box in PDF points.
    figures: list[dict[str, Any]] = field(default_factory=list)

    def to_record(self) -> dict[str, Any]:
        record = {
            "kind": self.kind,
            "lang": self.lang,
            "fields": self.fields,
            "questions": [asdict(q) for q in self.questions],
            "items": self.items,
        }
        if self.figures:
            record["figures"] = self.figures
        return record


def _money(value: int, lang: str) -> str:
    """Cents -> the printed amount: "1,234.50" (English with a dollar sign, Chinese with ¥)."""
    text = f"{value // 100:,}.{value % 100:02d}"
    return ("$" if lang == "en" else "¥") + text


def _date(rng: random.Random, lang: str) -> str:
    year, month, day = rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28)
    if lang == "zh":
        return f"{year}年{month}月{day}日"
    return rng.choice([f"{_MONTHS_EN[month - 1]} {day}, {year}", f"{year}-{month:02d}-{day:02d}"])


def _line_items(
    rng: random.Random, lang: str, price_cents: tuple[int, int] = (150, 48_000)
) -> list[tuple[str, int, int]]:
    """(description, quantity, unit price in cents), 2-6 distinct items whose amounts all differ."""
    names = rng.sample(_ITEMS[lang], rng.randint(2, 6))
    items: list[tuple[str, int, int]] = []
    amounts: set[int] = set()
    for name in names:
        while True:
            qty, unit = rng.randint(1, 12), rng.randint(*price_cents)
            if qty * unit not in amounts:
                break
        amounts.add(qty * unit)
        items.append((name, qty, unit))
    return items


def _q(lang: str, en: str, zh: str) -> str:
    return en if lang == "en" else zh


def _field_questions(lang: str, fields: dict[str, str]) -> list[Question]:
    asks = {
        "invoice_number": ("What is the invoice number?", "发票号码是多少？"),
        "receipt_number": ("What is the receipt number?", "收据编号是多少？"),
        "date": ("What is the date of the document?", "文件的日期是哪天？"),
        "seller": ("Who issued the invoice?", "销售方是谁？"),
        "buyer": ("Who is the invoice billed to?", "购买方是谁？"),
        "total": ("What is the total amount?", "合计金额是多少？"),
        "store": ("Which store issued the receipt?", "收据是哪家商店开具的？"),
        "name": ("What is the applicant's name?", "申请人的姓名是什么？"),
        "phone": ("What phone number is given?", "填写的电话是多少？"),
        "city": ("Which city does the applicant live in?", "申请人住在哪个城市？"),
        "applicant_id": ("What is the application ID?", "申请编号是多少？"),
        "sender": ("Who wrote the letter?", "这封信是谁写的？"),
        "recipient": ("To whom is the letter addressed?", "这封信写给谁？"),
        "subject": ("What is the subject of the letter?", "信的主题是什么？"),
    }
    return [
        Question(_q(lang, *asks[name]), [value], "extractive", name)
        for name, value in fields.items()
        if name in asks
    ]


def _items_table(items: list[tuple[str, int, int]], lang: str) -> tuple[str, str, list[dict[str, str]]]:
    head = _ITEM_HEAD[lang]
    rows = [(name, str(qty), _money(unit, lang), _money(qty * unit, lang)) for name, qty, unit in items]
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    table_html = f'<table class="items"><tr>{cells}</tr>{body}</table>'
    md = (
        "<table><tr>"
        + "".join(f"<td>{h}</td>" for h in head)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        + "</table>"
    )
    records = [dict(zip(("description", "quantity", "unit_price", "amount"), row)) for row in rows]
    return table_html, md, records


def _computed_questions(lang: str, items: list[tuple[str, int, int]]) -> list[Question]:
    priciest = max(items, key=lambda it: it[1] * it[2])
    most = max(items, key=lambda it: it[1])
    questions = [
        Question(
            _q(lang, "How many line items are listed?", "共列出了几项商品？"), [str(len(items))], "computed"
        ),
        Question(
            _q(lang, "Which item has the largest amount?", "哪一项的金额最大？"), [priciest[0]], "computed"
        ),
    ]
    if sum(1 for it in items if it[1] == most[1]) == 1:
        questions.append(
            Question(
                _q(lang, "Which item was bought in the largest quantity?", "哪一项的数量最多？"),
                [most[0]],
                "computed",
            )
        )
    return questions


def _id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(2019, 2026)}-{rng.randint(1, 99_999):05d}"


def _invoice(rng: random.Random, lang: str) -> tuple[dict[str, str], list[tuple[str, int, int]], str]:
    items = _line_items(rng, lang)
    subtotal = sum(q * u for _, q, u in items)
    tax = subtotal * rng.choice([0, 5, 6, 8, 10, 13]) // 100
    seller, buyer = rng.sample(_COMPANIES[lang], 2)
    fields = {
        "invoice_number": _id(rng, "INV"),
        "date": _date(rng, lang),
        "seller": seller,
        "buyer": buyer,
        "subtotal": _money(subtotal, lang),
        "tax": _money(tax, lang),
        "total": _money(subtotal + tax, lang),
    }
    return fields, items, "invoice"


def _receipt(rng: random.Random, lang: str) -> tuple[dict[str, str], list[tuple[str, int, int]], str]:
    items = _line_items(rng, lang, price_cents=(50, 5_000))
    total = sum(q * u for _, q, u in items)
    fields = {
        "store": rng.choice(_COMPANIES[lang]),
        "receipt_number": _id(rng, "R"),
        "date": _date(rng, lang),
        "total": _money(total, lang),
    }
    return fields, items, "receipt"


def _form(rng: random.Random, lang: str) -> tuple[dict[str, str], list[tuple[str, int, int]], str]:
    phone = f"{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(0, 9999):04d}"
    if lang == "zh":
        phone = f"1{rng.randint(30, 89)}{rng.randint(0, 99_999_999):08d}"
    fields = {
        "applicant_id": _id(rng, "A"),
        "name": rng.choice(_PEOPLE[lang]),
        "date": _date(rng, lang),
        "phone": phone,
        "city": rng.choice(_CITIES[lang]),
    }
    return fields, [], "form"


_SUBJECTS = {
    "en": [
        "Delivery schedule for the spring order",
        "Change of billing address",
        "Renewal of the service contract",
        "Invitation to the annual meeting",
    ],
    "zh": ["春季订单的交货安排", "账单地址变更", "服务合同续签", "年度会议邀请"],
}


def _letter(rng: random.Random, lang: str) -> tuple[dict[str, str], list[tuple[str, int, int]], str]:
    sender, recipient = rng.sample(_PEOPLE[lang], 2)
    fields = {
        "date": _date(rng, lang),
        "sender": sender,
        "recipient": recipient,
        "subject": rng.choice(_SUBJECTS[lang]),
    }
    return fields, [], "letter"


_MAKERS = {"invoice": _invoice, "receipt": _receipt, "form": _form, "letter": _letter}
_LETTER_BODY = {
    "en": "Thank you for your message. We have reviewed the points you raised and will reply in detail by "
    "the end of the month. Please contact our office if anything is unclear.",
    "zh": "感谢您的来信。我们已经仔细阅读了您提出的问题，将在月底前给予详细答复。"
    "如有疑问，请与我们的办公室联系。",
}


def _page_html(
    kind: str, lang: str, fields: dict[str, str], table: tuple[str, str] | None
) -> tuple[str, str]:
    """The printed page as HTML blocks (`data-block`, inside `#body`, as `VectorRenderer.print_page` expects)
    and its Markdown, block by block in reading order."""
    labels = _LABELS[lang]
    blocks: list[tuple[str, str]] = []  # (html, markdown)
    title = _TITLES[lang][kind]
    if title:
        blocks.append((f"<h1>{html.escape(title)}</h1>", f"# {title}"))
    if kind == "letter":
        colon = "：" if lang == "zh" else ": "
        for name in ("date", "sender", "recipient", "subject"):
            text = f"{labels[name]}{colon}{fields[name]}"
            blocks.append((f"<p>{html.escape(text)}</p>", text))
        blocks.append((f"<p>{html.escape(_LETTER_BODY[lang])}</p>", _LETTER_BODY[lang]))
        blocks.append((f"<p>{html.escape(fields['sender'])}</p>", fields["sender"]))
    else:
        colon = "：" if lang == "zh" else ": "
        head = [n for n in fields if n not in ("subtotal", "tax", "total")]
        for name in head:
            text = f"{labels[name]}{colon}{fields[name]}"
            blocks.append((f'<p class="field">{html.escape(text)}</p>', text))
        if table:
            blocks.append(table)  # (html, markdown)
        for name in ("subtotal", "tax", "total"):
            if name in fields:
                text = f"{labels[name]}{colon}{fields[name]}"
                blocks.append((f'<p class="sum">{html.escape(text)}</p>', text))
    body = "".join(f'<div data-block="{i}">{b[0]}</div>' for i, b in enumerate(blocks))
    markdown = "\n\n".join(b[1] for b in blocks)
    css = (
        letter_page_css(lang, heading_pt=20, heading_gap_pt=14)
        + "table.items { border-collapse: collapse; margin: 10pt 0; width: 100%; }"
        "table.items td, table.items th { border: 0.5pt solid #333; padding: 3pt 5pt; text-align: left; }"
        "p.sum { text-align: right; }"
    )
    document = letter_page_html(css, body)
    return document, markdown


def letter_page_css(lang: str, heading_pt: int, heading_gap_pt: int) -> str:
    """The style every asking document's page starts with: a US-letter `#page` with a 60 pt `#body` inside
    (what `jocr.synth.vector.VectorRenderer.print_page` expects), the language's font, headings and
    paragraphs."""
    family = "'Noto Sans CJK SC'" if lang == "zh" else "'DejaVu Sans'"
    return (
        "@page { size: 612pt 792pt; margin: 0; } html, body { margin: 0; }"
        "#page { position: relative; width: 612pt; height: 792pt; overflow: hidden; background: white;"
        f" font-family: {family}; font-size: 11pt; color: #111; }}"
        "#body { position: absolute; left: 60pt; right: 60pt; top: 60pt; bottom: 60pt; overflow: hidden; }"
        f"h1 {{ font-size: {heading_pt}pt; margin: 0 0 {heading_gap_pt}pt 0; }} p {{ margin: 0 0 6pt 0; }}"
    )


def letter_page_html(css: str, body: str) -> str:
    """An asking document's page as HTML: `css` (from `letter_page_css`) and the blocks' `body`."""
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body>'
        f'<div id="page"><div id="body">{body}</div></div></body></html>'
    )


def make_document(seed: int, kind: str | None = None, lang: str | None = None) -> DocContent:
    """The document for `seed` (kind and language drawn from the seed unless given): a pure function."""
    rng = random.Random(f"docqa-{DOCQA_VERSION}-{seed}")
    kind = kind or rng.choice(KINDS)
    lang = lang or rng.choice(LANGS)
    if kind not in _MAKERS or lang not in LANGS:
        raise ValueError(
            f"unknown document kind/language {kind!r}/{lang!r}: kinds {KINDS}, languages {LANGS}"
        )
    fields, items, _ = _MAKERS[kind](rng, lang)
    table_html, table_md, records = _items_table(items, lang) if items else ("", "", [])
    document, markdown = _page_html(kind, lang, fields, (table_html, table_md) if items else None)
    questions = _field_questions(lang, fields) + (_computed_questions(lang, items) if items else [])
    return DocContent(kind, lang, fields, questions, document, markdown, records)


@dataclass
class DocQAPage:
    """A document printed by Chromium: its PDF (a real text layer) and its source."""

    pdf: bytes
    content: DocContent
    name: str


def docqa_page(seed: int, renderer, make=make_document) -> DocQAPage:
    """The document `make(seed)` printed to a one-page PDF by a `jocr.synth.vector.VectorRenderer`."""
    content = make(seed)
    pdf, kept = renderer.print_page(content.html, (612, 792))
    if len(kept) != content.html.count("data-block="):
        raise ValueError(f"document {seed} does not fit its page ({len(kept)} blocks kept)")
    return DocQAPage(pdf, content, f"docqa_{content.kind}_{content.lang}_{seed}")


def write_docqa_dataset(
    outdir,
    pages: int,
    seed: int = 0,
    split: str = "train",
    dpi: int = 150,
    make=make_document,
    profile: str = "docqa",
    versions: dict[str, int] | None = None,
    copies: bool = True,
) -> dict[str, Any]:
    """Write `pages` documents (seed offsets from `seed` in `split`) as vector PDFs (`pdfs/`), scanned copies
    (`scan/`, `jocr.synth.degrade.degrade`) and photographed copies (`photo/`, `photograph`) rendered at
    `dpi`, with `docqa_<split>.jsonl`: one record per document (name, its three files, fields, questions).
    Deterministic in (seed, split) except the PDF bytes' creation date. `make(seed)` gives each document
    (`jocr.synth.charts.make_chart_document` for the `docqa-charts` profile, whose manifest says so with
    `profile` and `versions`). `copies=False` writes the PDFs alone (training reads only them; the two
    copies are most of a document's CPU time): the records' `files` then name the PDF only, and every PDF
    and record is otherwise the same as with copies."""
    import json
    from pathlib import Path

    from jocr.synth.dataset import SPLIT_SIZE, global_seed
    from jocr.synth.vector import VectorRenderer

    if pages < 1 or seed + pages > SPLIT_SIZE:
        raise ValueError(f"seed offsets {seed}..{seed + pages - 1} must lie in [0, {SPLIT_SIZE})")
    root = Path(outdir)
    for sub in ("pdfs", "scan", "photo") if copies else ("pdfs",):
        (root / sub).mkdir(parents=True, exist_ok=True)
    records = []
    with VectorRenderer() as renderer:
        for offset in range(seed, seed + pages):
            g = global_seed(split, offset)
            page = docqa_page(g, renderer, make)
            (root / "pdfs" / f"{page.name}.pdf").write_bytes(page.pdf)
            files = {"pdf": f"pdfs/{page.name}.pdf"}
            if copies:
                files.update(_write_copies(page, g, root, dpi))
            records.append({"name": page.name, "seed": g, "files": files, **page.content.to_record()})
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (root / f"docqa_{split}.jsonl").write_text(lines, encoding="utf-8")
    manifest = {
        **(versions or {"docqa_version": DOCQA_VERSION}),
        "profile": profile,
        "split": split,
        "seed_offsets": [seed, seed + pages - 1],
        "pages": pages,
        "dpi": dpi,
        "questions": sum(len(r["questions"]) for r in records),
        **({} if copies else {"copies": False}),
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _write_copies(page: DocQAPage, g: int, root, dpi: int) -> dict[str, str]:
    """The document's scanned and photographed copies (its page rendered at `dpi`, degraded by the seed `g`)
    written under `root`; their paths by variant."""
    import pypdfium2 as pdfium

    from jocr.synth.degrade import degrade, photograph

    doc = pdfium.PdfDocument(page.pdf)
    try:
        image = doc[0].render(scale=dpi / 72).to_pil().convert("RGB")
    finally:
        doc.close()
    rng = random.Random(f"docqa-copies-{g}")
    scan, _ = degrade(image, rng.uniform(0.3, 0.7), rng)
    photo, _ = photograph(image, rng.uniform(0.3, 0.8), rng)
    scan.save(root / "scan" / f"{page.name}.jpg", quality=80)
    photo.save(root / "photo" / f"{page.name}.jpg", quality=80)
    return {"scan": f"scan/{page.name}.jpg", "photo": f"photo/{page.name}.jpg"}
