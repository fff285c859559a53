"""The bad-input corpus, round two (issue 23): inputs tried as a new user and as an attacker would, each refused as
tests/trust/test_bad_inputs_malformed.py's are (the real `hypvl` command run in-process: a non-zero exit, exactly one
line on stderr naming the file and the problem, no traceback, no output file). What the refusals must also leave in
place (a folder the suite did not write, the raw corpus) is asserted in tests/trust/test_trust_faults.py.

Each case builds its input under `tmp_path` and returns (argv, the file the line must name, a regular expression for
the problem, the outputs that must not exist).
"""

import io
import json
import random
import shutil
import struct
import tarfile
import zipfile
import zlib

import pytest
import torch
import yaml

from helpers.bad_input_builders import (
    checkpoint_case,
    compare,
    config_case,
    data_check,
    metrics_record_case,
    refused_in_one_line,
    shard_member_case,
    tiny_checkpoint,
    write,
)
from helpers.format_fixtures import BUILDERS
from helpers.replication_fixture import OURS
from helpers.trust import ground_into_the_raw_folder, probe_into_a_folder_it_did_not_write
from helpers.unpack import empty_files
from hypvl.provenance import file_digest

# --------------------------------------------------------------------------- inputs


def bomb_png(side: int = 40_000) -> bytes:
    """A PNG whose header claims side x side pixels (1.6 G: over twice PIL's decompression-bomb limit) and that
    holds none: PIL refuses it as it opens it."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def oversized_image_in_a_folder(tmp_path):
    """An image folder whose first image is a decompression bomb."""
    path, _, _ = BUILDERS["imagefolder"](tmp_path)
    image = min(p for p in path.rglob("*") if p.suffix in (".jpg", ".png", ".jpeg"))
    image.write_bytes(bomb_png())
    argv, outs = data_check("imagefolder", path)
    return argv, image, r"image refused: Image size \(1600000000 pixels\) exceeds limit", outs


def key_in_two_shards(tmp_path):
    """A GRIT corpus of two shards, the second a copy of the first: every key twice."""
    path, _, _ = BUILDERS["grit"](tmp_path)
    second = path.with_name("00001.tar")
    shutil.copy(path, second)
    argv, outs = data_check("grit", path.parent)
    return argv, second, r"the same sample key is in .*00000\.tar", outs


def key_leaving_its_folder(tmp_path):
    """A GRIT shard whose first sample's members are named `../<key>.<ext>`: a key that grounding would copy into
    the member names of the shards it writes."""
    path, _, _ = BUILDERS["grit"](tmp_path)
    with tarfile.open(path) as archive:
        members = [(info, archive.extractfile(info).read()) for info in archive if info.isfile()]
    first = members[0][0].name.partition(".")[0]
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as archive:
        for info, data in members:
            if info.name.startswith(f"{first}."):
                info.name = f"../{info.name}"
            archive.addfile(info, io.BytesIO(data))
    argv, outs = data_check("grit", path)
    return argv, path, r"key holding '\.\.' or starting at '/': refused", outs


def retyped(dtype):
    """A checkpoint whose first weight matrix is stored as `dtype` (int8 quantised, or bool)."""
    def make(path):
        blob = tiny_checkpoint(path)
        key = next(k for k, v in blob["model"].items() if v.dim() == 2)
        blob["model"][key] = blob["model"][key].to(dtype) if dtype != torch.bool else torch.ones_like(
            blob["model"][key], dtype=torch.bool)
        torch.save(blob, path)
    return make


def with_nan(path):
    blob = tiny_checkpoint(path)
    key = next(k for k, v in blob["model"].items() if v.dim() == 2)
    blob["model"][key][0, 0] = float("nan")
    torch.save(blob, path)


def of_experiment(experiment):
    """A checkpoint whose recipe names another experiment than the one evaluated (`e`): copied into its place."""
    def make(path):
        blob = tiny_checkpoint(path)
        blob["recipe"]["experiment"] = experiment
        torch.save(blob, path)
    return make


def of_a_wider_backbone(path):
    """A checkpoint whose recipe says vit_b16 (width 96) holding vit_s16's weights (width 64): every block's weights
    have another shape, and the refusal names a few of them and counts the rest."""
    blob = tiny_checkpoint(path)
    blob["recipe"]["backbone"] = "vit_b16"
    torch.save(blob, path)


def standin_from_another_model(tmp_path):
    """`hypvl write-standin` of MERU's released ViT-L from a checkpoint that is not its table row's model."""
    tiny_checkpoint(tmp_path / "checkpoint.pt")
    out = tmp_path / "weights"
    argv = ["write-standin", "--kind", "released", "--file", "meru_vit_l.pth", "--checkpoint",
            str(tmp_path / "checkpoint.pt"), "--out", str(out), "--model-of", "meru_meru_vitl"]
    return argv, tmp_path / "checkpoint.pt", r"holds the model of experiment 'e' .*, not of 'meru_meru_vitl'", [out]


def stale_checkpoint(tmp_path):
    """tiny_clip's zs_cifar10.json records measuring a checkpoint whose bytes are another model's now."""
    argv, outs = compare(tmp_path)
    checkpoint = write(tmp_path / "results" / "smoke" / "models" / "tiny_clip" / "checkpoint.pt", "retrained\n")
    path = tmp_path / "results" / "smoke" / "metrics" / "tiny_clip" / "zs_cifar10.json"
    record = json.loads(path.read_text())
    record["provenance"].update(checkpoint=str(checkpoint), checkpoint_sha256="0" * 64, checkpoint_bytes=1,
                                checkpoint_mtime_ns=1)
    path.write_text(json.dumps(record))
    return argv, path, r"which now holds [0-9a-f]{12}\.\.\. \(changed since\): stale", outs


def steps_for_entries_differ(tmp_path):
    """Every metric JSON records a run config; the `train.steps_for` entry matching both models (`tiny_*`) says 300
    steps in tiny_clip's and 400 in tiny_meru's: one of them is stale."""
    argv, outs = compare(tmp_path)
    for experiment, tasks in OURS.items():
        for task in tasks:
            path = tmp_path / "results" / "smoke" / "metrics" / experiment / f"{task}.json"
            record = json.loads(path.read_text())
            steps = 300 if experiment == "tiny_clip" else 400
            record["provenance"]["run_config"] = {"train": {"steps": 200, "steps_for": {"tiny_*": steps}}}
            path.write_text(json.dumps(record))
    return argv, tmp_path / "results", r"steps_for\[tiny_\*\]: (300 vs 400|400 vs 300)", outs


def seed_case(seed):
    def build(tmp_path):
        out = tmp_path / "model"
        argv = ["train", "--spec", "replication/hycoclip.yaml", "--experiment", "hyco_clip_vits_grit", "--seed",
                str(seed), "--out", str(out), "--quiet"]
        return argv, f"--seed {seed}", "a seed is a whole number from 0 to 4294967295", [out / "checkpoint.pt"]
    return build


def acquire_case(archive: bytes, problem: str, member: str, limit: int | None = None, published: bool = True):
    """`hypvl acquire x --mirror M` of one archive (its sha256 published, or not) that the mirror serves; `member`: a
    file that must not be left (one it would unpack, or the archive itself)."""
    def build(tmp_path):
        (tmp_path / "mirror" / "x.invalid").mkdir(parents=True)
        (tmp_path / "mirror" / "x.invalid" / "a.zip").write_bytes(archive)
        digest = file_digest(tmp_path / "mirror" / "x.invalid" / "a.zip") if published else None
        item = {"url": "https://x.invalid/a.zip", "path": "a.zip", "sha256": digest, "unpack": True,
                **({"checksum_source": "this test"} if published else {}),
                **({"unpack_max_bytes": limit} if limit else {})}
        sources = write(tmp_path / "sources.yaml", yaml.safe_dump({"datasets": {"x": {"files": [item]}}}))
        dest = tmp_path / "dest"
        argv = ["acquire", "x", "--dest", str(dest), "--sources", str(sources), "--mirror", str(tmp_path / "mirror")]
        return argv, dest / "a.zip", problem, [dest / member]
    return build


def mirror_symlink_out(tmp_path):
    """`hypvl acquire x --mirror M` where the mirror's file is a symlink to a private file outside the mirror."""
    argv, named, _, outputs = acquire_case(b"", "", "a.zip", published=False)(tmp_path)
    secret = write(tmp_path / "home" / "secret.key", "a private key")
    secret.chmod(0o600)
    (tmp_path / "mirror" / "x.invalid" / "a.zip").unlink()
    (tmp_path / "mirror" / "x.invalid" / "a.zip").symlink_to(secret)
    return argv, tmp_path / "mirror" / "x.invalid" / "a.zip", r"a symlink in the mirror .* leads out of it", outputs


def zipped(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def corrupted(archive: bytes) -> bytes:
    """`archive` with bytes in the middle of its compressed data flipped: its index reads, its member does not."""
    middle = len(archive) // 3
    return archive[:middle] + bytes(b ^ 0xFF for b in archive[middle:middle + 16]) + archive[middle + 16:]


BOMB = zipped("zeros.bin", bytes(32 << 20))  # 32 MiB of zeros in about 32 kB

# --------------------------------------------------------------------------- the corpus

CASES = {
    # settings that are not finite or out of range
    "config_lr_inf": config_case("train: {lr: .inf}\n", r"config\.yaml:1: '\.inf' is not a finite number"),
    "config_lr_nan": config_case("train: {lr: .nan}\n", r"config\.yaml:1: '\.nan' is not a finite number"),
    "config_json_nan": lambda tmp_path: (
        ["synthesize", "--config-json", '{"train": {"lr": NaN}}', "--out", str(tmp_path / "out")], "--config-json",
        "NaN is not a finite number", [tmp_path / "out"]),
    "config_steps_10_to_the_12": config_case("train: {steps: 1000000000000}\n",
                                             "train.steps: 1000000000000 is greater than the maximum of 100000000"),
    "config_results_in_the_source_tree": config_case("results_dir: src/hypvl/results\n",
                                                     r"results_dir: src/hypvl/results lies inside the source tree"),
    "train_seed_negative": seed_case(-1),
    "train_seed_over_32_bits": seed_case(2**32),
    # images and shards
    "image_decompression_bomb": oversized_image_in_a_folder,
    "grit_shard_decompression_bomb": shard_member_case("grit", lambda m: m.update(jpg=bomb_png()),
                                                       r"image refused: Image size \(1600000000 pixels\)"),
    "shard_key_in_two_shards": key_in_two_shards,
    "shard_key_leaving_its_folder": key_leaving_its_folder,
    "grounded_folder_is_the_raw_folder": ground_into_the_raw_folder,
    # checkpoints and weights
    "checkpoint_of_another_experiment": checkpoint_case(
        of_experiment("hyco_clip_vits_redcaps"),
        r"holds the model of experiment 'hyco_clip_vits_redcaps' \(clip, vit_s16\), not of 'e'"),
    "standin_from_another_model": standin_from_another_model,
    "checkpoint_int8_weights": checkpoint_case(retyped(torch.int8), r"integer or boolean type .*\(torch\.int8\)"),
    "checkpoint_bool_weights": checkpoint_case(retyped(torch.bool), r"integer or boolean type .*\(torch\.bool\)"),
    "checkpoint_nan_weights": checkpoint_case(with_nan, r"not finite \(NaN or infinity\)"),
    "checkpoint_of_another_architecture": checkpoint_case(of_a_wider_backbone,
                                                          r"does not fit the model: .* and \d+ more$"),
    # compare: provenance against the row
    "metrics_of_another_model": metrics_record_case(
        lambda r: r["provenance"].update(model={"experiment": "tiny_meru", "method": "meru", "backbone": "vit_s16",
                                                "data": "grit"}),
        r"measured on the model of 'tiny_meru' \(method 'meru', not 'clip' as 'tiny_clip' declares\)"),
    "metrics_of_a_changed_checkpoint": stale_checkpoint,
    "metrics_steps_for_entry_differs": steps_for_entries_differ,
    # destinations
    "probe_dest_holds_other_files": probe_into_a_folder_it_did_not_write,
    # acquisition: archives
    "acquire_zip_bomb": acquire_case(BOMB, r"unpacks to 33554432 bytes, over the limit of 16777216 .*zip bomb",
                                     "zeros.bin"),
    "acquire_over_the_manifests_limit": acquire_case(zipped("a.txt", bytes(5000)),
                                                     "unpacks to 5000 bytes, over the limit of 4096", "a.txt", 4096),
    "acquire_corrupt_archive": acquire_case(corrupted(zipped("a.txt", random.Random(0).randbytes(20000))),
                                            "cannot unpack: .*; nothing of it was kept", "a.txt"),
    "acquire_web_page_for_an_archive": acquire_case(  # Drive's quota page, say, on a first fetch
        b"<!DOCTYPE html><html><head><title>Google Drive - Quota exceeded</title></head></html>",
        "sent a web page, not the archive the manifest unpacks; not kept", "a.zip", published=False),
    "acquire_tar_of_many_empty_files": acquire_case(empty_files(12_000), "holds 12000 members, over the limit of "
                                                    "10000 .*refused", "e/0"),
    "acquire_mirror_symlink_leaving_the_mirror": mirror_symlink_out,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_in_one_line(name, tmp_path, capsys, monkeypatch):
    refused_in_one_line(CASES[name], tmp_path, capsys, monkeypatch)
