"""A jocr model as a self-contained Hugging Face repository (`jocr export hf`, docs/export.md).

`bundle.py` turns jocr's own modules into the repository's code files, `export.py` writes the repository,
and `configuration.py`, `modeling.py`, `processing.py` and `recipe.py` are the exported entry points
(`configuration_jocr.py`, `modeling_jocr.py`, `processing_jocr.py`, `deepseek_ocr_mtp.py`).
"""
