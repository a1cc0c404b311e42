from jocr.errors import ERROR_CHARS, one_line


def test_an_error_is_its_first_line_with_single_spaces():
    error = RuntimeError("\n  page.goto:   net::ERR_NAME_NOT_RESOLVED \nCall log:\n  - navigating to x")
    assert one_line(error) == "page.goto: net::ERR_NAME_NOT_RESOLVED"


def test_an_empty_message_is_the_type_name_and_a_long_one_is_cut():
    assert one_line(ValueError("")) == "ValueError"
    assert one_line(ValueError("   \n  ")) == "ValueError"
    assert one_line(OSError("x" * 1000)) == "x" * ERROR_CHARS
    assert one_line(OSError("x" * 1000), 300) == "x" * 300
