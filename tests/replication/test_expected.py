"""The papers' printed numbers in expected/: every file loads, every number is in its paper's text,
the loader rejects malformed files, and the tables agree with what the papers themselves state."""

import hashlib
import os
import re
import statistics
from pathlib import Path

import pytest

from hypvl.errors import InputError
from hypvl.spec.expected import load_expected, parse_cell

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED = REPO_ROOT / "expected"
# the paper texts are not distributed with the repository: they sit beside a checkout, or where HYPVL_PAPERS says
PAPERS = Path(os.environ.get("HYPVL_PAPERS", REPO_ROOT.parent / "shared" / "papers"))
FIXTURES = REPO_ROOT / "tests" / "data" / "expected"
NUMBERS = REPO_ROOT / "tests" / "data" / "paper_numbers"
EXPECTED_CSVS = sorted(EXPECTED.glob("*/*.csv"))
PAPER_NAMES = ["hycoclip", "meru", "hierarcaps", "syntax_vse", "poinclip"]

_NUMBER_TOKEN = re.compile(r"(?<![\d.])([+\-\u2212]?)(\d+(?:\.\d+)?)(?!\d|\.\d)")


def table(paper, name):
    """Load expected/<paper>/<name>.csv."""
    return load_expected(EXPECTED / paper / f"{name}.csv")


def number_tokens(text):
    """Every number in `text` as printed, unsigned and (where a sign precedes it) signed."""
    tokens = set()
    for sign, digits in _NUMBER_TOKEN.findall(text):
        tokens.add(digits)
        if sign:
            tokens.add(("-" if sign in "-\u2212" else "+") + digits)
    return tokens


def printed_values(path):
    """(row, column, printed number) for every numeric cell of an expected CSV."""
    loaded = load_expected(path)
    return [(row, col, cell.printed) for (row, col), cell in loaded.cells.items() if cell.printed is not None]


def row_values(loaded, row, columns=None):
    """The numbers of one row, over `columns` (default: all value columns)."""
    return [loaded.value(row, col) for col in (columns or loaded.columns)]


# (a) every expected CSV loads, and each paper folder documents its tables ---------------------------


def test_every_paper_has_expected_tables():
    assert sorted(path.name for path in EXPECTED.iterdir() if path.is_dir()) == sorted(PAPER_NAMES)
    counts = {paper: len(list((EXPECTED / paper).glob("*.csv"))) for paper in PAPER_NAMES}
    assert counts == {"hycoclip": 10, "meru": 6, "hierarcaps": 7, "syntax_vse": 3, "poinclip": 5}


@pytest.mark.parametrize("path", EXPECTED_CSVS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_expected_csv_loads_and_is_documented(path):
    loaded = load_expected(path)
    assert loaded.rows and loaded.columns
    assert len(loaded.cells) == len(loaded.rows) * len(loaded.columns)
    sources = (path.parent / "SOURCES.md").read_text(encoding="utf-8")
    assert f"## {path.name}" in sources, f"{path.parent.name}/SOURCES.md has no section for {path.name}"


# (b) every printed number occurs in the paper's text as a number token ------------------------------
# The texts are their authors' and publishers' copyright, so the repository does not carry them; it carries each
# paper's number tokens (tests/data/paper_numbers/<paper>.txt: numbers only, no prose, and the sha256 of the text
# they were read from), against which every printed number is checked on every machine. Where the texts are
# (HYPVL_PAPERS, or ../shared/papers beside the checkout), each index is also checked against its text.


def number_index(paper):
    """(sha256 of the paper's text the index was read from, its number tokens) from tests/data/paper_numbers."""
    header, *tokens = (NUMBERS / f"{paper}.txt").read_text(encoding="utf-8").splitlines()
    return header.rsplit(" ", 1)[-1], set(tokens)


def write_number_index(paper):
    """Write tests/data/paper_numbers/<paper>.txt from the paper's text under PAPERS."""
    text = (PAPERS / f"{paper}.txt").read_bytes()
    lines = [f"# number tokens of {paper}.txt, sha256 {hashlib.sha256(text).hexdigest()}",
             *sorted(number_tokens(text.decode("utf-8")))]
    (NUMBERS / f"{paper}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("path", EXPECTED_CSVS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_number_occurs_in_paper_text(path):
    _, tokens = number_index(path.parent.name)
    missing = [(row, col, printed) for row, col, printed in printed_values(path) if printed not in tokens]
    assert not missing, f"{path}: numbers not in {path.parent.name}'s text: {missing}"


@pytest.mark.parametrize("paper", PAPER_NAMES)
def test_each_number_index_is_well_formed(paper):
    """What can be checked of an index without its text, on every machine: a sha256 header, its tokens sorted and
    unique, and exactly the number tokens `number_tokens` reads from themselves (no prose, nothing hand-added)."""
    lines = (NUMBERS / f"{paper}.txt").read_text(encoding="utf-8").splitlines()
    digest, tokens = number_index(paper)
    assert re.fullmatch(r"# number tokens of .+\.txt, sha256 [0-9a-f]{64}", lines[0]) and len(digest) == 64
    assert lines[1:] == sorted(tokens) and number_tokens("\n".join(lines[1:])) == tokens


@pytest.mark.parametrize("paper", PAPER_NAMES)
def test_each_number_index_is_read_from_its_papers_text(paper):
    text = PAPERS / f"{paper}.txt"
    if not text.is_file():
        # the only check that needs the text itself; the index it guards is still checked against every printed
        # number (test_every_number_occurs_in_paper_text) and still runs wherever the texts are
        pytest.skip(f"{text} is absent (the texts are copyrighted, so the repository cannot carry them): the index "
                    "is not re-read from it here; point HYPVL_PAPERS at the texts to run this check")
    digest, tokens = number_index(paper)
    assert (digest, tokens) == (hashlib.sha256(text.read_bytes()).hexdigest(), number_tokens(text.read_text(
        encoding="utf-8"))), f"rewrite it: python tests/replication/test_expected.py (with {PAPERS} holding the texts)"


def test_number_tokens_are_whole_numbers():
    tokens = number_tokens(r"R@5 41.7% $\frac{11.1}{8.5}$ 151M v1.2.3 −0.25")
    assert {"5", "41.7", "11.1", "8.5", "151", "0.25", "-0.25"} <= tokens
    assert not {"1", "1.2", "2.3", "3", "41", "1.1"} & tokens


# (c) the loader: cell grammar, and malformed files rejected with file and line -----------------------


def test_valid_fixture_parses_every_cell_form():
    loaded = load_expected(FIXTURES / "valid.csv")
    assert loaded.rows == ["clip", "meru"]
    assert loaded.columns == ["imagenet", "cifar10", "cars", "tie"]
    assert loaded.labels["clip"] == {"_data": "GRIT", "_model": "CLIP, boxes"}
    both = loaded.cells[("clip", "imagenet")]
    assert (both.value, both.printed, both.bold, both.underline, both.token) == (45.8, "45.8", True, True, None)
    underlined = loaded.cells[("clip", "cifar10")]
    assert (underlined.printed, underlined.bold, underlined.underline) == ("3.7", False, True)
    assert loaded.cells[("meru", "imagenet")].bold and not loaded.cells[("meru", "imagenet")].underline
    assert [loaded.cells[key].token for key in [("clip", "cars"), ("meru", "cifar10"), ("meru", "cars")]] == [
        "-",
        "dnc",
        "n/a",
    ]
    assert loaded.value("meru", "cifar10") is None
    assert loaded.cells[("meru", "tie")].value == -0.25 and loaded.cells[("meru", "tie")].printed == "-0.25"


def test_printed_keeps_trailing_zeros():
    cell = parse_cell("__5.0__")
    assert cell.printed == "5.0" and cell.value == 5.0 and cell.underline


@pytest.mark.parametrize(
    "fixture, line, fragment",
    [
        ("wrong_column_count.csv", 3, "3 columns, header has 4"),
        ("duplicate_row.csv", 4, "duplicate row 'clip'"),
        ("empty_header.csv", 1, "empty header"),
        ("malformed_letter.csv", 3, "malformed cell '4l.7'"),
        ("malformed_marks.csv", 2, "malformed cell '**41.7'"),
        ("unknown_token.csv", 3, "unknown token 'N/A'"),
        ("empty_cell_after_multiline.csv", 4, "empty value cell"),
    ],
)
def test_loader_rejects_malformed_file_naming_file_and_line(fixture, line, fragment):
    path = FIXTURES / fixture
    with pytest.raises(InputError) as raised:
        load_expected(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert fragment in message


# (d) structural facts and totals the papers state themselves ---------------------------------------


def test_hycoclip_table1_shape_and_row_order():
    t1 = table("hycoclip", "table1")
    assert len(t1.rows) == 13 and len(t1.columns) == 16
    assert t1.rows[:5] == [
        "redcaps_vits_clip_repro",
        "redcaps_vits_clip_boxes",
        "redcaps_vits_meru_repro",
        "redcaps_vits_meru_boxes",
        "redcaps_vits_hycoclip",
    ]
    assert t1.rows[-3:] == ["grit_vitb_clip", "grit_vitb_meru", "grit_vitb_hycoclip"]
    assert [t1.labels[row]["_boxes"] for row in t1.rows].count("✓") == 7


def test_hycoclip_table9_repeats_table1_2_5_and_its_mean16():
    t1, t2, t5, t9 = (table("hycoclip", name) for name in ("table1", "table2", "table5", "table9"))
    grit_s = "grit_vits_hycoclip"
    assert round(statistics.fmean(row_values(t1, grit_s)), 1) == t9.value("vits_hycoclip", "mean16") == 41.1
    for col in ["imagenet", "cifar100", "sun397", "food101"]:
        assert t9.value("vits_hycoclip", col) == t1.value(grit_s, col)
    for col in ["coco_i2t_r5", "coco_t2i_r5", "tie", "lca", "jaccard", "h_precision", "h_recall"]:
        assert t9.value("vits_hycoclip", col) == t2.value("vits_hycoclip", col)
    for col in ["vlc_object", "vg_attribution"]:
        assert t9.value("vits_hycoclip", col) == t5.value("hycoclip", col)


def test_hycoclip_best_on_15_of_16_grit_datasets():
    """Table 1 caption: 'Our method outperforms baselines on 15 out of the 16 evaluation datasets.'"""
    t1 = table("hycoclip", "table1")
    grit = [row for row in t1.rows if row.startswith("grit_")]
    wins = [
        col
        for col in t1.columns
        if max(t1.value(r, col) for r in grit if r.endswith("hycoclip"))
        >= max(t1.value(r, col) for r in grit if not r.endswith("hycoclip"))
    ]
    assert len(wins) == 15 and "eurosat" not in wins
    # Sec. 3.2: "an accuracy of 45.8% compared to 40.1% (MERU) and 40.6% (CLIP)".
    assert [t1.value(r, "imagenet") for r in ["grit_vitb_hycoclip", "grit_vitb_meru", "grit_vitb_clip"]] == [
        45.8,
        40.1,
        40.6,
    ]


def test_meru_table5_average_is_mean_of_16_and_last_row_is_table2_clip():
    t2, t5 = table("meru", "table2"), table("meru", "table5")
    datasets = t5.columns[:16]
    assert t5.columns[16] == "average"
    for row in t5.rows:
        assert round(statistics.fmean(row_values(t5, row, datasets)), 1) == t5.value(row, "average"), row
    assert row_values(t5, "our_prompts", datasets) == row_values(t2, "vits_clip", datasets)


def test_meru_bold_marks_the_better_of_each_clip_meru_pair():
    """Tables 1-3: 'Best performance in every column is highlighted in green' (bold), per backbone/width pair;
    Table 2 highlights only its first 16 datasets."""
    for name, n_marked in [("table1", 8), ("table2", 16), ("table3", 3)]:
        loaded = table("meru", name)
        for clip_row, meru_row in zip(loaded.rows[0::2], loaded.rows[1::2]):
            for index, col in enumerate(loaded.columns):
                pair = [loaded.cells[(clip_row, col)], loaded.cells[(meru_row, col)]]
                best = max(cell.value for cell in pair)
                expected_bold = [index < n_marked and cell.value == best for cell in pair]
                assert [cell.bold for cell in pair] == expected_bold, (name, clip_row, col)


def test_meru_ablation_and_width_tables_repeat_main_models():
    t1, t2, t3, t4 = (table("meru", name) for name in ("table1", "table2", "table3", "table4"))
    for backbone in ["vitb", "vitl"]:
        assert row_values(t4, f"{backbone}_meru") == [
            t1.value(f"{backbone}_meru", "coco_t2i_r5"),
            t1.value(f"{backbone}_meru", "coco_i2t_r5"),
            t2.value(f"{backbone}_meru", "imagenet"),
        ]
    for model in ["clip", "meru"]:
        assert row_values(t3, f"vitl_{model}_width512") == [
            t1.value(f"vitl_{model}", "coco_t2i_r5"),
            t1.value(f"vitl_{model}", "coco_i2t_r5"),
            t2.value(f"vitl_{model}", "imagenet"),
        ]
    assert [t4.cells[("vitl_lorentz_inner_contrastive", col)].token for col in t4.columns] == ["dnc"] * 3


def test_hierarcaps_marks_follow_caption_and_tables_repeat_table1():
    """Table 1 caption: 'Best results are in bold; ties are underlined' within each zero-shot/FT pair."""
    t1 = table("hierarcaps", "table1")
    for base, tuned in zip(t1.rows[0::2], t1.rows[1::2]):
        for col in t1.columns:
            a, b = t1.cells[(base, col)], t1.cells[(tuned, col)]
            if a.value == b.value:
                assert (a.underline, b.underline, a.bold, b.bold) == (True, True, False, False), (base, col)
            else:
                assert (a.bold, b.bold) == (a.value > b.value, b.value > a.value), (base, col)
    t3, t4, t5, t6, t7 = (table("hierarcaps", f"table{n}") for n in (3, 4, 5, 6, 7))
    for row in ["clip_b", "clip_b_ft"]:
        assert row_values(t3, row) == row_values(t1, row, t3.columns)
        assert row_values(t5, row) == row_values(t1, row, t5.columns)
        assert row_values(t6, row) == row_values(t1, row, t6.columns)
    for row in t1.rows:
        assert row_values(t4, row, ["coco_t2i_r1", "coco_t2i_r5", "cifar10", "cifar100"]) == row_values(
            t1, row, ["coco_t2i_r1", "coco_t2i_r5", "cifar10", "cifar100"]
        )
    assert row_values(t7, "ours") == row_values(t1, "clip_b", ["breeds_r1", "breeds_r5"]) + row_values(
        t1, "clip_b_ft", ["breeds_r1", "breeds_r5"]
    )


def test_syntax_vse_stated_counts():
    """Sec. 4: better on 11 of 16 datasets, +14.5 on Food-101; better in 10 of 13 VL-CheckList subcategories."""
    t1, t3 = table("syntax_vse", "table1"), table("syntax_vse", "table3")
    better = [col for col in t1.columns if t1.value("syntax_meru", col) > t1.value("meru", col)]
    assert len(better) == 11
    assert round(t1.value("syntax_meru", "food101") - t1.value("meru", "food101"), 1) == 14.5
    assert len(t3.columns) == 13
    assert sum(t3.value("syntax_meru", col) > t3.value("meru", col) for col in t3.columns) == 10


def test_poinclip_baselines_are_merus_numbers_and_stated_counts():
    p1, p2, p3, p4, p5 = (table("poinclip", f"table{n}") for n in range(1, 6))
    m1, m2 = table("meru", "table1"), table("meru", "table2")
    for row in p1.rows:
        if not row.endswith("poinclip"):
            assert row_values(p1, row) == row_values(m2, row, p1.columns), row
            assert row_values(p2, row) == row_values(m1, row, p2.columns), row
    assert row_values(p3, "vits_poinclip") == row_values(p2, "vits_poinclip")
    assert row_values(p5, "vits_poinclip") == row_values(p1, "vits_poinclip")
    # Table 1 caption: PoinCLIP "outperforms all methods in 13 out of 18 datasets" (ties counted).
    held = [
        col
        for col in p1.columns
        if max(p1.value(r, col) for r in p1.rows if r.endswith("poinclip"))
        >= max(p1.value(r, col) for r in p1.rows if not r.endswith("poinclip"))
    ]
    assert len(p1.columns) == 18 and len(held) == 13
    # Table 5 caption: PoinCLIP beats Poincaré "in 14 out of 18 datasets".
    assert sum(p5.value("vits_poinclip", col) > p5.value("vits_poincare", col) for col in p5.columns) == 14
    # Table 4 caption: best at lambda = lambda_reg = 0.1.
    assert max(p4.rows, key=lambda row: p4.value(row, "grid_score")) == "lambda_reg_0_1_lambda_0_1"


if __name__ == "__main__":  # rewrite every paper's number index from the texts under PAPERS
    for name in PAPER_NAMES:
        write_number_index(name)
