# Data: the smoke world is synthesised, each raw corpus and the evaluation sets by their own job (so a
# corpus is grounded while the evaluation sets are drawn); paper-scale data is acquired (`hypvl acquire`).
# Raw training corpora are then grounded (workflows/grounding.smk), and each linear-probe set's train and val
# folders are cut from its source splits by the catalog's slices, at either scale (at paper scale from the
# sources the user placed, or an acquisition whose folder holds them; a missing split fails that job, first).

if SCALE == "smoke":

    rule synthesize_corpus:
        output:
            summary=f"{DATA}/{{raw}}/corpus.json",
        log:
            f"{RESULTS}/logs/synthesize/{{raw}}.log",
        wildcard_constraints:
            raw="|".join(re.escape(entry["path"]) for entry in config["grounding"]["raw"].values()),
        priority: 1  # before the evaluation sets: grounding waits for the corpora
        conda:
            ENV
        params:
            cfg=PLAN.step_config("synthesize"),
            corpus=lambda w: PLAN.data.raw_corpus_named(w.raw),
            out=lambda w, output: above(output.summary, 1 + len(Path(w.raw).parts)),  # the data folder
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {params.out:q} --only {params.corpus:q} > {log:q} 2>&1"

    rule synthesize_evaluation:
        output:
            manifest=f"{DATA}/manifest.json",
            probe_sources=[directory(PLAN.data.probe_source(name)) for name in PLAN.data.probe_datasets()],
            # what the finetune rule reads (PLAN.training.finetune_inputs; its train images: the CC3M corpus)
            hierarcaps_train=f"{DATA}/{config['eval']['datasets']['hierarcaps_train']}",
        log:
            f"{RESULTS}/logs/synthesize/evaluation.log",
        priority: 1  # every training job waits for it (it evaluates zero-shot)
        conda:
            ENV
        params:
            cfg=PLAN.step_config("synthesize"),
            out=lambda w, output: above(output.manifest),
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {params.out:q} --only evaluation > {log:q} 2>&1"


if PLAN.data.pilot_world():

    rule pilot_world:
        # the pilot scale: the mirror the acquire jobs fetch from, and what the manual and prepare steps leave
        output:
            marker=PLAN.data.pilot_world()[0],
        log:
            f"{RESULTS}/logs/pilot_world.log",
        priority: PLAN.training.first_priority()
        conda:
            ENV
        params:
            cfg=PLAN.step_config("pilot_world"),
        shell:
            "hypvl pilot-world --config-json {params.cfg} > {log:q} 2>&1"


rule probe_splits:
    input:
        lambda w: PLAN.data.probe_source_inputs(w.name),
    output:
        splits=directory(PLAN.data.probe_folder("{name}")),
    log:
        f"{RESULTS}/logs/probe_splits/{{name}}.log",
    wildcard_constraints:
        name=PLAN.pattern(PLAN.data.probe_datasets()),
    priority: PLAN.training.first_priority()  # before training: missing sources are named at the start of a run
    conda:
        ENV
    resources:
        **PLAN.step_resources("acquire"),  # data preparation: no GPU, the data stage's memory and time
    params:
        source=lambda w: PLAN.data.probe_source(w.name),
        options=PLAN.data.probe_splits_options(),
    shell:
        "hypvl probe-splits {wildcards.name} --source {params.source:q} --dest {output.splits:q} --splits train val"
        " {params.options:q} > {log:q} 2>&1"
