"""Reproducible scan/photo degradations with a graded strength, for robustness training.

`degrade(image, strength, rng)` applies a random subset of: rotation/skew, low contrast, scan artefacts
(uneven illumination, specks, an edge shadow), blur, noise and JPEG re-encoding. `strength` in (0, 1] scales
every parameter; the operations and their order come from `rng`, so a (seed, strength) pair always gives
the same bytes. The clean page is kept by the caller (the twin used for consistency training).
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageFilter


@dataclass
class DegradeConfig:
    """Maxima reached at strength 1."""

    max_rotation_deg: float = 3.0
    max_shear: float = 0.03
    max_blur_radius: float = 1.6
    max_noise_sigma: float = 18.0
    min_jpeg_quality: int = 20
    max_contrast_loss: float = 0.55
    max_shading: float = 0.35
    op_probability: dict[str, float] = field(
        default_factory=lambda: {
            "rotate": 0.5,
            "shear": 0.2,
            "contrast": 0.4,
            "scan": 0.4,
            "blur": 0.5,
            "noise": 0.5,
            "jpeg": 0.6,
        }
    )


def _grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column coordinates as float32 (H, 1) and (1, W): they broadcast to `np.mgrid`'s (H, W)
    planes with the same value in every element, without holding two page-sized arrays."""
    return np.arange(h, dtype=np.float32)[:, None], np.arange(w, dtype=np.float32)[None, :]


def _to_image(pixels: np.ndarray) -> Image.Image:
    """Float pixels (H, W, 3) -> an RGB image, clipped to [0, 255] and rounded half to even (as
    `ndarray.round`), in place: `pixels` is a scratch array of the caller's."""
    np.clip(pixels, 0, 255, out=pixels)
    np.rint(pixels, out=pixels)
    return Image.fromarray(pixels.astype(np.uint8), mode="RGB")


def _rotate(image: Image.Image, rng: random.Random, s: float, cfg: DegradeConfig, log: dict) -> Image.Image:
    angle = rng.uniform(-1, 1) * cfg.max_rotation_deg * s
    log["rotate_deg"] = round(angle, 3)
    fill = image.getpixel((0, 0))
    return image.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=fill)


def _shear(image: Image.Image, rng: random.Random, s: float, cfg: DegradeConfig, log: dict) -> Image.Image:
    k = rng.uniform(-1, 1) * cfg.max_shear * s
    log["shear"] = round(k, 4)
    w, h = image.size
    fill = image.getpixel((0, 0))
    # Affine maps output (x, y) to input (x + k*y - k*h/2, y): a horizontal skew about the page centre.
    return image.transform((w, h), Image.AFFINE, (1, k, -k * h / 2, 0, 1, 0), Image.BICUBIC, fillcolor=fill)


def _contrast(pixels: np.ndarray, rng: random.Random, s: float, cfg: DegradeConfig, log: dict) -> np.ndarray:
    loss = rng.uniform(0.3, 1.0) * cfg.max_contrast_loss * s
    log["contrast_loss"] = round(loss, 3)
    mean = pixels.mean()
    return mean + (pixels - mean) * (1.0 - loss)


def _scan(pixels: np.ndarray, rng: random.Random, s: float, cfg: DegradeConfig, log: dict) -> np.ndarray:
    h, w = pixels.shape[:2]
    nrng = np.random.default_rng(rng.getrandbits(64))
    # Uneven illumination: a smooth gradient across the page.
    gx, gy = rng.uniform(-1, 1), rng.uniform(-1, 1)
    ys, xs = _grid(h, w)
    shade = (gx * (xs / w - 0.5) + gy * (ys / h - 0.5)) * cfg.max_shading * s * 255
    pixels = pixels - np.abs(shade)[..., None]
    # Dust specks.
    n_specks = int(nrng.integers(0, 1 + 40 * s * (w * h) / (384 * 384)))
    for _ in range(n_specks):
        y, x = int(nrng.integers(0, h)), int(nrng.integers(0, w))
        r = int(nrng.integers(1, 3))
        pixels[max(0, y - r) : y + r, max(0, x - r) : x + r] *= 0.3
    # A dark shadow along one edge, as from a scanner lid or a book's gutter.
    if rng.random() < 0.5:
        width = int(w * rng.uniform(0.01, 0.05) * s) + 1
        ramp = np.linspace(0.35, 1.0, width, dtype=np.float32)
        if rng.random() < 0.5:
            pixels[:, :width] *= ramp[None, :, None]
        else:
            pixels[:, w - width :] *= ramp[::-1][None, :, None]
    log["scan_specks"] = n_specks
    return pixels


def _noise(pixels: np.ndarray, rng: random.Random, s: float, cfg: DegradeConfig, log: dict) -> np.ndarray:
    sigma = rng.uniform(0.3, 1.0) * cfg.max_noise_sigma * s
    log["noise_sigma"] = round(sigma, 2)
    nrng = np.random.default_rng(rng.getrandbits(64))
    return pixels + nrng.normal(0.0, sigma, size=pixels.shape[:2])[..., None]


def degrade(
    image: Image.Image, strength: float, rng: random.Random, cfg: DegradeConfig | None = None
) -> tuple[Image.Image, dict[str, Any]]:
    """Return (degraded RGB image, log of what was applied). At least one operation is always applied."""
    cfg = cfg or DegradeConfig()
    s = float(min(max(strength, 0.0), 1.0))
    ops = [name for name, p in cfg.op_probability.items() if rng.random() < p]
    if not ops:
        ops = [rng.choice(sorted(cfg.op_probability))]
    log: dict[str, Any] = {"strength": round(s, 3), "ops": ops}
    out = image.convert("RGB")
    if "rotate" in ops:
        out = _rotate(out, rng, s, cfg, log)
    if "shear" in ops:
        out = _shear(out, rng, s, cfg, log)
    if {"contrast", "scan", "noise"} & set(ops):
        pixels = np.asarray(out, dtype=np.float32).copy()  # (H, W, 3)
        if "contrast" in ops:
            pixels = _contrast(pixels, rng, s, cfg, log)
        if "scan" in ops:
            pixels = _scan(pixels, rng, s, cfg, log)
        if "noise" in ops:
            pixels = _noise(pixels, rng, s, cfg, log)
        out = _to_image(pixels)
    if "blur" in ops:
        radius = rng.uniform(0.3, 1.0) * cfg.max_blur_radius * s
        log["blur_radius"] = round(radius, 3)
        out = out.filter(ImageFilter.GaussianBlur(radius))
    if "jpeg" in ops:
        quality = int(round(95 - (95 - cfg.min_jpeg_quality) * s * rng.uniform(0.4, 1.0)))
        log["jpeg_quality"] = quality
        buffer = io.BytesIO()
        out.save(buffer, format="JPEG", quality=quality)
        buffer.seek(0)
        out = Image.open(buffer).convert("RGB")
    return out, log


def _perspective_coefficients(src: list[tuple[float, float]], dst: list[tuple[float, float]]) -> list[float]:
    """The 8 coefficients PIL's PERSPECTIVE transform takes: for each output pixel (x, y) it samples the
    input at ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1)); solved from 4 pairs
    mapping output corners `dst` to input corners `src`."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(dst, src):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs.extend([u, v])
    return [float(c) for c in np.linalg.solve(np.asarray(rows, dtype=np.float64), np.asarray(rhs))]


def photograph(image: Image.Image, strength: float, rng: random.Random) -> tuple[Image.Image, dict[str, Any]]:
    """A page as a phone photographs it: the sheet in perspective on a darker surface, light falling off
    across it, a soft shadow band, slight blur and JPEG. Same (image, strength, rng state), same bytes."""
    s = float(min(max(strength, 0.0), 1.0))
    page = image.convert("RGB")
    w, h = page.size
    margin = 0.04 + 0.04 * s
    jitter = 0.06 * s
    canvas_w, canvas_h = int(w * (1 + 2 * margin)), int(h * (1 + 2 * margin))

    def corner(x: float, y: float) -> tuple[float, float]:
        return (
            (margin + x + rng.uniform(-jitter, jitter) * (1 if x else -1)) * w,
            (margin + y + rng.uniform(-jitter, jitter) * (1 if y else -1)) * h,
        )

    dst = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)]  # where the sheet's corners land
    src = [(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)]
    coefficients = _perspective_coefficients(src, dst)
    sheet = page.transform(
        (canvas_w, canvas_h), Image.Transform.PERSPECTIVE, coefficients, Image.Resampling.BICUBIC
    )
    mask = Image.new("L", page.size, 255).transform(
        (canvas_w, canvas_h), Image.Transform.PERSPECTIVE, coefficients, Image.Resampling.BILINEAR
    )
    surface = tuple(rng.randint(60, 120) for _ in range(3))
    out = Image.composite(sheet, Image.new("RGB", (canvas_w, canvas_h), surface), mask)
    pixels = np.asarray(out, dtype=np.float32)  # (H, W, 3)
    yy, xx = _grid(canvas_h, canvas_w)
    angle = rng.uniform(0, 2 * np.pi)
    ramp = np.cos(angle) * xx / canvas_w + np.sin(angle) * yy / canvas_h
    ramp = (ramp - ramp.min()) / max(float(np.ptp(ramp)), 1e-6)
    light = 1.0 - 0.35 * s * ramp  # (H, W)
    band_centre, band_width = rng.uniform(0.2, 0.8) * canvas_w, rng.uniform(0.05, 0.15) * canvas_w
    shadow = 1.0 - 0.25 * s * np.exp(-(((xx - band_centre) / band_width) ** 2))
    pixels = pixels * (light * shadow)[..., None]
    out = _to_image(pixels)
    radius = 0.4 + 0.8 * s * rng.random()
    out = out.filter(ImageFilter.GaussianBlur(radius))
    quality = int(85 - 35 * s * rng.random())
    buffer = io.BytesIO()
    out.save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    log = {
        "strength": round(s, 3),
        "corners": [[round(c, 1) for c in p] for p in dst],
        "blur_radius": round(radius, 3),
        "jpeg_quality": quality,
        "surface": list(surface),
    }
    return Image.open(buffer).convert("RGB"), log
