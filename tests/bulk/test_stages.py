"""The batch stages without Ray: document expansion and rendering, the retry policy, the manifest, inputs."""

from __future__ import annotations

import json

import pytest
from pdf_fixtures import encrypted_pdf, text_pdf
from PIL import Image

from jocr.bulk.manifest import Manifest
from jocr.bulk.stages import Attempt, PageReader, PageSettings, expand_documents, render_pages
from jocr.bulk.storage import Output, expand_batch_inputs
from jocr.documents.naming import output_stems


def _docs(tmp_path):
    (tmp_path / "good.pdf").write_bytes(text_pdf(["one", "two", "three"]))
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf("pw"))
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage" * 4)
    Image.new("RGB", (300, 400), "white").save(tmp_path / "blank.png")
    return [
        {"doc_id": str(tmp_path / n), "done_pages": []} for n in ("good.pdf", "locked.pdf", "corrupt.pdf")
    ]


def test_expand_skips_done_pages_and_reports_unreadable_documents(tmp_path):
    docs = _docs(tmp_path)
    docs[0]["done_pages"] = [2]
    rows = expand_documents(docs, PageSettings())
    good = [r for r in rows if r["doc_id"].endswith("good.pdf")]
    assert [(r["page"], r["pages_total"], r["kind"], r["num_pages"]) for r in good] == [
        (1, 3, "pdf", 3),
        (3, 3, "pdf", 3),
    ]
    failed = {r["doc_id"].rsplit("/", 1)[-1]: r for r in rows if r["status"] == "failed"}
    assert set(failed) == {"locked.pdf", "corrupt.pdf"}
    assert all(r["page"] == 0 for r in failed.values())
    assert "encrypted" in failed["locked.pdf"]["error"] and "corrupt" in failed["corrupt.pdf"]["error"]
    huge = expand_documents(docs[:1], PageSettings(max_doc_pages=2))
    assert huge[0]["status"] == "failed" and "3 pages, over the limit of 2" in huge[0]["error"]


def test_render_marks_blank_pages_and_ships_rgb_pixels(tmp_path):
    _docs(tmp_path)
    rows = expand_documents(
        [{"doc_id": str(tmp_path / n)} for n in ("good.pdf", "blank.png")], PageSettings()
    )
    out = list(render_pages(rows, PageSettings(dpi=72)))
    first, blank = out[0], out[-1]
    assert first["status"] is None and (first["width"], first["height"]) == (612, 792)
    assert len(first["image"]) == 612 * 792 * 3
    assert blank["status"] == "blank" and blank["image"] is None
    assert json.loads(blank["result"])["finish_reason"] == "blank"


class _Builder:
    def page(self, image):
        raise AssertionError("not used")

    def text(self, ids):
        return " ".join(map(str, ids))

    def markdown(self, raw, size, finish_reason):
        return raw, []


class _Scripted(PageReader):
    """Outcomes per attempt, from a script: (finish_reason or None for an error) per attempt."""

    def __init__(self, script, retries=2):
        self.script = script
        self.calls = []
        super().__init__(PageSettings(retries=retries))

    def load(self):
        return _Builder()

    def prepare(self, job):
        job.prompt_ids = [1]

    def generate(self, jobs, temperature, attempt):
        self.calls.append((attempt, temperature, [j.row["page"] for j in jobs]))
        out = []
        for job in jobs:
            reason = self.script[job.row["page"]][attempt]
            if reason is None:
                out.append(Attempt(None, None, "boom", 0.1, temperature))
            else:
                out.append(Attempt([attempt, job.row["page"]], reason, None, 0.1, temperature))
        return out


def _row(page):
    return {
        "doc_id": "d.pdf",
        "page": page,
        "status": None,
        "width": 4,
        "height": 4,
        "render_seconds": 0.0,
        "image": bytes(4 * 4 * 3),
    }


def test_retry_policy_rising_temperature_then_greedy_fallback():
    script = {
        1: ["stop"],
        2: ["length", "stop"],
        3: ["repetition", "length", "length"],
        4: [None, None, None],
        5: [None, "stop"],
    }
    reader = _Scripted(script)
    out = {r["page"]: r for r in reader([_row(p) for p in script])}
    assert reader.calls == [(0, 0.0, [1, 2, 3, 4, 5]), (1, 0.2, [2, 3, 4, 5]), (2, 0.5, [3, 4])]
    assert (out[1]["status"], out[1]["attempts"], out[1]["temperature"]) == ("ok", 1, 0.0)
    assert (out[2]["status"], out[2]["attempts"], out[2]["temperature"]) == ("retried", 2, 0.2)
    assert json.loads(out[2]["result"])["markdown"] == "1 2"
    # Nothing finished: the greedy reading is kept, as `jocr parse` would write it.
    assert (out[3]["status"], out[3]["finish_reason"], out[3]["attempts"]) == ("fallback", "repetition", 3)
    assert json.loads(out[3]["result"])["markdown"] == "0 3"
    assert (out[4]["status"], out[4]["error"]) == ("failed", "boom")
    assert out[5]["status"] == "retried"
    assert all("image" not in r for r in out.values())
    plain = {r["page"]: r for r in _Scripted(script, retries=0)([_row(p) for p in script])}
    assert plain[3]["status"] == "ok" and plain[3]["finish_reason"] == "repetition"


def test_manifest_newest_row_wins_and_compaction_keeps_it(tmp_path):
    output = Output(str(tmp_path))
    output.make_dirs("_manifest")
    first = Manifest(output, config="c1", run="r1")
    first.append([{"doc_id": "a", "page": 1, "status": "failed", "time": 1.0}])
    first.append(
        [
            {"doc_id": "a", "page": 1, "status": "ok", "time": 2.0},
            {"doc_id": "b", "page": 0, "status": "written", "time": 2.0},
        ]
    )
    Manifest(output, config="c2", run="r2").append([{"doc_id": "a", "page": 1, "status": "blank"}])
    rows = first.load()
    assert {k: r["status"] for k, r in rows.items()} == {("a", 1): "ok", ("b", 0): "written"}
    first.compact()
    assert len(output.list("_manifest", ".parquet")) == 1
    assert {k: r["status"] for k, r in first.load().items()} == {("a", 1): "ok", ("b", 0): "written"}
    assert Manifest(output, config="c2", run="x").load()[("a", 1)]["status"] == "blank"


def test_manifest_rolls_small_parts_into_one(tmp_path, monkeypatch):
    from jocr.bulk import manifest as manifest_module

    monkeypatch.setattr(manifest_module, "ROLL_PARTS", 3)
    output = Output(str(tmp_path))
    output.make_dirs("_manifest")
    manifest = Manifest(output, config="c", run="r")
    for page in range(1, 8):
        manifest.append([{"doc_id": "a", "page": page, "status": "ok"}])
    assert len(output.list("_manifest", ".parquet")) == 3  # two rolled parts and the newest small one
    assert sorted(p for _, p in manifest.load()) == list(range(1, 8))


def test_inputs_list_files_folders_and_unique_names(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.pdf").write_bytes(text_pdf(["a"]))
    (tmp_path / "x" / "b.png").write_bytes(b"")
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "a.pdf").write_bytes(text_pdf(["a"]))
    (tmp_path / "list.txt").write_text("# inputs\nx\n\ny/a.pdf\nhttps://example.org/doc.pdf?x=1\n")
    items = expand_batch_inputs([str(tmp_path / "list.txt"), str(tmp_path / "x" / "a.pdf")])
    assert items == [
        str(tmp_path / "x" / "a.pdf"),
        str(tmp_path / "x" / "b.png"),
        str(tmp_path / "y" / "a.pdf"),
        "https://example.org/doc.pdf?x=1",
    ]
    assert output_stems(items) == ["a.pdf", "b", "a.pdf-2", "doc"]  # the names `jocr parse` gives
    assert expand_batch_inputs([f"file://{tmp_path}/y"]) == [str(tmp_path / "y" / "a.pdf")]


def test_output_writes_are_atomic_and_leave_no_temporaries(tmp_path):
    output = Output(str(tmp_path / "out"))
    output.make_dirs()
    output.write("a.md", b"one")
    output.write("a.md", b"two")
    assert (tmp_path / "out" / "a.md").read_bytes() == b"two"
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["a.md"]
    with pytest.raises(OSError):
        output.write("missing/a.md", b"x")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["a.md"]


def test_jocr_batch_is_a_plain_function_beside_its_package():
    """Importing the package's modules leaves `jocr.batch` the function (the package is `jocr.bulk`)."""
    import types

    import jocr
    import jocr.bulk.stages  # noqa: F401 (the import is the point)

    assert isinstance(jocr.batch, types.FunctionType) and jocr.batch is jocr.bulk.batch
    with pytest.raises(TypeError, match="unknown option"):
        jocr.batch("in/", "out/", colour="blue")
