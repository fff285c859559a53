# Data: the smoke world is synthesised; paper-scale data is acquired (see `hypvl.data.acquire`).
# Raw training corpora are then grounded (workflows/grounding.smk).

if SCALE == "smoke":

    rule synthesize_world:
        output:
            f"{DATA}/manifest.json",
        params:
            cfg=PLAN.step_config("synthesize"),
        log:
            f"{RESULTS}/logs/synthesize_world.log",
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {DATA} > {log} 2>&1"


def trained_corpus(experiment):
    """The grounded training corpus of `experiment` if the suite trains it on one, else None
    (released weights, or data that is not a grounded corpus such as HierarCaps fine-tuning pairs)."""
    for spec in PLAN.specs.values():
        if experiment in spec.experiments:
            found = spec.experiments[experiment]
            grounded = found.data in config["corpora"] and found.data in config["grounding"]["raw"]
            return found.data if found.source == "train" and grounded else None
    return None


def data_ready(wildcards=None):
    """What a step needs from the data stage: the smoke world's manifest (paper-scale data is checked
    by each step) and, for an experiment the suite trains on a grounded corpus, that corpus."""
    needs = [f"{DATA}/manifest.json"] if SCALE == "smoke" else []
    corpus = trained_corpus(wildcards.experiment) if wildcards is not None and "experiment" in wildcards.keys() else None
    if corpus is not None:
        needs.append(grounded_summary(corpus))
    return needs
