"""Decoding image bytes with errors that name where the bytes came from. An image of more pixels than PIL's
decompression-bomb limit (`Image.MAX_IMAGE_PIXELS`, twice it for PIL's own error) is refused in one line naming
where it came from: no data set of the papers has one, and decoding it could exhaust the memory.

A grayscale image deeper than 8 bits (PIL modes I;16, I and F: a 16-bit PNG, an integer or float TIFF) is scaled to
8 bits by its own range, which PIL's `convert("RGB")` does not do (it clips at 255: a 16-bit PNG all white, a float
TIFF all black): integers by their bit depth (16 for I;16 and a PNG, the TIFF's BitsPerSample), floats from [0, 1].
One whose range is unknown (integers of another format, negative values, floats outside [0, 1]) is refused."""

import io

from PIL import Image, UnidentifiedImageError

from hypvl.errors import InputError


class CorruptImage(InputError):
    """Image bytes that do not decode."""


class OversizedImage(InputError):
    """An image of more pixels than PIL decodes safely (a decompression bomb): refused, never skipped."""


def oversized(exc: Exception, where: str) -> OversizedImage:
    """The one-line refusal of PIL's DecompressionBombError `exc` for the image at `where`."""
    return OversizedImage(f"{where}: image refused: {exc}".rstrip("."))


DEEP_MODES = ("I", "F", "I;16", "I;16B", "I;16L", "I;16N")  # grayscale modes over 8 bits (module docstring)


def decode_image(data: bytes, where: str) -> Image.Image:
    """Decode `data` to an RGB PIL image; `where` names the file and record for the error."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            return _deep_to_rgb(img, where) if img.mode in DEEP_MODES else img.convert("RGB")
    except Image.DecompressionBombError as exc:
        raise oversized(exc, where) from None
    except CorruptImage:  # refused by _deep_to_rgb, its line whole
        raise
    except UnidentifiedImageError as exc:  # its message names a memory address: not reproducible
        raise CorruptImage(f"{where}: image does not decode (not an image format PIL identifies)") from exc
    except (OSError, ValueError) as exc:
        raise CorruptImage(f"{where}: image does not decode ({exc})") from exc


def _bit_depth(img: Image.Image) -> int | None:
    """The bits of an integer grayscale image's pixels, where its mode or format says them."""
    if img.mode.startswith("I;16") or img.format == "PNG":  # a PNG's mode I: 16 bits (its deepest)
        return 16
    bits = getattr(img, "tag_v2", {}).get(258) if img.format == "TIFF" else None  # BitsPerSample
    return int(bits[0] if isinstance(bits, tuple) else bits) if bits else None


def _deep_to_rgb(img: Image.Image, where: str) -> Image.Image:
    """An RGB image of grayscale `img` (a DEEP_MODES mode) scaled to 8 bits by its own range (module docstring)."""
    import numpy as np

    pixels = np.asarray(img, dtype=np.float64)
    low, high = (float(pixels.min()), float(pixels.max())) if pixels.size else (0.0, 0.0)
    bits = None if img.mode == "F" else _bit_depth(img)
    if img.mode == "F" and not (np.isfinite(pixels).all() and 0 <= low and high <= 1):
        raise CorruptImage(f"{where}: image refused: float pixels from {low:g} to {high:g}, outside [0, 1] (of no "
                           "known range); convert it to 8 bits")
    if img.mode != "F" and (bits is None or low < 0 or high >= 2**bits):
        depth = f"{bits}-bit" if bits else f"{img.format} mode-{img.mode}"
        raise CorruptImage(f"{where}: image refused: {depth} integer pixels from {low:g} to {high:g}, of no known "
                           "range; convert it to 8 bits")
    scaled = pixels * 255 if img.mode == "F" else pixels * (255 / (2**bits - 1))
    return Image.fromarray(np.rint(scaled).astype(np.uint8), "L").convert("RGB")


def encode_image(image: Image.Image, fmt: str = "JPEG", quality: int = 95) -> bytes:
    """Encode a PIL image as JPEG (quality 95, as HyCoCLIP's shards) or PNG bytes."""
    buf = io.BytesIO()
    image.save(buf, format=fmt, **({"quality": quality} if fmt == "JPEG" else {}))
    return buf.getvalue()


def border_resize(image: Image.Image, size: int, fill=(255, 255, 255)) -> Image.Image:
    """Resize so the longest side is `size`, then pad with `fill` to a centred `size` x `size` square: HyCoCLIP's
    `Resizer(224, "border")` (albumentations' longest_max_size, rounding each side, and pad), with PIL's box filter
    where it shrinks and Lanczos where it enlarges for OpenCV's INTER_AREA and INTER_LANCZOS4."""
    scale = size / max(image.size)
    w, h = max(1, round(image.width * scale)), max(1, round(image.height * scale))
    square = Image.new("RGB", (size, size), fill)
    resample = Image.Resampling.BOX if scale < 1 else Image.Resampling.LANCZOS
    resized = image.convert("RGB")
    resized = resized if (w, h) == resized.size else resized.resize((w, h), resample)
    square.paste(resized, ((size - w) // 2, (size - h) // 2))
    return square


def border_stored(image: Image.Image, size: int) -> Image.Image:
    """A whole image as HyCoCLIP's training shards store it (`prepare_GRIT_webdataset.py`, `redcaps_grounding.py`):
    border-resized to a `size` square and JPEG-encoded at quality 95, decoded again."""
    with Image.open(io.BytesIO(encode_image(border_resize(image, size)))) as stored:
        return stored.convert("RGB")
