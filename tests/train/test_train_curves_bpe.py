from pathlib import Path

from jocr.train.bpe import train_bpe
from jocr.train.curves import RunLog, plot_curves, read_log

SPECIALS = ["<s>", "</s>", "<pad>", "<image>", "<td>", "</td>"]


def test_run_log_round_trip_and_png(tmp_path: Path):
    log = RunLog(tmp_path)
    for step in range(20):
        log.write(step=step, loss=5.0 / (step + 1))
    with log.path.open("a") as f:
        f.write('{"step": 99, "lo')  # a line cut short by a kill must not break reading
    recs = read_log(log.path)
    assert len(recs) == 20 and recs[-1]["loss"] == 0.25
    png = plot_curves(log.path, tmp_path / "curves.png", ["loss", "missing"])
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
    assert plot_curves(log.path, tmp_path / "none.png", ["missing"]) is None


def test_bpe_specials_first_and_round_trip():
    texts = ["| Year | Revenue |\n|---|---|\n| 2023 | 4.5% |", "# Title\n\nSome text with $x^2$."] * 50
    tok = train_bpe(texts, vocab_size=400, special_tokens=SPECIALS)
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i
    assert tok.get_vocab_size() <= 400
    sample = "Revenue in 2023: 4.5%\n<td>x</td> café"
    ids = tok.encode(sample).ids
    assert tok.decode(ids, skip_special_tokens=False) == sample
    # digits are single tokens so numbers generalise
    assert [tok.id_to_token(i) for i in tok.encode("2023").ids] == ["2", "0", "2", "3"]
    # the corpus's frequent words compress into fewer tokens than bytes
    assert len(tok.encode("Revenue").ids) < len("Revenue")
