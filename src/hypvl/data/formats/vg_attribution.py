"""ARO's VG-Attribution (`visual_genome_attribution.json`, mertyg/vision-language-models-are-bows).

A JSON list of records with `image_path` (relative to `<json folder>/images`, ARO's layout),
`bbox_x`, `bbox_y`, `bbox_w`, `bbox_h` (pixels; the image is cropped to this box), `true_caption`,
`false_caption` (attributes swapped) and `attributes` (the two attribute words). Other fields are ignored.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .common import (
    Where,
    check_kind,
    field,
    load_json,
    resolve_image,
    string_list,
    write_json,
)


@dataclass(frozen=True)
class AttributionItem:
    """One test case: image, crop box (x, y, w, h), true and false caption, attribute pair."""

    image: Path
    bbox: tuple[float, float, float, float]
    true_caption: str
    false_caption: str
    attributes: tuple[str, str]


def default_image_root(json_path: Path) -> Path:
    """`<json folder>/images`, ARO's layout."""
    return Path(json_path).parent / "images"


def read_vg_attribution(path: Path, image_root: Path | None = None, check_images: bool = True) -> list[AttributionItem]:
    """Validated records in file order."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    data = load_json(path)
    check_kind(data, list, "the top level", Where(path))
    items = []
    for index, entry in enumerate(data):
        where = Where(path, index)
        bbox = tuple(field(entry, f"bbox_{name}", float, where) for name in "xywh")
        if bbox[2] <= 0 or bbox[3] <= 0 or bbox[0] < 0 or bbox[1] < 0:
            raise where.error(f"crop box (x, y, w, h) = {bbox} needs x, y >= 0 and w, h > 0")
        attributes = string_list(field(entry, "attributes", list, where), "attributes", where)
        if len(attributes) != 2:
            raise where.error(f"'attributes' should hold two words, got {len(attributes)}")
        items.append(
            AttributionItem(
                resolve_image(root, field(entry, "image_path", str, where), where, check_images),
                bbox,
                field(entry, "true_caption", str, where),
                field(entry, "false_caption", str, where),
                attributes,
            )
        )
    return items


def write_vg_attribution(path: Path, items: Sequence[AttributionItem], image_root: Path | None = None) -> None:
    """Write `items` (images under `image_root`, default as for reading) as ARO's JSON list."""
    root = default_image_root(path) if image_root is None else Path(image_root)
    write_json(
        path,
        [
            {
                "image_path": Path(item.image).relative_to(root).as_posix(),
                **dict(zip(("bbox_x", "bbox_y", "bbox_w", "bbox_h"), item.bbox)),
                "true_caption": item.true_caption,
                "false_caption": item.false_caption,
                "attributes": list(item.attributes),
            }
            for item in items
        ],
    )
