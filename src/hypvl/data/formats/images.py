"""Decoding image bytes with errors that name where the bytes came from. An image of more pixels than PIL's
decompression-bomb limit (`Image.MAX_IMAGE_PIXELS`, twice it for PIL's own error) is refused in one line naming
where it came from: no data set of the papers has one, and decoding it could exhaust the memory."""

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


def decode_image(data: bytes, where: str) -> Image.Image:
    """Decode `data` to an RGB PIL image; `where` names the file and record for the error."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.convert("RGB")
    except Image.DecompressionBombError as exc:
        raise oversized(exc, where) from None
    except UnidentifiedImageError as exc:  # its message names a memory address: not reproducible
        raise CorruptImage(f"{where}: image does not decode (not an image format PIL identifies)") from exc
    except (OSError, ValueError) as exc:
        raise CorruptImage(f"{where}: image does not decode ({exc})") from exc


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
