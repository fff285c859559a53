"""Tests for the dataset catalog against MERU's printed Tables 2, 6 and 8.

The table excerpts below are copied verbatim from the MERU paper text (ICML 2023; Table 2 header,
Table 6 body, Table 8 body as extracted: tab-separated, Table 8's three printed columns flattened
row by row). The tests parse them, so every count and prompt is checked against the paper itself.
"""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import yaml

from hypvl.data.catalog import CATALOG_DIR, dataset_names, load_dataset_info, prompts_for
from hypvl.errors import InputError

TABLE2_HEADER = '\t\tImageNet\tFood-101\tCIFAR-10\tCIFAR-100\tCUB\tSUN397\tCars\tAircraft\tDTD\tPets\tCaltech-101\tFlowers\tSTL-10\tEuroSAT\tRESISC45\tCountry211\tMNIST\tCLEVR\tPCAM\tSST2'
TABLE6_LINES = (
    'Dataset\tClasses\tTrain\tVal\tTest',
    'Food-101 (Bossard et al., 2014)\t101\t68175\t7575\t25250',
    'CIFAR-10 (Krizhevsky, 2009)\t10\t45000\t5000\t10000',
    'CIFAR-100 (Krizhevsky, 2009)\t100\t45000\t5000\t10000',
    'CUB-2011 (Wah et al., 2011)\t200\t4795\t1199\t5794',
    'SUN397 (Xiao et al., 2010)\t397\t15880\t3970\t19849',
    'Stanford Cars (Krause et al., 2013)\t196\t6515\t1629\t8041',
    'FGVC Aircraft (Maji et al., 2013)\t100\t3334\t3333\t3333',
    'DTD (Cimpoi et al., 2014)\t47\t1880\t1880\t1880',
    'Oxf-IIIT Pets (Parkhi et al., 2012)\t37\t2944\t736\t3669',
    'Caltech-101 (Fei-Fei et al., 2004)\t102\t2448\t612\t6084',
    'Flowers (Nilsback & Zisserman, 2008)\t102\t1020\t1020\t6149',
    'STL-10 (Coates et al., 2011)\t10\t4000\t1000\t8000',
    'EuroSAT (Helber et al., 2019)\t10\t5000\t5000\t5000',
    'RESISC (Cheng et al., 2017)\t45\t3150\t3150\t25200',
    'Country211 (Radford et al., 2021)\t211\t31650\t10550\t21100',
    'MNIST (LeCun et al., 2010)\t10\t48000\t12000\t10000',
    'CLEVR Counts (Zhai et al., 2019)\t8\t4500\t500\t5000',
    'PCAM (Veeling et al., 2018)\t2\t262144\t32768\t32768',
    'SST2 (Radford et al., 2021)\t2\t6920\t872\t1821',
)
TABLE8_LINES = (
    '<b>ImageNet (our prompts)</b>\t\t',
    'i took a picture : itap of a {}.\tpics : a bad photo of the {}.\tpics : a origami {}.',
    'pics : a photo of the large {}.\tpics : a {} in a video game.\tpics : art of the {}.',
    'pics : a photo of the small {}.\t\t',
    '<b>Food-101 (our prompts)</b>\t<b>DTD (our prompts)</b>\t<b>Oxford Flowers (our prompts)</b>',
    'food : {}.\tpics : {} texture.\tflowers : {}.',
    'food porn : {}.\tpics : {} pattern.\t<b>STL10</b>',
    '<b>CIFAR-10 and CIFAR-100</b>\tpics : {} thing.\ta photo of a {}.',
    'a photo of a {}.\tpics : this {} texture.\ta photo of the {}.',
    'a blurry photo of a {}.\tpics : this {} pattern.\t<b>EuroSAT</b>',
    'a black and white photo of a {}.\tpics : this {} thing.\ta centered satellite photo of {}.',
    'a low contrast photo of a {}.\t<b>Oxford-IIIT Pets</b>\ta centered satellite photo of a {}.',
    'a high contrast photo of a {}.\ta photo of a {}, a type of pet.\ta centered satellite photo of the {}.',
    'a bad photo of a {}.\t<b>Caltech-101</b>\t<b>RESISC</b>',
    'a good photo of a {}.\ta photo of a {}.\tsatellite imagery of {}.',
    'a photo of a small {}.\ta painting of a {}.\taerial imagery of {}.',
    'a photo of a big {}.\ta plastic {}.\tsatellite photo of {}.',
    'a photo of the {}.\ta sculpture of a {}.\taerial photo of {}.',
    'a blurry photo of the {}.\ta sketch of a {}.\tsatellite view of {}.',
    'a black and white photo of the {}.\ta tattoo of a {}.\taerial view of {}.',
    'a low contrast photo of the {}.\ta toy {}.\tsatellite imagery of a {}.',
    'a high contrast photo of the {}.\ta rendition of a {}.\taerial imagery of a {}.',
    'a bad photo of the {}.\ta embroidered {}.\tsatellite photo of a {}.',
    'a good photo of the {}.\ta cartoon {}.\taerial photo of a {}.',
    'a photo of the small {}.\ta {} in a video game.\tsatellite view of a {}.',
    'a photo of the big {}.\ta plushie {}.\taerial view of a {}.',
    '<b>CUB-2011 (our prompts)</b>\ta origami {}.\tsatellite imagery of the {}.',
    'bird pics : {}.\tart of a {}.\taerial imagery of the {}.',
    'birding : {}.\tgraffiti of a {}.\tsatellite photo of the {}.',
    'birds : {}.\ta drawing of a {}.\taerial photo of the {}.',
    'bird photography : {}.\ta doodle of a {}.\tsatellite view of the {}.',
    '<b>SUN397</b>\ta photo of the {}.\taerial view of the {}.',
    'a photo of a {}.\ta painting of the {}.\t<b>Country211</b>',
    'a photo of the {}.\tthe plastic {}.\ta photo i took in {}.',
    '<b>Stanford Cars</b>\ta sculpture of the {}.\ta photo i took while visiting {}.',
    'a photo of a {}.\ta sketch of the {}.\ta photo from my home country of {}.',
    'a photo of the {}.\ta tattoo of the {}.\ta photo from my visit to {}.',
    'a photo of my {}.\tthe toy {}.\ta photo showing the country of {}.',
    'i love my {}!\ta rendition of the {}.\t<b>MNIST</b>',
    'a photo of my dirty {}.\tthe embroidered {}.\ta photo of the number: "{}".',
    'a photo of my clean {}.\tthe cartoon {}.\t<b>CLEVR</b>',
    'a photo of my new {}.\tthe {} in a video game.\ta photo of {} objects.',
    'a photo of my old {}.\tthe plushie {}.\t<b>Patch Camelyon</b>',
    '<b>FGVC Aircraft</b>\tthe origami {}.\tthis is a photo of {}.',
    'a photo of a {}, a type of aircraft.\tart of the {}.\t<b>Rendered SST2</b>',
    'a photo of the {}, a type of aircraft.\tgraffiti of the {}.\ta {} review of a movie.',
    '\ta drawing of the {}.\t',
    '\ta doodle of the {}.\t',
)

# Table 2 column order: the 20 zero-shot datasets, by catalog name.
NAMES = ("imagenet food101 cifar10 cifar100 cub sun397 cars aircraft dtd pets caltech101 flowers "
         "stl10 eurosat resisc45 country211 mnist clevr pcam sst2").split()
# Table 6 row label (before the citation) -> catalog name.
TABLE6_ROWS = {
    "Food-101": "food101", "CIFAR-10": "cifar10", "CIFAR-100": "cifar100", "CUB-2011": "cub",
    "SUN397": "sun397", "Stanford Cars": "cars", "FGVC Aircraft": "aircraft", "DTD": "dtd",
    "Oxf-IIIT Pets": "pets", "Caltech-101": "caltech101", "Flowers": "flowers",
    "STL-10": "stl10", "EuroSAT": "eurosat", "RESISC": "resisc45", "Country211": "country211",
    "MNIST": "mnist", "CLEVR Counts": "clevr", "PCAM": "pcam", "SST2": "sst2",
}
# Table 8 list header -> catalog names sharing that prompt list.
TABLE8_HEADERS = {
    "ImageNet (our prompts)": ["imagenet"], "Food-101 (our prompts)": ["food101"],
    "CIFAR-10 and CIFAR-100": ["cifar10", "cifar100"], "CUB-2011 (our prompts)": ["cub"],
    "SUN397": ["sun397"], "Stanford Cars": ["cars"], "FGVC Aircraft": ["aircraft"],
    "DTD (our prompts)": ["dtd"], "Oxford-IIIT Pets": ["pets"], "Caltech-101": ["caltech101"],
    "Oxford Flowers (our prompts)": ["flowers"], "STL10": ["stl10"], "EuroSAT": ["eurosat"],
    "RESISC": ["resisc45"], "Country211": ["country211"], "MNIST": ["mnist"], "CLEVR": ["clevr"],
    "Patch Camelyon": ["pcam"], "Rendered SST2": ["sst2"],
}


def table6() -> dict[str, dict[str, int]]:
    """Table 6 as {catalog name: {classes, train, val, test}}."""
    header, *rows = TABLE6_LINES
    assert header.split("\t") == ["Dataset", "Classes", "Train", "Val", "Test"]
    parsed = {}
    for row in rows:
        label, *numbers = row.split("\t")
        classes, train, val, test = map(int, numbers)
        parsed[TABLE6_ROWS[label.split(" (")[0]]] = dict(classes=classes, test=test)
    return parsed


def table8() -> dict[str, list[str]]:
    """Table 8 as {catalog name: prompts}. The ImageNet block spans all three printed columns
    (read row by row); after it, each printed column is read top to bottom, left to right."""
    start = next(i for i, line in enumerate(TABLE8_LINES) if line.startswith("<b>Food-101"))
    cells = [c for line in TABLE8_LINES[:start] for c in line.split("\t") if c]
    columns = [[], [], []]
    for line in TABLE8_LINES[start:]:
        for column, cell in zip(columns, line.split("\t")):
            if cell:
                column.append(cell)
    lists, current = {}, None
    for cell in cells + columns[0] + columns[1] + columns[2]:
        header = re.fullmatch(r"<b>(.*)</b>", cell)
        if header:
            current = lists.setdefault(header.group(1), [])
        else:
            current.append(cell)
    return {name: prompts for header, prompts in lists.items()
            for name in TABLE8_HEADERS[header]}


def test_catalog_holds_exactly_the_twenty_datasets_with_table2_names_in_order():
    assert dataset_names() == sorted(NAMES)
    printed = [c for c in TABLE2_HEADER.split("\t") if c]
    assert [load_dataset_info(n).display_name for n in NAMES] == printed


@pytest.mark.parametrize("name", sorted(TABLE6_ROWS.values()))
def test_sizes_classes_and_chance_match_table6(name):
    row = table6()[name]
    info = load_dataset_info(name)
    assert (info.num_classes, info.test_size) == (row["classes"], row["test"])
    assert len(info.class_names) == row["classes"]
    assert info.chance == pytest.approx(100 / row["classes"], abs=5e-5)
    assert info.metric == "mean_per_class_accuracy"


def test_table6_covers_every_dataset_but_imagenet():
    assert set(table6()) == set(NAMES) - {"imagenet"}


def test_imagenet_is_the_ilsvrc2012_validation_set():
    # ImageNet is absent from Table 6; 1000 classes and 50,000 validation images are the
    # ILSVRC-2012 figures, and MERU evaluates on the official val split.
    info = load_dataset_info("imagenet")
    assert (info.num_classes, info.test_size, info.split) == (1000, 50000, "val")
    assert info.chance == pytest.approx(0.1)


def test_imagenet_class_names_equal_openai_clip_list():
    """MERU's ImageNet names are OpenAI CLIP's list; open_clip ships the same list (read from its
    source file so the test does not import torch)."""
    location = importlib.util.find_spec("open_clip").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location(
        "zero_shot_metadata", Path(location) / "zero_shot_metadata.py")
    metadata = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(metadata)
    assert load_dataset_info("imagenet").class_names == tuple(metadata.IMAGENET_CLASSNAMES)


@pytest.mark.parametrize("name", NAMES)
def test_prompts_equal_table8(name):
    assert list(load_dataset_info(name).prompts) == table8()[name]


def test_table8_prompt_counts():
    # Counts per printed list, as a cross-check on the column reconstruction of Table 8.
    counts = {name: len(prompts) for name, prompts in table8().items()}
    assert counts == dict(imagenet=7, food101=2, cifar10=18, cifar100=18, cub=4, sun397=2,
                          cars=8, aircraft=2, dtd=6, pets=1, caltech101=34, flowers=1, stl10=2,
                          eurosat=3, resisc45=18, country211=5, mnist=1, clevr=1, pcam=1, sst2=1)


def test_prompts_for_fills_the_class_name():
    assert prompts_for("cars", "Tesla Model S Sedan 2012")[3] == "i love my Tesla Model S Sedan 2012!"
    assert prompts_for("mnist", "7") == ['a photo of the number: "7".']
    assert len(prompts_for("caltech101", "ant")) == 34


@pytest.mark.parametrize("name,split", [
    # MERU meru/evaluation/catalog.py SPLITS (test entries); references.md section 1.7.
    ("food101", "validation"), ("eurosat", "train[10000:15000]"), ("resisc45", "train[20%:]"),
    ("clevr", "validation[:5000]"), ("imagenet", "val"), ("country211", "test"),
])
def test_test_splits_follow_meru(name, split):
    assert load_dataset_info(name).split == split


@pytest.mark.parametrize("name", NAMES)
def test_absolute_slices_agree_with_test_size(name):
    info = load_dataset_info(name)
    match = re.fullmatch(r"\w+\[(\d*):(\d+)\]", info.split)
    if match:
        assert int(match.group(2)) - int(match.group(1) or 0) == info.test_size


def test_manual_downloads_are_flagged_with_instructions():
    manual = {n for n in NAMES if load_dataset_info(n).manual_download.required}
    assert manual == {"imagenet", "cars", "resisc45"}
    assert all(load_dataset_info(n).manual_download.instructions for n in manual)


def test_unknown_name_lists_known_datasets():
    with pytest.raises(InputError, match="imagenet1k.*aircraft, caltech101"):
        load_dataset_info("imagenet1k")


def _write_variant(tmp_path, edit) -> Path:
    """Copy the dtd entry into tmp_path after applying `edit` to its parsed record."""
    record = yaml.safe_load((CATALOG_DIR / "dtd.yaml").read_text())
    edit(record)
    path = tmp_path / "dtd.yaml"
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    return path


@pytest.mark.parametrize("edit,message", [
    (lambda r: r.update(num_classes=48), "num_classes is 48 but class_names has 47"),
    (lambda r: r["prompts"].append("a photo of {} and {}."), "exactly one"),
    (lambda r: r["prompts"].append("a photo."), "exactly one"),
    (lambda r: r.update(chance=2.0), "chance 2.0 is not 100/num_classes"),
    (lambda r: r.update(name="texture"), "does not match the file name"),
    (lambda r: r["class_names"].__setitem__(0, 3), "non-empty strings"),
    (lambda r: r.pop("split"), "missing fields \\['split'\\]"),
    (lambda r: r.update(layout="tar"), "layout must be one of"),
    (lambda r: r["manual_download"].update(required=True), "no instructions"),
    (lambda r: r["clip_prompts"].append("a {} {} texture."), "clip_prompts must hold exactly one"),
    (lambda r: r.update(clip_prompts=[]), "clip_prompts must hold exactly one"),
    (lambda r: r.update(clip_prompts="a photo of a {}."), "field 'clip_prompts' must be list"),
])
def test_malformed_entry_names_the_file(tmp_path, edit, message):
    path = _write_variant(tmp_path, edit)
    with pytest.raises(InputError, match=re.escape(str(path)) + ".*" + message):
        load_dataset_info("dtd", catalog_dir=tmp_path)


def test_invalid_yaml_names_the_file(tmp_path):
    shutil.copy(CATALOG_DIR / "dtd.yaml", tmp_path / "dtd.yaml")
    with open(tmp_path / "dtd.yaml", "a") as handle:
        handle.write("prompts: [unclosed\n")
    with pytest.raises(InputError, match=re.escape(str(tmp_path / "dtd.yaml")) + ": not valid YAML"):
        load_dataset_info("dtd", catalog_dir=tmp_path)


def test_prompt_sets_load_and_refuse_bad_files(tmp_path):
    from hypvl.data.catalog import load_prompt_set

    assert len(load_prompt_set("clip_imagenet_80")) == 80
    with pytest.raises(InputError, match="unknown prompt set 'nope'.*clip_imagenet_80"):
        load_prompt_set("nope")
    (tmp_path / "prompt_sets").mkdir()
    (tmp_path / "prompt_sets" / "bad.yaml").write_text("name: bad\nnotes: ''\nprompts: ['a photo of a dog']\n")
    with pytest.raises(InputError, match="bad.yaml: prompts must"):
        load_prompt_set("bad", tmp_path)


CLIP_PROMPTS_CHANGED = {"imagenet", "food101", "cub", "dtd", "flowers"}  # Table 8's "(our prompts)"


def test_clip_prompt_set_differs_only_where_meru_changed_the_prompts():
    for name in dataset_names():
        info = load_dataset_info(name)
        assert info.templates() == info.prompts == info.templates("meru")
        assert (info.templates("clip") != info.prompts) == (name in CLIP_PROMPTS_CHANGED), name
    # MERU's ImageNet prompts are CLIP's seven ensemble templates, each behind a subreddit prefix
    imagenet = load_dataset_info("imagenet")
    assert [prompt.split(" : ", 1)[1] for prompt in imagenet.prompts] == list(imagenet.templates("clip"))
    assert load_dataset_info("food101").templates("clip") == ("a photo of {}, a type of food.",)
    assert len(load_dataset_info("dtd").templates("clip")) == 8
    with pytest.raises(InputError, match="unknown prompt set 'openai' \\(known: meru, clip\\)"):
        imagenet.templates("openai")
