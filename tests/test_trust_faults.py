"""Faults of issue 23 that are more than one bad input: a server that redirects to another scheme or stalls, a warm
server reached by another user or sent garbage, a full or read-only disk, an input deleted mid-run, a step pointed
at a folder it did not write, a checkpoint in another experiment's place, a file dated in the future, and numbers
that are not finite on their way to a result file. Each test reproduces the fault and asserts what the suite does:
refuses in one line, leaves what it did not write as it was, and never reports a stale or NaN number."""

import errno
import http.server
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import torch
import yaml
from conftest import REPO
from safetensors.torch import load_file, save_file
from test_bad_inputs import tiny_checkpoint
from test_bad_inputs_2 import ground_into_the_raw_folder, probe_into_a_folder_it_did_not_write
from test_formats import BUILDERS, truncate
from test_library import open_clip_folder, transformers_folder
from test_replication import FIXTURE, OURS, write_metrics
from test_warm import FAKE_RUN, client, wait_for

from hypvl.cli import main
from hypvl.data.download import SameSchemeRedirects, fetch_file, url_opener
from hypvl.data.formats.clip_benchmark_wds import index_clip_benchmark_split
from hypvl.data.synthetic.build import write_raw_corpus
from hypvl.data.synthetic.settings import WorldSettings
from hypvl.errors import InputError
from hypvl.io import OUTPUTS, atomic_write, redate_future, write_json
from hypvl.models.checkpoints import save_checkpoint
from hypvl.models.library import import_library_model
from hypvl.replication.compare import compare_table
from hypvl.spec import load_spec
from hypvl.train.recipe import recorded_train_section

# --------------------------------------------------------------------------- network


class _Server(http.server.BaseHTTPRequestHandler):
    """/redirect: 302 to the same path over https; /stall: headers promising 100 bytes, then silence."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", f"https://{self.headers['Host']}/payload")
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.flush()
            time.sleep(5)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    """http://127.0.0.1:<port> served by _Server on a thread."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_https_download_redirected_to_http_is_refused():
    """A redirect from https to http is refused, naming both URLs, before anything is fetched in the clear."""
    request = urllib.request.Request("https://example.invalid/data.zip")
    with pytest.raises(InputError, match=r"data\.zip: redirected \(302\) to http://example\.invalid/data\.zip, "
                                         r"from https to http: refused"):
        SameSchemeRedirects().redirect_request(request, None, 302, "Found", {}, "http://example.invalid/data.zip")


def test_a_server_redirecting_to_another_scheme_gets_nothing_written(http_server, tmp_path):
    """A real server's redirect to another scheme ends the download at once (no retry), and no file is left."""
    with pytest.raises(InputError, match="from http to https: refused"):
        fetch_file(f"{http_server}/redirect", tmp_path / "a", opener=url_opener(("http",)), retries=2)
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_stalls_after_its_headers_fails_after_the_retries(http_server, tmp_path):
    """A server that sends its headers and then nothing: each attempt times out, and after the retry limit the
    download fails in one line, the part kept to resume from."""
    with pytest.raises(InputError, match=r"stall: download failed after 2 attempts \(timed out\)"):
        fetch_file(f"{http_server}/stall", tmp_path / "a", opener=url_opener(("http",), timeout=0.3), retries=1)
    assert not (tmp_path / "a").exists()


def test_a_tls_handshake_that_never_completes_times_out(tmp_path):
    """An https server that accepts the connection and never answers the handshake: the attempts time out."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/a"
        with pytest.raises(InputError, match="download failed after 2 attempts"):
            fetch_file(url, tmp_path / "a", opener=url_opener(timeout=0.3), retries=1)
    finally:
        listener.close()


def test_only_https_is_fetched_and_file_urls_only_from_a_mirror(tmp_path):
    """The default opener refuses a file:// URL (and plain http); the mirror's opener reads file:// only."""
    secret = tmp_path / "secret"
    secret.write_text("not for the manifest")
    for url in (secret.as_uri(), "http://example.invalid/a"):
        with pytest.raises(InputError, match="only https URLs are"):
            url_opener()(urllib.request.Request(url))
    with url_opener(("file",))(urllib.request.Request(secret.as_uri())) as response:
        assert response.read() == b"not for the manifest"


# --------------------------------------------------------------------------- the warm server


@pytest.fixture
def warm_server():
    """start(serve_as) -> (socket, log) of a warm server running tests/test_warm.py's FAKE_RUN that waits 1 s for a
    request, and believes it runs as another user than the tests' where `serve_as` is 'other' ('self': as theirs)."""
    started = []

    def start(serve_as: str):
        folder = Path(tempfile.mkdtemp(prefix="hypvl-test-"))
        socket_path, log = folder / "s", folder / "log"
        patch = "import os\nfrom hypvl import warm\nwarm.REQUEST_TIMEOUT = 1.0\n"
        if serve_as == "other":  # the server's user is not the caller's
            patch += "_uid = os.getuid()\nos.getuid = lambda: _uid + 1\n"
        with open(log, "w") as handle:
            process = subprocess.Popen([sys.executable, "-c", patch + FAKE_RUN, str(socket_path)], stdout=handle,
                                       stderr=handle)
        started.append((process, folder))
        wait_for(socket_path.exists)
        return socket_path, log

    yield start
    for process, folder in started:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


# what another user would send, with the standard library alone (hypvl's environment may be out of its reach)
ATTACKER = """
import json, socket, struct, sys
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(sys.argv[1])
request = json.dumps({"argv": ["job", "0"], "cwd": sys.argv[2], "env": {}}).encode()
try:
    socket.send_fds(connection, [struct.pack("!I", len(request))], [0, 1, 2])
    connection.sendall(request)
    print("served" if connection.recv(4) else "no child")
except OSError:  # reset: closed unread
    print("no child")
"""


def test_a_connection_from_another_user_is_refused_unserved(warm_server, tmp_path):
    """A client whose user is not the server's (SO_PEERCRED) gets no child: its command never runs, and the server
    logs one line; the socket is its owner's alone whatever the umask."""
    socket_path, log = warm_server("other")
    assert oct(socket_path.stat().st_mode & 0o777) == "0o600"
    done = client(socket_path, tmp_path, "job", "0", stderr=subprocess.PIPE, text=True)
    assert done.wait(timeout=60) == 1 and "did not start the command" in done.stderr.read()
    assert not (tmp_path / "pid").exists()
    wait_for(lambda: "refused a connection" in log.read_text())
    assert re.search(r"refused a connection from process \d+ of user \d+ \(this server serves user \d+ only\)",
                     log.read_text())


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("python3", path="/usr/bin:/bin"),
                    reason="needs root (to connect as another user) and a system python3")
def test_user_nobody_cannot_run_a_command_of_a_root_server(warm_server, tmp_path):
    """As the issue tried it: a root server whose socket anyone may open (chmod 777, as under umask 000); user
    nobody's command is refused and writes nothing."""
    socket_path, log = warm_server("self")
    os.chmod(socket_path.parent, 0o755)
    os.chmod(socket_path, 0o777)
    os.chmod(tmp_path, 0o777)
    done = subprocess.run(["/usr/bin/env", "-i", shutil.which("python3", path="/usr/bin:/bin"), "-c", ATTACKER,
                           str(socket_path), str(tmp_path)], capture_output=True, text=True, timeout=60, user=65534)
    assert done.stdout.strip() == "no child" and not (tmp_path / "pid").exists(), done.stderr
    wait_for(lambda: "refused a connection" in log.read_text())


def test_malformed_requests_and_silent_connections_end_their_child_in_one_line(warm_server):
    """Garbage, a request without descriptors, JSON of the wrong shape, and a connection that sends nothing: each
    child logs one line and ends; no traceback in the server's log."""
    socket_path, log = warm_server("self")
    header = struct.Struct("!I")
    sent = []
    for payload, descriptors in ((b"\xff" * 9, False), (header.pack(2) + b"{}", False),
                                 (b"[1, 2]", True), (b"", True)):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(socket_path))
        if descriptors:
            socket.send_fds(connection, [header.pack(len(payload))], [0, 1, 2])
        connection.sendall(payload)
        sent.append(connection)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(socket_path))
    wait_for(lambda: log.read_text().count("connection closed") == 5, 30)
    text = log.read_text()
    assert "Traceback" not in text
    assert "a request is {argv: [text], cwd: text, env: {text: text}}" in text
    assert "no request within 1 s" in text and "three descriptors" in text
    for pid in re.findall(r"(\d+): .*connection closed", text):
        wait_for(lambda pid=int(pid): not Path(f"/proc/{pid}").exists() or
                 Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", 20)
    for connection in (*sent, silent):
        connection.close()


# --------------------------------------------------------------------------- disks and deleted inputs


def evaluate_argv(tmp_path, out):
    tiny_checkpoint(tmp_path / "checkpoint.pt")
    return ["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(tmp_path / "checkpoint.pt"),
            "--out-dir", str(out), "--tasks", "zs_cifar10"]


def one_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


def test_a_full_disk_is_said_in_one_line_before_the_evaluation(tmp_path, capsys, monkeypatch):
    """The results disk takes no more: the evaluation refuses before it loads a model, in one line."""
    import hypvl.io
    import hypvl.models.checkpoints

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(REPO)
    argv = evaluate_argv(tmp_path, tmp_path / "metrics")
    monkeypatch.setattr(hypvl.io.tempfile, "TemporaryFile", full)
    monkeypatch.setattr(hypvl.models.checkpoints, "load_checkpoint", lambda *a: pytest.fail("the model was loaded"))
    assert main(argv) == 1
    assert one_line(capsys) == f"hypvl evaluate: {tmp_path / 'metrics'}: cannot write (No space left on device); " \
                               "nothing was changed there"


@pytest.mark.skipif(not Path("/sys").is_dir() or os.access("/sys", os.W_OK) and os.geteuid() != 0,
                    reason="needs a read-only file system at /sys")
def test_a_read_only_results_folder_is_said_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(evaluate_argv(tmp_path, Path("/sys/hypvl-metrics"))) == 1
    assert re.fullmatch(r"hypvl evaluate: /sys/hypvl-metrics: cannot write \((Operation not permitted|Permission "
                        r"denied|Read-only file system)\); nothing was changed there", one_line(capsys))


def test_a_write_that_fills_the_disk_names_the_file_and_leaves_nothing(tmp_path):
    path = tmp_path / "out.json"
    with pytest.raises(InputError, match=re.escape(f"{path}: cannot write (No space left on device)")):
        with atomic_write(path) as handle:
            handle.write("partial")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_shard_deleted_after_it_was_indexed_is_named(tmp_path):
    root, _, _ = BUILDERS["clip_benchmark_wds"](tmp_path)
    records = index_clip_benchmark_split(root, "test")
    (root / "test" / "0.tar").unlink()
    with pytest.raises(InputError, match=r"0\.tar: record key \S+: the shard has gone since it was indexed"):
        records[0].image.read()


def test_an_input_deleted_while_a_step_runs_is_one_line(tmp_path, capsys, monkeypatch):
    """A step that finds a file gone mid-run (FileNotFoundError naming it) ends in one line, not a traceback."""
    import hypvl.data.probe_splits

    def gone(*args):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(tmp_path / "source" / "0.png"))

    monkeypatch.setattr(hypvl.data.probe_splits, "build_probe_splits", gone)
    assert main(["probe-splits", "cifar10", "--source", str(tmp_path), "--dest", str(tmp_path / "d")]) == 1
    assert one_line(capsys) == f"hypvl probe-splits: {tmp_path / 'source' / '0.png'}: no such file (deleted while " \
                               "the step ran?)"


# --------------------------------------------------------------------------- nothing the suite did not write


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_probe_splits_never_replaces_a_folder_it_did_not_write(tmp_path, capsys, monkeypatch):
    """`--dest` naming the folder of every probe set: refused, and every file in it stays; a dest it wrote itself
    is replaced by the next run."""
    monkeypatch.chdir(REPO)
    argv, dest, _, _ = probe_into_a_folder_it_did_not_write(tmp_path)
    before = tree(dest)
    assert main(argv) == 1 and tree(dest) == before
    own = tmp_path / "sst2"
    argv[-1] = str(own)
    assert main(argv) == 0 and main(argv) == 0
    assert sorted(p.name for p in own.iterdir()) == [OUTPUTS, "classnames.txt", "train", "val"]
    assert not list(tmp_path.glob(".sst2*"))  # no temporary or old folder left


# the fixture's GRIT shard, grounded from data/raw into data/grounded/grit, keeping its tiny images' boxes
GRIT_CONFIG = {"corpora": {"grit": "grounded/grit"}, "grounding": {"min_box_side": 0, "box_threshold": 0,
                                                                   "raw": {"grit": {"format": "grit", "path": "raw"}}}}


def test_hypvl_ground_never_touches_its_raw_corpus(tmp_path, capsys, monkeypatch):
    """The grounded folder configured as the raw one: refused, the raw shard as it was."""
    monkeypatch.chdir(REPO)
    argv, _, _, _ = ground_into_the_raw_folder(tmp_path)
    before = tree(tmp_path / "data")
    assert main(argv) == 1 and tree(tmp_path / "data") == before


def test_a_failed_regrounding_keeps_the_previous_grounding_whole(tmp_path, capsys, monkeypatch):
    """Ground a GRIT corpus, truncate its raw shard, ground again: the second fails in one line, and the grounded
    folder is byte for byte the first grounding's (its grounding.json listing shards that are there)."""
    monkeypatch.chdir(REPO)
    shard, _, _ = BUILDERS["grit"](tmp_path / "data")
    shard.parent.rename(tmp_path / "data" / "raw")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), **GRIT_CONFIG}))
    argv = ["ground", "--corpus", "grit", "--configfile", str(config)]
    assert main(argv) == 0
    grounded = tmp_path / "data" / "grounded" / "grit"
    before = tree(grounded)
    summary = json.loads(before["grounding.json"])
    assert summary["shards"] and all((tmp_path / "data" / s).is_file() for s in summary["shards"])
    truncate(tmp_path / "data" / "raw" / shard.name, 0.6)
    capsys.readouterr()
    assert main(argv) == 1 and "truncated" in one_line(capsys)
    assert tree(grounded) == before
    assert not [p for p in grounded.parent.iterdir() if p.name != "grit"]  # no temporary folder left
    (grounded / "mine.txt").write_text("a note of the user's")
    BUILDERS["grit"](tmp_path / "fresh")
    shutil.copy(tmp_path / "fresh" / "grit" / shard.name, tmp_path / "data" / "raw" / shard.name)
    assert main(argv) == 1 and "holds files this step did not write (mine.txt)" in one_line(capsys)
    assert (grounded / "mine.txt").read_text() == "a note of the user's"


def test_the_smoke_world_rewrites_only_what_it_wrote(tmp_path):
    """A rerun with fewer samples leaves no old shard behind; a corpus folder holding a file the world did not
    write is refused and kept as it was."""
    settings = WorldSettings(grit_samples=3, shard_size=2, image_size=32)
    write_raw_corpus(settings, tmp_path, "grit", "train/grit")
    assert sorted(p.name for p in (tmp_path / "train" / "grit").glob("*.tar")) == ["grit-000000.tar",
                                                                                  "grit-000001.tar"]
    write_raw_corpus(WorldSettings(grit_samples=2, shard_size=2, image_size=32), tmp_path, "grit", "train/grit")
    assert sorted(p.name for p in (tmp_path / "train" / "grit").glob("*.tar")) == ["grit-000000.tar"]
    (tmp_path / "train" / "grit" / "grit-000007.tar").write_text("a shard of the user's")
    before = tree(tmp_path / "train" / "grit")
    with pytest.raises(InputError, match=r"grit: holds files this step did not write \(grit-000007\.tar\)"):
        write_raw_corpus(settings, tmp_path, "grit", "train/grit")
    assert tree(tmp_path / "train" / "grit") == before


# --------------------------------------------------------------------------- a model's identity


def test_a_shared_model_is_evaluated_as_the_experiment_it_was_trained_for():
    """The workflow evaluates an experiment whose recipe repeats another's on that one's checkpoint, saying so
    (`--model-of`), so the checkpoint's own experiment is checked there too."""
    from hypvl.config import load_config
    from hypvl.workflow import Plan

    plan = Plan(load_config())
    shared = next(e for e in plan.experiments() if plan.experiment(e).source == "train" and plan.model_of(e) != e)
    args = plan.evaluation.args("zeroshot", shared, 1)
    assert f"--model-of {plan.model_of(shared)}" in args and f"--experiment {shared}" in args


def test_training_from_another_experiments_encoders_is_refused(tmp_path, capsys, monkeypatch):
    """`init_from: meru_clip_vitl` given a checkpoint of experiment `e`: refused before any data is read."""
    monkeypatch.chdir(REPO)
    tiny_checkpoint(tmp_path / "init.pt")
    argv = ["train", "--spec", "replication/meru.yaml", "--experiment", "meru_clip_vitl_width64", "--out",
            str(tmp_path / "model"), "--init-checkpoint", str(tmp_path / "init.pt"), "--quiet"]
    assert main(argv) == 1
    assert re.fullmatch(r"hypvl train: \S+init\.pt: holds the model of experiment 'e' \(clip, vit_s16\), not of "
                        r"'meru_clip_vitl': refused \(a checkpoint copied into another experiment's place\?\)",
                        one_line(capsys))


def test_editing_another_experiments_steps_for_entry_keeps_a_table_comparable(tmp_path):
    """Metric JSONs whose recorded `train.steps_for` maps differ only in entries matching neither model (an older
    hypvl recorded the whole map; an entry was edited since) still join; the entries the trainer records are the
    matching ones."""
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    metrics = write_metrics(tmp_path, "smoke")
    for experiment, tasks in OURS.items():
        for task in tasks:
            path = metrics / experiment / f"{task}.json"
            record = json.loads(path.read_text())
            steps_for = {"poin_grid_*": 100} if experiment == "tiny_clip" else {"poin_grid_*": 150, "tiny_meru": 30}
            record["provenance"]["run_config"] = {"train": {"steps": 200, "steps_for": steps_for}}
            path.write_text(json.dumps(record))
    frame = compare_table(load_spec(tmp_path / "replication" / "tiny.yaml"), "table1", metrics, "smoke")
    assert frame["ours"].notna().sum() == 8  # every cell of both rows
    train = {"steps": 200, "steps_for": {"poin_grid_*": 100, "tiny_*": 300, "tiny_meru": 30}}
    assert recorded_train_section("tiny_clip", train) == {"steps": 200, "steps_for": {"tiny_*": 300}}


# --------------------------------------------------------------------------- dates and numbers


def test_a_file_dated_in_the_future_does_not_fail_later_runs(tmp_path):
    """A Snakemake workflow redating its files as workflows/common.smk does: an input dated in the future makes no
    run fail (without the redating, Snakemake fails the job: its output would be older than its input)."""
    (tmp_path / "Snakefile").write_text(
        "from hypvl.io import redate_future\n"
        "for path in redate_future(['data']):\n    print('redated', path)\n"
        "rule b:\n    input: 'data/a.txt'\n    output: 'b.txt'\n    shell: 'cp {input} {output}'\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("1")
    os.utime(tmp_path / "data" / "a.txt", (time.time() + 3e8, time.time() + 3e8))
    snakemake = [str(Path(sys.executable).parent / "snakemake"), "b.txt", "--cores", "1"]
    for _ in range(2):
        done = subprocess.run(snakemake, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.txt").read_text() == "1"
    assert redate_future([tmp_path / "data"]) == []


def test_a_json_holding_a_number_that_is_not_finite_is_never_written(tmp_path):
    with pytest.raises(InputError, match=r"out\.json: final\.curvature is not a finite number; nothing written"):
        write_json(tmp_path / "out.json", {"final": {"loss": 1.0, "curvature": float("nan")}})
    assert list(tmp_path.iterdir()) == []


def test_every_json_the_suite_writes_goes_through_strict_json():
    """No `json.dump(` in the source, and every `json.dumps(` either refuses NaN (allow_nan=False) or makes text that
    is no result (a command line, a message, the warm server's request)."""
    not_results = {"warm.py", "workflow/core.py", "workflow/training.py", "workflow/reports.py",
                   "replication/coverage.py", "replication/consistency.py", "provenance.py", "train/resume.py",
                   "data/pilot/corpora.py", "data/pilot/classification.py", "models/library.py"}
    found = []
    for path in sorted((REPO / "src" / "hypvl").rglob("*.py")):
        relative = path.relative_to(REPO / "src" / "hypvl").as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "json.dump(" in line or ("json.dumps(" in line and "allow_nan=False" not in line
                                        and relative not in not_results):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []


def test_a_checkpoint_whose_parameters_are_not_finite_is_never_written(tmp_path):
    from hypvl.models.build import build_model

    model_cfg = yaml.safe_load((REPO / "src" / "hypvl" / "config" / "default.yaml").read_text())["model"]
    model = build_model("clip", "vit_s16", model_cfg)
    with torch.no_grad():
        model.visual_proj.weight[0, 0] = float("inf")
    with pytest.raises(InputError, match=r"not written: parameters visual_proj\.weight hold numbers that are not "
                                         r"finite \(the run diverged\)"):
        save_checkpoint(tmp_path / "c.pt", model, {}, step=1)
    assert list(tmp_path.iterdir()) == []


def test_int8_or_bool_weights_of_a_library_model_are_refused(tmp_path):
    """open_clip would cast bool weights, and transformers int8 ones from safetensors, into its float parameters
    without a word: both refused, naming the folder and a key."""
    model, _ = open_clip_folder(tmp_path)
    bools = {k: torch.ones_like(v, dtype=torch.bool) if v.is_floating_point() else v
             for k, v in model.state_dict().items()}
    shutil.rmtree(tmp_path / "open_clip")
    _, folder = open_clip_folder(tmp_path, state=bools)
    with pytest.raises(InputError, match=r"pretrained:x: \S+open_clip holds weights of integer or boolean type .*"
                                         r"\(torch\.bool\)"):
        import_library_model(folder, "open_clip", "pretrained:x")
    *_, folder = transformers_folder(tmp_path, "clip")
    weights = load_file(folder / "model.safetensors")
    key = next(k for k, v in weights.items() if v.dim() == 2)
    save_file({**weights, key: weights[key].to(torch.int8)}, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(InputError, match=rf"holds weights of integer or boolean type .*{re.escape(key)} \(I8\)"):
        import_library_model(folder, "transformers", "pretrained:y")


def test_an_architecture_mismatch_is_refused_in_a_short_line(tmp_path, capsys, monkeypatch):
    """A checkpoint of another width than its recipe: the refusal names three keys and counts the rest (the issue's
    was one line of 86 kB)."""
    monkeypatch.chdir(REPO)
    blob = tiny_checkpoint(tmp_path / "checkpoint.pt")
    blob["recipe"]["backbone"] = "vit_b16"
    torch.save(blob, tmp_path / "checkpoint.pt")
    argv = ["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(tmp_path / "checkpoint.pt"),
            "--out-dir", str(tmp_path / "metrics"), "--tasks", "zs_cifar10"]
    assert main(argv) == 1
    line = one_line(capsys)
    assert len(line) < 600 and re.search(r"the model expects \(\d+(, \d+)*\) and \d+ more$", line), line
