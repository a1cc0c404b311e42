"""RapidOCR's wall-clock limit: a run in progress is stopped inside onnxruntime (not left to finish in the
background), nothing is left running after a read past the limit, and a read within it is unchanged."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jocr.lines import ocr_rapid
from jocr.lines.ocr_rapid import RapidTimeout, _Deadline, _engine, _timed_sessions
from jocr.synth.fonts import get_font


def page() -> Image.Image:
    image = Image.new("L", (600, 120), 255)
    ImageDraw.Draw(image).text((20, 40), "Bounded in time", fill=0, font=get_font("sans", "regular", 30))
    return image


def test_a_run_past_the_limit_is_stopped_by_onnxruntime():
    """The detector on a 1,024 px square takes seconds here; the limit's timer sets the run's terminate
    flag and onnxruntime gives up at its next operator instead of finishing."""
    detector = _timed_sessions(_engine(2000, False))[0]
    feeds = {detector.get_inputs()[0].name: np.zeros((1, 3, 1024, 1024), np.float32)}  # (B, C, H, W)
    names = [o.name for o in detector.get_outputs()]
    with _Deadline(0.02) as deadline, pytest.raises(Exception, match="terminate flag") as info:
        deadline.run(detector._session, names, feeds)
    assert not isinstance(info.value, RapidTimeout)  # it had started: stopped inside, not refused
    with pytest.raises(RapidTimeout, match="rapidocr ran past 0.02 s"):  # and no run starts after the limit
        deadline.run(detector._session, names, feeds)


def test_a_read_past_the_limit_leaves_no_thread_and_no_deadline_behind():
    threads = threading.active_count()
    with pytest.raises(RapidTimeout):
        ocr_rapid.read(page(), 2000, 0.3, False, timeout_s=0.001)
    assert threading.active_count() == threads
    sessions = _timed_sessions(_engine(2000, False))
    assert sessions and all(s.deadline is None for s in sessions)
    within = ocr_rapid.read(page(), 2000, 0.3, False, timeout_s=60.0)
    assert [ln.text for ln in within] == ["Bounded in time"]
    assert [ln.text for ln in ocr_rapid.read(page(), 2000, 0.3, False)] == ["Bounded in time"]


def test_the_detector_scales_a_short_image_up_to_the_least_side_it_is_given():
    """A crop 120 px tall is scaled up to 480 px (not RapidOCR's own 736) before detection when
    `det_min_side` is 480, and still reads; the detector gets what that says, (1, 3, 480, 2400)."""
    shapes = []
    detector = _timed_sessions(_engine(2000, False, 480))[0]
    inner = detector._session

    class Spy:
        def run(self, names, feeds, options=None):
            shapes.append(next(iter(feeds.values())).shape)
            return inner.run(names, feeds, options)

        def __getattr__(self, name):
            return getattr(inner, name)

    detector._session = Spy()
    try:
        lines = ocr_rapid.read(page(), 2000, 0.3, False, det_min_side=480)
    finally:
        detector._session = inner
    assert shapes == [(1, 3, 480, 2400)]
    assert [ln.text for ln in lines] == ["Bounded in time"]
