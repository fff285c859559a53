"""What a step's job reads of the config (a rule passes only those sections, so an edit elsewhere does not rerun it)
and what it asks of the machine (config `resources.jobs`)."""

from hypvl.config import RUN_SETTINGS

# config sections each step reads (a rule passes only these, so unrelated edits do not rerun it); `a.b`: key b of a
STEP_SECTIONS = {
    "synthesize": ("smoke_world",),
    "ground": ("data_dir", "spacy_model", "corpora", "grounding", "fetch"),
    "pilot_world": ("scale", "data_dir", "acquire", "fetch", "pilot_world", "eval.classification_split",
                    "eval.probe_source_dir"),  # scale: a pilot world is the pilot scale's (hypvl.config)
    "pilot_weights": ("scale", "cpu_code_path", "model", "fetch", "pilot_world"),
    "train": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train", "plugins"),
    "finetune": ("scale", "cpu_code_path", "radial_ft", "plugins"),  # and the run settings (below)
    "evaluate": ("scale", "cpu_code_path", "data_dir", "eval", "plugins"),
    "import": ("scale", "cpu_code_path", "model", "weights"),
    "import_extra": ("scale", "cpu_code_path", "data_dir", "model", "fetch", "plugins"),
    "standin": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train", "weights"),
    "coverage": None,  # the whole config: `hypvl coverage` plans as the workflow does
    # the train settings that change no number (hypvl.config.RUN_SETTINGS), handed to the training and fine-tuning
    # jobs apart from their sections (which leave them out), so that editing them reruns nothing: Snakemake reruns a
    # job whose params changed, but leaves out of that comparison the params its rules compute from the job's threads
    # (as from its input, output and resources), which is how the rules compute this one
    "run_settings": tuple(f"train.{key}" for key in RUN_SETTINGS),
}


def step_sections(config: dict, step: str) -> dict:
    """The config sections `step` reads (STEP_SECTIONS; the whole config for None), `plugins` only where set (so the
    jobs of before stay current); a whole train section without the RUN_SETTINGS (the step `run_settings` passes
    them)."""
    sections = STEP_SECTIONS[step] or config
    passed: dict = {}
    for key in (k for k in sections if k != "plugins" or config.get(k)):
        section, _, entry = key.partition(".")
        if entry:
            passed.setdefault(section, {})[entry] = config[section][entry]
        else:
            passed[section] = config[section]
    if "train" in (STEP_SECTIONS[step] or ()):
        passed["train"] = {key: value for key, value in passed["train"].items() if key not in RUN_SETTINGS}
    return passed


def step_resources(config: dict, step: str) -> dict:
    """Snakemake resources of the jobs of `step` (config `resources.jobs`): `finetune`, `ground`, `evaluate`,
    `acquire`, `import`, or `train` where training is one CPU process."""
    fixed = config["resources"]["jobs"][step]
    return {"gpu": fixed["gpu"] or None, "mem_mb": fixed["mem_mb"], "runtime": fixed["runtime"]}
