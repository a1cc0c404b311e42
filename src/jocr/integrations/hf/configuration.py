"""The exported repository's config class (`configuration_jocr.py`, `auto_map["AutoConfig"]`).

It is the config class jocr's vLLM integration registers (model type "jocr"): jocr's `config.json` sections
kept as they are, with the decoder's fields repeated at top level for Transformers and vLLM.
"""

from jocr.integrations.vllm_config import JocrVllmConfig as JocrConfig

__all__ = ["JocrConfig"]
