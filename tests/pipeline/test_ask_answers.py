"""Reading an asked page's answer (`jocr.pipeline.ask_answers`): the one cut rule shared with the training
targets, references resolved, and the answer's box from the runs it references."""

from __future__ import annotations

from jocr.lines.references import referenced_numbers
from jocr.lines.types import OK, Line, PageLines
from jocr.pipeline.ask import FieldSpec, read_fields_answer, window_answers
from jocr.pipeline.ask_answers import answer_text, answer_value, known_runs, runs_box
from jocr.pipeline.ask_decoding import choose_window

ANCHOR = "page 100x100\n@1 0,0 Store: Orion Tools Inc\n@2 0,100 Total $136.50\n@3 0,200 10:30 start"


def test_answer_value_drops_a_colon_label():
    assert answer_value("Store: Orion Tools Inc") == "Orion Tools Inc"
    assert answer_value("合计：¥7,196.07") == "¥7,196.07"
    assert answer_value("Receipt No.: R-2019-12799") == "R-2019-12799"
    # not labels: a time, a URL, a colon that ends the text
    assert answer_value("10:30 start") == "10:30 start"
    assert answer_value("see http://example.org") == "see http://example.org"
    assert answer_value("Note:") == "Note:"


def test_answer_value_drops_the_words_the_question_names():
    assert answer_value("Total $136.50", "What is the total amount?") == "$136.50"
    assert answer_value("Total $136.50", "How much is due?") == "Total $136.50"
    assert answer_value("Receipt number R-7", "receipt_number") == "R-7"  # a field's name
    assert answer_value("Total", "What is the total?") == "Total"  # something always remains
    # stop words and short words are never a label
    assert answer_value("The R Core Team", "Who is the author of the R manual?") == "The R Core Team"


def test_a_sentence_gives_the_value_after_the_words_the_question_names():
    # the question's words and grammar dropped wherever they lead, the sentence's full stop trimmed
    run = "This manual is for R, version 4.2.2 Patched (2022-11-10)."
    assert answer_value(run, "Which version of R is this manual for?") == "4.2.2 Patched (2022-11-10)"
    assert answer_value("Version 2022-09-08", "What is the version of the R FAQ?") == "2022-09-08"
    # inside a sentence the value ends at its clause: a verb, relative or preposition, a comma, a quote
    run = "has the IP address 10.0.2.2 and is installed by selecting the Main Server profile."
    assert answer_value(run, "Which IP address does the main server have by default?") == "10.0.2.2"
    run = "needs one main server (hostname ”tjener” which is Norwegian and means ”server”) which per"
    assert answer_value(run, "What is the hostname of the main server?") == "tjener"
    run = "The server uses the port 8080, which is the default."
    assert answer_value(run, "Which port does the server use?") == "8080"
    # a plural names its singular; `and` joins a value's parts
    # a thousands separator is no clause mark
    assert answer_value("it costs $1,234.50, tax included", "What does it cost?") == "$1,234.50"
    run = "written by the authors Ann Lee and Bo Chen"
    assert answer_value(run, "Who is the author?") == "Ann Lee and Bo Chen"


def test_a_label_that_leads_its_run_keeps_the_value_to_the_runs_end():
    run = "Ship to 12 Main St, Springfield"
    assert answer_value(run, "What is the ship address?") == "12 Main St, Springfield"
    assert answer_value("Subject Delivery schedule for the spring order", "What is the subject?") == (
        "Delivery schedule for the spring order"
    )


def test_a_chinese_sentence_gives_the_value_after_the_words_the_question_names():
    run = "并预设默认 IP 地址为 10.0.2.2。除主服务器设定配置外还可以选择"
    assert answer_value(run, "主服务器的默认 IP 地址是什么？") == "10.0.2.2"
    # Chinese text running on from the question's characters is one compound word, not the value
    run = "需要通过选择主服务器设定配置安装一台主服务器（主机名“tjener”是挪威语“服务器”之意）"
    assert answer_value(run, "主服务器的主机名是什么？") == "tjener"
    # a value that is not Chinese ends where Chinese text goes on, unless a conjunction joins two values
    run = "DHCP 在主服务器上为 10.0.0.0/8 网络工作，提供引导菜单"
    assert answer_value(run, "主服务器上的 DHCP 为哪个网络工作？") == "10.0.0.0/8"
    run = "在第二个接口（默认预设选项是 192.168.0.0/24 和 192.168.1.0/24）的 LTSP 服务器上"
    assert answer_value(run, "第二个接口的默认预设选项是什么？") == "192.168.0.0/24 和 192.168.1.0/24"
    # a Chinese value after grammar (`是`) or punctuation runs to its clause's end
    assert answer_value("两种映像：网络安装和光盘。其余略", "有哪两种映像？") == "网络安装和光盘"
    assert answer_value("这本书的译者是张三，二零二一年", "这本书的译者是谁？") == "张三"


def test_trailing_question_words_are_dropped_and_a_title_keeps_its_run():
    assert answer_value("c 2001–2022 R Core Team", "Which years does the R Core Team's copyright cover?") == (
        "c 2001–2022"
    )
    assert answer_value("Debian Edu 12 Bookworm 手册", "这是哪个版本的手册？") == "Debian Edu 12 Bookworm"
    run = "Notes on R: A Programming Environment for Data Analysis"
    assert answer_value(run, "What is the subtitle of An Introduction to R?") == run
    assert answer_value("R Installation and Administration", "What is the title of the manual?") == (
        "R Installation and Administration"
    )
    assert answer_value("用户手册", "这份文件的标题是什么？") == "用户手册"


def test_a_reference_to_a_run_the_window_lacks_is_no_answer():
    assert known_runs("@3", ANCHOR) and known_runs("4", ANCHOR) and not known_runs("@57", ANCHOR)
    assert not known_runs("@1 @57", ANCHOR) and not known_runs("@1", None)
    assert answer_text("@57", ANCHOR) == "" and answer_text("@1 @57", ANCHOR) == ""
    # the page then gives the next window's answer, or none
    second = "page 100x100\n@1 0,0 Total $9.00"
    windows = window_answers(["@57", "@1"], [ANCHOR, second], "What is the total?", ["stop", "stop"])
    assert [w.answer for w in windows] == ["", "$9.00"] and choose_window(windows) == 1
    windows = window_answers(["@57"], [ANCHOR], "What is the total?", ["stop"])
    assert windows[choose_window(windows)].answer == ""


def test_answer_text_resolves_references_then_cuts_the_value():
    assert answer_text("@1", ANCHOR) == "Orion Tools Inc"
    assert answer_text(" @2 ", ANCHOR, "What is the total amount?") == "$136.50"
    assert answer_text("@3", ANCHOR) == "10:30 start"
    # a typed answer is the model's text as it stands (no cut)
    assert answer_text(" Total: 4 ", ANCHOR) == "Total: 4" and answer_text("4", None) == "4"
    assert referenced_numbers("@3 @4") == [3, 4] and referenced_numbers("@3@4") == [3, 4]
    assert referenced_numbers("4") == []


def test_extracted_values_are_read_like_answers():
    fields = [FieldSpec("store"), FieldSpec("total", "number"), FieldSpec("city")]
    values = read_fields_answer('{"store":"@1","total":"@2","city":null}', fields, ANCHOR)
    assert values == {"store": "Orion Tools Inc", "total": 136.5, "city": None}


def _lines() -> PageLines:
    boxes = [(10, 10, 60, 20), (10, 30, 50, 40), (0, 0, 0, 0), (20, 50, 90, 60)]
    texts = ["Store: Orion Tools Inc", "Total $136.50", "  ", "10:30 start"]
    return PageLines(100, 100, [Line(text=t, box=b) for t, b in zip(texts, boxes)], verdict=OK)


def test_the_box_is_the_referenced_runs_lines():
    lines = _lines()
    assert runs_box("@1", 1, lines, (200, 200)) == [20, 20, 120, 40]
    # a blank line writes no run: run 3 is the fourth line; two runs give their union
    assert runs_box("@2 @3", 1, lines, (100, 100)) == [10, 30, 90, 60]
    # a later window numbers its runs from 1: its run 1 is the page's run `first`
    assert runs_box("@1", 3, lines, (100, 100)) == [20, 50, 90, 60]
    assert runs_box("4", 1, lines, (100, 100)) is None and runs_box("@9", 1, lines, (100, 100)) is None
    assert runs_box("@1", 1, None, (100, 100)) is None
