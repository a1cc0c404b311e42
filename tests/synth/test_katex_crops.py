"""KaTeX formula crops (Chromium with Debian's KaTeX): the same crop for the same seed, the formula's ink
cut tight and set on paper, a refused formula left out, taller formulas taller."""

from __future__ import annotations

import numpy as np
import pytest

from jocr.synth.katex_crops import (
    FACED_CROPS,
    FACES,
    LONG_CROPS,
    KatexCropConfig,
    KatexTypesetter,
    katex_crops,
    refused,
)


@pytest.fixture(scope="module")
def typesetter():
    with KatexTypesetter() as renderer:
        yield renderer


def test_a_seed_gives_the_same_crop_and_its_formula(typesetter):
    first = katex_crops(range(5), typesetter)
    again = katex_crops([3, 4], typesetter)
    assert len(first) == 5
    for (image, latex), (same, same_latex) in zip(first[3:], again):
        assert latex == same_latex and np.array_equal(np.asarray(image), np.asarray(same))


def test_the_ink_is_cut_tight_and_set_on_paper_with_the_configured_margin(typesetter):
    [(coverage)] = typesetter.coverages([("x^{2}+y^{2}=z^{2}", 30)])
    assert coverage.dtype == np.uint8 and coverage.max() > 200
    assert coverage[0].max() > 12 and coverage[-1].max() > 12  # ink on the first and last rows
    assert coverage[:, 0].max() > 12 and coverage[:, -1].max() > 12
    assert 20 <= coverage.shape[0] <= 50 and coverage.shape[1] > 4 * coverage.shape[0]
    cfg = KatexCropConfig(margin_px=(5, 5), degrade_share=0.0)
    [(image, _)] = katex_crops([0], typesetter, cfg)
    grey = np.asarray(image.convert("L"))
    assert grey[:5].min() > 200 and grey[-5:].min() > 200 and grey[:, :5].min() > 200  # paper round the ink


def test_taller_constructs_print_taller_and_a_refused_formula_is_none(typesetter):
    flat, matrix, bad = typesetter.coverages(
        [("a+b", 30), ("\\begin{pmatrix}a & b \\\\ c & d\\end{pmatrix}", 30), ("\\frac{a}{", 30)]
    )
    assert matrix.shape[0] > 1.8 * flat.shape[0] and bad is None
    assert refused(["x=1", "\\nocommand{x}"], typesetter) == ["\\nocommand{x}"]


def test_long_crops_hold_formulas_of_the_configured_length_and_are_wider(typesetter):
    long = katex_crops(range(6), typesetter, LONG_CROPS)
    short = katex_crops(range(6), typesetter)
    assert len(long) >= 5
    assert all(LONG_CROPS.min_chars <= len(latex) <= LONG_CROPS.max_chars for _, latex in long)
    assert np.median([im.size[0] for im, _ in long]) > 1.5 * np.median([im.size[0] for im, _ in short])


def test_a_typeface_sets_the_letters_and_every_face_papers_use_is_installed(typesetter):
    import subprocess

    installed = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True).stdout
    assert [face for face in FACES if face not in installed] == []  # .ci/apt-packages.txt
    tex = "x_{i}^{2}+\\mathbf{B}=\\sum_{k=1}^{n}\\frac{a}{b}"
    own, termes, pagella = typesetter.coverages(
        [(tex, 30), (tex, 30, "TeX Gyre Termes"), (tex, 30, "TeX Gyre Pagella")]
    )
    assert own.shape != termes.shape and termes.shape != pagella.shape  # other glyphs, other widths
    crops = katex_crops(range(40), typesetter, FACED_CROPS)
    plain = katex_crops(range(40), typesetter, KatexCropConfig(faces=FACED_CROPS.faces))  # face_share 0
    differs = sum(not np.array_equal(np.asarray(a), np.asarray(b)) for (a, _), (b, _) in zip(crops, plain))
    assert differs == 29  # these seeds draw another face for 29 of 40 (face_share 0.75)
