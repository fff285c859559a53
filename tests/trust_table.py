"""The table of every bad input and fault tried, and what each got, generated from the tests (not a test itself):

    python tests/trust_table.py [--slow] > trust.md

Bad inputs: every case of the corpus (CORPORA: tests/trust/test_bad_inputs_malformed.py and its successors), run here
through `hypvl.cli.main` as the corpus test runs it: its exit status, the one line it printed (temporary folders shown
as <tmp>) and whether an output was left behind. Faults: the fault tests (FAULT_TESTS) run by pytest (`--slow` includes
the slow ones, e.g. killing the workflow), each with the first sentence of its docstring and its outcome.
"""

import argparse
import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# test file (under tests/) -> pytest -k expression choosing its fault tests (None: all of them)
FAULT_TESTS = {
    "trust/test_dag_faults.py": None,
    "workflow/test_determinism.py": None,
    "datasets/test_acquire.py": "resume or range or 416 or mismatch or recorded or pinned or verified or manual",
    "trust/test_acquire_faults.py": None,
    "trust/test_mirror_links.py": None,
    "trust/test_unpack_faults.py": None,
    "trust/test_atomic_writes.py": "failed_write",
    "training/test_training.py": "corrupt or reproducible or hand_over_errors",
    "deploy/test_cpu_code_path.py": "same_bits",
    "trust/test_trust_faults.py": None,
    "trust/test_trust_results.py": None,
    "trust/test_trust_reports.py": None,
    "deploy/test_loader_processes.py": None,
    "trust/test_trust_inputs.py": None,
}
# the bad-input corpus, round by round
CORPORA = ("trust/test_bad_inputs_malformed", "trust/test_bad_inputs_hostile", "trust/test_bad_inputs_results",
           "trust/test_bad_inputs_bounds")


def _cell(text: str) -> str:
    from hypvl.replication.markdown import escape

    return escape(" ".join(str(text).split()))


def bad_input_rows() -> list[list[str]]:
    """[case, exit status, the line printed, output left] for every case of the bad-input corpus."""
    import importlib

    from hypvl.cli import main

    rows = []
    cases = {name: build for module in CORPORA
             for name, build in importlib.import_module(Path(module).name).CASES.items()}
    for name in sorted(cases):
        with tempfile.TemporaryDirectory() as tmp:
            argv, _, _, outputs = cases[name](Path(tmp))
            err = io.StringIO()
            handler = logging.StreamHandler(err)
            handler.setLevel(logging.WARNING)  # a warning would count as a line too; progress does not
            logging.getLogger().handlers = [handler]
            with contextlib.redirect_stderr(err):
                code = main(argv)
            lines = [line.replace(tmp, "<tmp>") for line in err.getvalue().splitlines() if line.strip()]
            left = [str(path).replace(tmp, "<tmp>") for path in outputs if path.exists()]
        rows.append([f"`{name}`", str(code), _cell(" / ".join(lines)), _cell(", ".join(left) or "none")])
    return rows


def _docstring_sentence(node_id: str) -> str:
    """The first sentence of a test's docstring, or its name in words."""
    import importlib

    module, _, name = node_id.partition("::")
    function = getattr(importlib.import_module(Path(module).stem), name.split("[")[0])
    doc = " ".join((function.__doc__ or "").split())
    return doc.split(". ")[0].rstrip(".") + "." if doc else name.split("[")[0].removeprefix("test_").replace("_", " ")


def fault_rows(slow: bool) -> list[list[str]]:
    """[test, what it does, outcome and seconds] for every fault test, run by pytest."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for file, keyword in FAULT_TESTS.items():
            report = Path(tmp) / f"{Path(file).name}.xml"
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/{file}",
                       f"--junitxml={report}", *([] if slow else ["-m", "not slow"]),
                       *(["-k", keyword] if keyword else [])]
            subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
            for case in ElementTree.parse(report).iter("testcase"):
                node_id = f"tests/{file}::{case.get('name')}"
                outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
                rows.append([f"`{case.get('name')}`", _cell(_docstring_sentence(node_id)),
                             f"{outcome} ({float(case.get('time')):.1f} s)"])
    return rows


def main() -> None:
    from hypvl.replication.markdown import table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", action="store_true", help="also run the slow fault tests (minutes)")
    args = parser.parse_args()
    os.chdir(REPO)
    # the helpers package and every subject folder, as pytest's import mode (prepend) puts them on the path
    sys.path[:0] = [str(TESTS), *sorted(str(folder) for folder in TESTS.iterdir() if folder.is_dir()
                                        and any(folder.glob("test_*.py")))]
    bad = bad_input_rows()
    faults = fault_rows(args.slow)
    lines = ["# Bad inputs and faults tried", "", f"Generated by `python tests/trust_table.py{' --slow' if args.slow else ''}`.",
             "", f"## Bad inputs ({len(bad)}, {', '.join(f'tests/{module}.py' for module in CORPORA)})", "",
             *table(["case", "exit", "what it printed", "output left"], bad), "",
             f"## Faults ({len(faults)})", "", *table(["test", "what it checks", "outcome"], faults), ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
