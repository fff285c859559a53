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
    """The training corpus of `experiment` if the suite trains it, else None (released weights)."""
    for spec in PLAN.specs.values():
        if experiment in spec.experiments:
            found = spec.experiments[experiment]
            return found.data if found.source == "train" else None
    return None


def data_ready(wildcards=None):
    """What a step needs from the data stage: the smoke world's manifest (paper-scale data is checked
    by each step) and, for an experiment the suite trains, its grounded training corpus."""
    needs = [f"{DATA}/manifest.json"] if SCALE == "smoke" else []
    corpus = trained_corpus(wildcards.experiment) if wildcards is not None and "experiment" in wildcards.keys() else None
    if corpus is not None:
        needs.append(grounded_summary(corpus))
    return needs
