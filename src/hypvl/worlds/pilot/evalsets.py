"""The pilot world's evaluation sets beyond classification, as acquisition and the manifest's prepare steps leave
them. Each is drawn by the smoke world's writer (`hypvl.worlds.smoke`, in the real file formats) into a
scratch folder and packed as its host serves it:

- COCO 2017: `val2017.zip` (`val2017/<id:012d>.jpg`) and `annotations_trainval2017.zip` (`annotations/`: captions and
  instances of val2017 and train2017, person keypoints; the instances list all 80 categories);
- Flickr30K: Karpathy's `caption_datasets.zip` (`dataset_flickr30k.json`, `dataset_coco.json`,
  `dataset_flickr8k.json` at its top) and `nlphuji/flickr30k`'s `flickr30k-images.zip` (`flickr30k-images/`) on the
  Hub; the prepare step leaves `flickr30k_images/` in the dataset's folder;
- HierarCaps: the repository's `data/` CSVs served; the prepare step leaves `assets/test_imgs/`;
- WordNet: HyCoCLIP's `imagenet_isa.txt`, is-a edges over the 1000 ImageNet wnids;
- HyperLex: `hyperlex-data.zip` (`hyperlex-data/hyperlex-all.txt`);
- BREEDS: the three hierarchy files over the ImageNet wnids; the prepare step leaves a superclass split JSON;
- VL-CheckList: GitHub's source archive of the repository (`VL-CheckList-<commit>/corpus/`, `data/`), Visual
  Genome's `images.zip` (`VG_100K/`) and `images2.zip` (`VG_100K_2/`), and SWiG's `images_512.zip` (`images_512/`);
  the manual step leaves `hake/`;
- ARO VG-Attribution: `visual_genome_attribution.json` and `vgr_vga_images.zip` (`images/`) at their Drive URLs.
"""

import gzip
import json
import tempfile
from pathlib import Path

from PIL import Image

from hypvl.data.formats.breeds import BreedsClass, BreedsHierarchy, BreedsSuperclass, write_breeds_hierarchy, \
    write_breeds_split
from hypvl.data.formats.wordnet_isa import IsaEdge
from hypvl.worlds.smoke import hierarcaps_sets, hyperlex_set, retrieval_sets, vg_attribution_set, vlchecklist_sets

from .classification import imagenet_wnids
from .world import PilotWorld, image_bytes, zip_bytes

# COCO 2017's categories beyond the 65 of the zero-shot split (the smoke world's), with their ids
COCO_OTHER_CATEGORIES = {
    10: ("traffic light", "outdoor"), 11: ("fire hydrant", "outdoor"), 13: ("stop sign", "outdoor"),
    14: ("parking meter", "outdoor"), 37: ("sports ball", "sports"), 39: ("baseball bat", "sports"),
    40: ("baseball glove", "sports"), 43: ("tennis racket", "sports"), 46: ("wine glass", "kitchen"),
    58: ("hot dog", "food"), 64: ("potted plant", "furniture"), 67: ("dining table", "furniture"),
    77: ("cell phone", "electronic"), 88: ("teddy bear", "indoor"), 89: ("hair drier", "indoor"),
}  # fmt: skip
ROOT = "n90000000"  # the root of the pilot's made-up ImageNet hierarchy
EMPTY_COCO = {"info": {}, "licenses": [], "images": [], "annotations": []}


def _files(folder: Path, prefix: str = "") -> dict[str, bytes]:
    """Every file under `folder` by its path relative to it (with `prefix`)."""
    return {prefix + path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def write_coco(world: PilotWorld) -> dict:
    """COCO's two archives in the mirror (what `coco_val2017` unpacks into val2017/ and annotations/)."""
    files = world.entry("coco_val2017")["files"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        captions, instances = (root / "annotations" / f"{kind}_val2017.json" for kind in ("captions", "instances"))
        counts = retrieval_sets.write_coco(world.settings.world(), captions, instances)
        body = json.loads(instances.read_text())
        body["categories"] = sorted(body["categories"] + [{"id": i, "name": name, "supercategory": sup}
                                                          for i, (name, sup) in COCO_OTHER_CATEGORIES.items()],
                                    key=lambda category: category["id"])
        instances.write_text(json.dumps(body))
        annotations = _files(root / "annotations", "annotations/")
        for name in ("captions_train2017", "person_keypoints_val2017", "person_keypoints_train2017"):
            annotations[f"annotations/{name}.json"] = json.dumps(EMPTY_COCO).encode()
        annotations["annotations/instances_train2017.json"] = json.dumps(
            {**EMPTY_COCO, "categories": body["categories"]}).encode()
        world.serve(files[0]["url"], zip_bytes(_files(root / "val2017", "val2017/")))
        world.serve(files[1]["url"], zip_bytes(annotations))
    return counts


def write_flickr30k(world: PilotWorld) -> dict:
    """Karpathy's split archive in the mirror, the Hub repository's image zip, and the images the prepare step
    leaves in `flickr30k_images/`."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        counts = retrieval_sets.write_flickr(world.settings.world(), root / "dataset_flickr30k.json")
        images = _files(root / "flickr30k_images")
        splits = {"dataset_flickr30k.json": (root / "dataset_flickr30k.json").read_bytes(),
                  **{f"dataset_{name}.json": json.dumps({"images": [], "dataset": name}).encode()
                     for name in ("coco", "flickr8k")}}
    world.serve(world.entry("flickr30k")["files"][0]["url"], zip_bytes(splits))
    hub = world.hub_folder("flickr30k")
    hub.mkdir(parents=True, exist_ok=True)
    (hub / "flickr30k-images.zip").write_bytes(zip_bytes({f"flickr30k-images/{n}": d for n, d in images.items()}))
    (hub / "flickr_annotations_30k.csv").write_text("raw,sentids,split,filename,img_id\n")  # not fetched
    for name, data in images.items():
        world.leave("flickr30k", f"flickr30k_images/{name}", data)
    return counts


def write_hierarcaps(world: PilotWorld) -> dict:
    """The repository's test and train CSVs in the mirror, and the test images the prepare step leaves in
    `assets/test_imgs/`."""
    urls = {Path(item["path"]).name: item["url"] for item in world.entry("hierarcaps")["files"]}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        test, train = root / "data" / "hierarcaps_test.csv", root / "data" / "hierarcaps_train.csv.gz"
        counts = hierarcaps_sets.write_hierarcaps_sets(world.settings.world(), test, train)
        world.serve(urls["hierarcaps_test.csv"], test.read_bytes())
        world.serve(urls["hierarcaps_test_expanded.csv.gz"], gzip.compress(test.read_bytes(), mtime=0))
        world.serve(urls["hierarcaps_train.csv.gz"], train.read_bytes())
        for name, data in _files(root / "assets" / "test_imgs").items():
            world.leave("hierarcaps", f"assets/test_imgs/{name}", data)
    return counts


def imagenet_hierarchy(group: int = 2) -> tuple[list[str], list[IsaEdge], dict[str, str]]:
    """(leaf wnids, is-a edges, node names) of a made-up hierarchy over the 1000 ImageNet wnids: each `group`
    consecutive classes under a parent node, every parent under one root. Node ids are wnid-shaped (`n9...`), which
    no ImageNet class uses."""
    leaves = imagenet_wnids()
    root = ROOT
    parents = [f"n9{1 + index:07d}" for index in range(-(-len(leaves) // group))]
    edges = [IsaEdge(root, parent) for parent in parents]
    edges += [IsaEdge(parents[index // group], leaf) for index, leaf in enumerate(leaves)]
    names = {root: "entity", **{parent: f"group {index}" for index, parent in enumerate(parents)},
             **{leaf: f"class {index}" for index, leaf in enumerate(leaves)}}
    return leaves, edges, names


def write_wordnet(world: PilotWorld) -> dict:
    """HyCoCLIP's `imagenet_isa.txt` in the mirror."""
    _, edges, _ = imagenet_hierarchy()
    world.serve(world.entry("wordnet_isa")["files"][0]["url"],
                "".join(f"{edge.parent} {edge.child}\n" for edge in edges).encode())
    return {"edges": len(edges)}


def write_hyperlex(world: PilotWorld) -> dict:
    """`hyperlex-data.zip` in the mirror: `hyperlex-data/hyperlex-all.txt` (the smoke world's pairs) and the noun
    and verb files beside it."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "hyperlex-all.txt"
        counts = hyperlex_set.write_hyperlex_set(world.settings.world(), path)
        text = path.read_bytes()
    header = text.split(b"\n", 1)[0] + b"\n"
    world.serve(world.entry("hyperlex")["files"][0]["url"], zip_bytes({
        "hyperlex-data/hyperlex-all.txt": text, "hyperlex-data/nouns-verbs/hyperlex-nouns.txt": text,
        "hyperlex-data/nouns-verbs/hyperlex-verbs.txt": header}))
    return counts


def write_breeds(world: PilotWorld) -> dict:
    """BREEDS' three hierarchy files in the mirror (over the ImageNet classes), and a superclass split the prepare
    step leaves beside them (`entity2.json`: the first two class groups, the classes the pilot draws images of, each a
    superclass of one source and one target class)."""
    leaves, edges, names = imagenet_hierarchy()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write_breeds_hierarchy(root, BreedsHierarchy(tuple(BreedsClass(i, w, names[w]) for i, w in enumerate(leaves)),
                                                     tuple(edges), names))
        for item in world.entry("breeds")["files"]:
            world.serve(item["url"], (root / item["path"]).read_bytes())
    number = {wnid: index for index, wnid in enumerate(leaves)}
    groups = [edge.child for edge in edges if edge.parent == ROOT][:2]
    members = [[number[edge.child] for edge in edges if edge.parent == group] for group in groups]
    split = [BreedsSuperclass(label, group, names[group], tuple(m[::2]), tuple(m[1::2]))
             for label, (group, m) in enumerate(zip(groups, members))]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "entity2.json"
        write_breeds_split(path, split)
        world.leave("breeds", path.name, path.read_bytes())
    return {"classes": len(leaves), "superclasses": len(split)}


VLC_COMMIT = "6f8d6a3" + "0" * 33  # the full commit GitHub names the archive's top folder after (made up past 6f8d6a3)


def write_vl_checklist(world: PilotWorld) -> dict:
    """VL-CheckList's source archive and Visual Genome's two image zips in the mirror."""
    files = world.entry("vl_checklist")["files"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        counts = vlchecklist_sets.write_vlchecklist_sets(world.settings.world(), root)
        top = f"VL-CheckList-{VLC_COMMIT}/"
        world.serve(files[0]["url"], zip_bytes({**_files(root / "corpus", top + "corpus/"),
                                                **_files(root / "data", top + "data/"),
                                                top + "README.md": b"# VL-CheckList\n"}))
        world.serve(files[1]["url"], zip_bytes(_files(root / "vg")))  # VG_100K/
        world.serve(files[2]["url"], zip_bytes({}))  # VG_100K_2/: no item of the pilot's lies there
        # SWiG's and HAKE's images: no item of the pilot's either; a picture where each real one puts its own (the
        # zip's top folder; hake/, which the manual step fills)
        picture = image_bytes(Image.new("RGB", (8, 8)), "JPEG")
        world.serve(files[3]["url"], zip_bytes({"images_512/standin_1.jpg": picture}))
        world.leave("vl_checklist", "hake/openimages/standin_1.jpg", picture)
    return counts


def write_vg_attribution(world: PilotWorld) -> dict:
    """ARO's VG-Attribution JSON and its image zip (`images/`) in the mirror."""
    files = world.entry("vg_attribution")["files"]
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "visual_genome_attribution.json"
        counts = vg_attribution_set.write_vg_attribution_set(world.settings.world(), path)
        world.serve(files[0]["url"], path.read_bytes())
        world.serve(files[1]["url"], zip_bytes(_files(path.parent / "images", "images/")))
    return counts


WRITERS = {"coco_val2017": write_coco, "flickr30k": write_flickr30k, "hierarcaps": write_hierarcaps,
           "wordnet_isa": write_wordnet, "hyperlex": write_hyperlex, "breeds": write_breeds,
           "vl_checklist": write_vl_checklist, "vg_attribution": write_vg_attribution}


def write_evaluation_sets(world: PilotWorld) -> dict:
    """Every evaluation set above; returns what each writer wrote, by manifest dataset."""
    return {name: writer(world) for name, writer in WRITERS.items()}
