"""The jocr model: DeepEncoder vision, DeepSeek-V2-style MoE decoder and the FastMTP draft head."""

from jocr.model.ocr import ModelOutput, MTPOutput, OCRModel

__all__ = ["MTPOutput", "ModelOutput", "OCRModel"]
