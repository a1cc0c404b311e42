"""Models to parse with: find a model directory, load it once, build engines per decoding setting."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jocr.tokenizer import Tokenizer

DEFAULT_MAX_TOKENS = 4096  # jina-ocr-v1's published default
DEFAULT_BATCH_SIZE = 8
MODEL_ENV = "JOCR_MODEL"
# A model directory may hold a second model directory under this name that reads anchored prompts while the
# outer model reads images (jocr.pipeline.bundle; docs/parsing.md, "The bundled models").
ANCHORED_MEMBER = "anchored"
# A model directory may hold a third model directory under this name that answers every question and
# extraction prompt (jocr.pipeline.ask, the server's asking requests) and reads no page (docs/asking.md, "The
# asking member"); it is loaded on the first question.
ASK_MEMBER = "ask"
# A model directory may hold a fourth member under this name: the formula reader
# (jocr.model.formula_reader), a smaller shape of its own that reads formula crops for `--task formula`
# and the formula regions of pages read from pixels (jocr.pipeline.formulas; docs/elements.md, "The
# formula reader"); loaded on the first formula.
FORMULA_MEMBER = "formula"
# The most drafts adaptive k tries on a model answering in run references: a verify pass of 8 positions is
# still a decode shape for the kernels (jocr.model.kernels.MAX_ROWS), 9 are not (measured: docs/engine.md).
REFERENCE_MAX_DRAFTS = 7


class ModelNotFoundError(FileNotFoundError):
    """No usable model directory; the message says where it looked and how to point at one."""


# Where the bundled models are found: inside the installed package (a wheel carries them there, copied from
# the repository's models/ at build time by scripts/bundle_models.py), else in the source checkout this
# package is imported from (src/jocr -> models/ at the repository root: an editable install or PYTHONPATH).
BUNDLED_MODELS = "bundled_models"


def default_model_dir() -> Path:
    """$JOCR_MODEL, else the bundled models (`bundled_model_dir`)."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env)
    return bundled_model_dir()


def bundled_model_dir(package: Path | None = None) -> Path:
    """The bundled models of the jocr package at `package` (default: this one): `<package>/bundled_models`
    in an installed wheel, else `models/` at the root of the source checkout holding `src/jocr`. When
    neither has a config.json, the place the package should have them (for the error message)."""
    package = package or Path(__file__).resolve().parents[1]
    installed = package / BUNDLED_MODELS
    candidates = [installed]
    if package.parent.name == "src":
        candidates.append(package.parent.parent / "models")
    for candidate in candidates:
        if (candidate / "config.json").is_file():
            return candidate
    return candidates[-1]


@dataclass
class LoadedModel:
    """A model ready to parse with: network, tokenizer, and engines built on demand per decoding setting."""

    model: Any  # jocr.model.OCRModel
    tokenizer: Tokenizer
    path: str | None = None
    device: str = "cpu"
    anchored: LoadedModel | None = None  # the bundle's member for anchored prompts, if the directory has one
    # Loads the bundle's asking member (ASK_MEMBER), if the directory has one: `asker` calls it once.
    ask_loader: Callable[[], LoadedModel] | None = field(default=None, repr=False)
    # Loads the bundle's formula reader (FORMULA_MEMBER), if the directory has one: `formula_reader` calls
    # it once.
    formula_loader: Callable[[], Any] | None = field(default=None, repr=False)
    _engines: dict = field(default_factory=dict, repr=False)
    _ask: LoadedModel | None = field(default=None, repr=False)
    _member_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _formula: Any = field(default=None, repr=False)

    @property
    def has_formula_member(self) -> bool:
        return self.formula_loader is not None

    @property
    def formula_reader(self):
        """The bundle's formula reader as (model, vocab), loaded on first use; None without one."""
        return None if self.formula_loader is None else self._member("_formula", self.formula_loader)

    @property
    def has_ask_member(self) -> bool:
        return self.ask_loader is not None

    @property
    def asker(self) -> LoadedModel:
        """The model that answers question and extraction prompts: the bundle's asking member (loaded on
        first use) when it has one, else this model (with its anchored member, as pages are read)."""
        return self if self.ask_loader is None else self._member("_ask", self.ask_loader)

    def _member(self, slot: str, loader: Callable[[], Any]) -> Any:
        """The member kept in `slot`, loaded by `loader` on first use (once, whichever thread asks first)."""
        with self._member_lock:
            if getattr(self, slot) is None:
                setattr(self, slot, loader())
            return getattr(self, slot)

    @property
    def vision(self):
        return self.model.config.vision

    @property
    def has_mtp(self) -> bool:
        return getattr(self.model, "mtp_module", None) is not None

    @property
    def reads_anchors(self) -> bool:
        """Whether this model was trained to read anchored prompts (and answers in run references)."""
        return getattr(getattr(self.model.config, "anchor", None), "version", 0) > 0

    @property
    def anchor_config(self):
        """The `jocr.config.AnchorConfig` of the model that reads anchored prompts: the bundle's anchored
        member if there is one, else this model's (version 0: trained without anchors)."""
        from jocr.config import AnchorConfig

        reader = self.anchored or self
        return getattr(reader.model.config, "anchor", None) or AnchorConfig()

    def engine(self, spec: str | int = "auto", batch_size: int = DEFAULT_BATCH_SIZE):
        """The engine for a speculative setting: "auto" (adaptive k with the FastMTP head when the checkpoint
        has one; with the reference lookup for a model that reads anchors), 0 (plain greedy decoding) or
        k >= 1 draft tokens per step. Greedy either way: speculation never changes the output. One engine
        per setting, kept: its scheduler and the callers that decode between pages share it."""
        key = (normalise_spec(spec), batch_size)
        if key not in self._engines:
            self._engines[key] = self.new_engine(*key)
        return self._engines[key]

    def new_engine(self, spec: str | int = "auto", batch_size: int = DEFAULT_BATCH_SIZE):
        """An engine of its own (its own cache), not kept: for a pass that may decode while the stream's
        scheduler decodes on `engine(...)` in another thread (`jocr.pipeline.formulas`)."""
        from jocr.engine import Engine, EngineConfig
        from jocr.engine.reference_lookup import ReferenceLookup

        spec = normalise_spec(spec)
        # A model that reads anchors answers in run references, which the reference lookup drafts alone,
        # up to REFERENCE_MAX_DRAFTS a step: its FastMTP head, if any, is not run (measured on anchored
        # pages, its drafts were rarely accepted and its catch-up over each long prompt cost more than
        # they saved: docs/engine.md).
        references = self.reads_anchors and ReferenceLookup.from_tokenizer(self.tokenizer) is not None
        if spec == 0 or (spec == "auto" and not self.has_mtp and not references):
            drafts = dict(drafter="none", num_draft_tokens=0)
        elif references:
            drafts = dict(drafter="refs", num_draft_tokens=spec)
            drafts["max_draft_tokens"] = REFERENCE_MAX_DRAFTS
        elif not self.has_mtp:
            raise ValueError(f"--spec {spec} needs a FastMTP head, which this model lacks (use --spec 0)")
        else:
            drafts = dict(drafter="mtp", num_draft_tokens=spec)
        config = EngineConfig(
            max_batch_size=batch_size,
            eos_token_id=self.tokenizer.eos_id,
            pad_token_id=self.tokenizer.pad_id,
            **drafts,
        )
        # The engine exempts the tokenizer's `<td>`/`</td>` from the repetition guard itself.
        return Engine(self.model, config, tokenizer=self.tokenizer)

    def runner(
        self, spec: str | int = "auto", batch_size: int = DEFAULT_BATCH_SIZE, max_queue: int | None = None
    ):
        """A `jocr.engine.Scheduler` over `engine(spec, batch_size)`: submit (with callbacks), close. For a
        bundle, a `jocr.pipeline.bundle.BundleRunner` that sends anchored prompts to the anchored member."""
        from jocr.engine import Scheduler

        queue = 4 * batch_size + 16 if max_queue is None else max_queue
        image = Scheduler(self.engine(spec, batch_size), max_queue=queue)
        if self.anchored is None:
            return image
        from jocr.pipeline.bundle import BundleRunner

        anchored = self.anchored
        return BundleRunner(image, lambda: anchored.runner(spec, batch_size, queue), self.tokenizer)


def normalise_spec(spec: str | int) -> str | int:
    if isinstance(spec, str) and spec.strip().lower() == "auto":
        return "auto"
    try:
        k = int(spec)
    except (TypeError, ValueError):
        raise ValueError(f"spec must be 'auto' or a number of draft tokens >= 0, not {spec!r}") from None
    if k < 0:
        raise ValueError(f"spec must be 'auto' or a number of draft tokens >= 0, not {spec!r}")
    return k


_MODEL_CACHE: dict[tuple[str, str, str, str, int | None], LoadedModel] = {}


def load_model(
    path: str | os.PathLike | None = None,
    device: str = "cpu",
    dtype: Any = "auto",
    cache: bool = True,
    quantize: str = "none",
    max_tiles: int | None = None,
) -> LoadedModel:
    """Load a model directory (config.json, model.safetensors, tokenizer.json).

    path None: $JOCR_MODEL, else the bundled `models/`. dtype "auto" (or None): the fastest format that rounds
    nothing (jocr.model.formats: bf16 on CUDA; on CPU fp32 compute over the stored bytes), "float32" or
    "bfloat16"; quantize "int8" is the opt-in lossy CPU format. max_tiles replaces the config's tile-count
    limit (`VisionConfig.max_tiles`). Loaded models are cached per (path, device, dtype, quantize, max_tiles)
    so repeated `jocr.parse` calls do not reload.
    """
    import torch

    directory = Path(path) if path is not None else default_model_dir()
    hint = f"pass a model directory (--model DIR / path=...) or set ${MODEL_ENV}"
    if not directory.is_dir():
        raise ModelNotFoundError(f"no model directory at {directory}; {hint}")
    missing = [n for n in ("config.json", "tokenizer.json") if not (directory / n).is_file()]
    if not any(directory.glob("*.safetensors")):
        missing.append("*.safetensors")
    if missing:
        raise ModelNotFoundError(f"model directory {directory} lacks {', '.join(missing)}; {hint}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device cuda requested but CUDA is not available (use --device cpu)")
    if dtype is None:
        dtype = "auto"
    if isinstance(dtype, torch.dtype):
        dtype = str(dtype).removeprefix("torch.")
    key = (str(directory.resolve()), device, str(dtype), quantize, max_tiles)
    if cache and key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    from jocr.model.formats import load_formatted

    model = load_formatted(directory, dtype=dtype, quantize=quantize, device=device).eval()
    if max_tiles is not None:
        model.config.vision.max_tiles = int(max_tiles)
        model.config.vision.validate()
    member = anchored_member(directory)
    asking = ask_member(directory)
    loaded = LoadedModel(
        model=model,
        tokenizer=Tokenizer.from_dir(directory),
        path=str(directory),
        device=device,
        anchored=load_model(member, device, dtype, cache, quantize, max_tiles) if member else None,
    )
    if loaded.anchored is not None:
        check_bundle(loaded, loaded.anchored)
    if asking is not None:
        check_ask_member(directory, asking)

        def load_asking() -> LoadedModel:
            return load_model(asking, device, dtype, cache, quantize, max_tiles)

        loaded.ask_loader = load_asking
    reader = formula_member(directory)
    if reader is not None:

        def load_reader():
            from jocr.model.formula_reader import load_formula_reader

            return load_formula_reader(reader)

        loaded.formula_loader = load_reader
    if cache:
        _MODEL_CACHE[key] = loaded
    return loaded


def anchored_member(directory: str | os.PathLike) -> Path | None:
    """The bundle's anchored member inside a model directory (ANCHORED_MEMBER), if it has one."""
    member = Path(directory) / ANCHORED_MEMBER
    return member if (member / "config.json").is_file() else None


def formula_member(directory: str | os.PathLike) -> Path | None:
    """The bundle's formula reader inside a model directory (FORMULA_MEMBER), if it has one."""
    from jocr.model.formula_reader import is_formula_reader

    member = Path(directory) / FORMULA_MEMBER
    return member if is_formula_reader(member) else None


def bundle_members(directory: str | os.PathLike) -> list[tuple[str, Path]]:
    """("image", the directory) and each bundle member it holds ((ANCHORED_MEMBER, path), (ASK_MEMBER,
    path), (FORMULA_MEMBER, path)), in that order."""
    found = [("image", Path(directory))]
    members = (
        (ANCHORED_MEMBER, anchored_member(directory)),
        (ASK_MEMBER, ask_member(directory)),
        (FORMULA_MEMBER, formula_member(directory)),
    )
    for name, member in members:
        if member is not None:
            found.append((name, member))
    return found


def ask_member(directory: str | os.PathLike) -> Path | None:
    """The bundle's asking member inside a model directory (ASK_MEMBER), if it has one."""
    member = Path(directory) / ASK_MEMBER
    return member if (member / "config.json").is_file() else None


def check_ask_member(directory: str | os.PathLike, member: Path) -> None:
    """Before any weight is loaded: a question's prompt is built with the bundle's tokenizer and views, so the
    asking member must share both, and it holds no member of its own. ValueError (one line) otherwise."""
    from jocr.config import OCRConfig

    where = f"asking member {member} of the bundle {directory}"
    if anchored_member(member) or ask_member(member):
        raise ValueError(f"{where} holds a bundle member of its own")
    if not (member / "tokenizer.json").is_file():
        raise ValueError(f"{where} lacks tokenizer.json")
    ours, theirs = OCRConfig.load(directory).vision, OCRConfig.load(member).vision
    tokenizers = [Tokenizer.from_dir(d).hf.to_str() for d in (Path(directory), member)]
    same_tokenizer = tokenizers[0] == tokenizers[1]
    if ours != theirs:
        raise ValueError(f"{where} has other vision settings than the bundle's image model")
    if not same_tokenizer:
        raise ValueError(f"{where} has another tokenizer than the bundle's image model")


def model_digest(directory: str | os.PathLike) -> str:
    """A hex digest of what a model directory reads with: its JSON files (config, tokenizer, shard index)
    and its safetensors weights, each by name, size and full contents, with its anchored member's and its
    formula reader's (not its asking member's: it reads no page, so adding one leaves the pages read as
    they were). Two directories holding the same model give the same digest wherever they are; a retrained
    model of the same shape gives another (a digest of safetensors headers and sizes alone would not tell
    them apart).
    Reads every weight byte once: 0.10 s for the bundled models (2 x 18 MB), about 2-2.5 s per GB
    (docs/batch.md, "Resuming")."""
    directory = Path(directory)
    digest = hashlib.sha256()
    roots = ((directory, ""), (anchored_member(directory), ANCHORED_MEMBER + "/"),
             (formula_member(directory), FORMULA_MEMBER + "/"))  # fmt: skip
    for root, prefix in roots:
        if root is None:
            continue
        for path in sorted([*root.glob("*.json"), *root.glob("*.safetensors")]):
            digest.update(f"{prefix}{path.name}\0{path.stat().st_size}\0".encode())
            with path.open("rb") as f:
                while chunk := f.read(1 << 22):
                    digest.update(chunk)
    return digest.hexdigest()


def anchor_config_of(directory: str | os.PathLike):
    """The `AnchorConfig` `LoadedModel.anchor_config` gives for this directory, read without loading weights
    (batch jobs decide anchoring before any model is loaded)."""
    from jocr.config import OCRConfig

    return OCRConfig.load(anchored_member(directory) or directory).anchor


def check_bundle(image: LoadedModel, anchored: LoadedModel) -> None:
    """A bundle's prompts are built once, with the image model's tokenizer and views, for either member: so
    the members must share both, and the anchored member must read anchors (and hold no member itself)."""
    from dataclasses import asdict

    where = f"anchored member {anchored.path} of the bundle {image.path}"
    if anchored.anchored is not None:
        raise ValueError(f"{where} holds a bundle member of its own")
    if not anchored.anchor_config.version:
        raise ValueError(f"{where} was trained without anchors (its config has no anchor version)")
    if asdict(anchored.vision) != asdict(image.vision):
        raise ValueError(f"{where} has other vision settings than the bundle's image model")
    if anchored.tokenizer.hf.to_str() != image.tokenizer.hf.to_str():
        raise ValueError(f"{where} has another tokenizer than the bundle's image model")
