# Grounding (HyCoCLIP App. A): each raw training corpus -> grounded shards (`hypvl ground`), with a
# grounding.json summary that marks the corpus ready. At smoke scale the raw corpora come from the
# synthesized world; at paper scale from acquisition (see `hypvl acquire`).
# grounded folder (config `corpora`) -> corpus name, for corpora that have a raw source to ground
GROUNDED = {folder: corpus for corpus, folder in config["corpora"].items() if corpus in config["grounding"]["raw"]}


rule ground:
    input:
        lambda w: PLAN.data.raw_corpus_inputs(GROUNDED[w.grounded]),
        lambda w: PLAN.data.pilot_detector(GROUNDED[w.grounded]),
        lambda w: PLAN.data.calibration(GROUNDED[w.grounded]),  # grounding.box_threshold: calibrated
    output:
        summary=f"{DATA}/{{grounded}}/grounding.json",
    log:
        f"{RESULTS}/logs/ground/{{grounded}}.log",
    wildcard_constraints:
        grounded="|".join(re.escape(folder) for folder in GROUNDED),
    retries: PLAN.data.ground_retries()  # a corpus longer than a job's runtime continues after its last shard
    conda:
        ENV
    threads: THREADS
    resources:
        **{
            name: lambda w, name=name: PLAN.data.ground_resources(GROUNDED[w.grounded])[name]
            for name in ("gpu", "mem_mb", "runtime")
        },
    params:
        corpus=lambda w: GROUNDED[w.grounded],
        boxes=lambda w: PLAN.data.ground_options(GROUNDED[w.grounded]),  # no detector where no model reads boxes
        cfg=PLAN.step_config("ground"),
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}hypvl ground --corpus {params.corpus:q} {params.boxes} --threads {threads} "
        "--config-json {params.cfg} > {log:q} 2>&1"


if PLAN.data.calibrates():

    rule calibrate_threshold:
        # grounding.box_threshold `calibrated`: the threshold keeping HyCoCLIP's share of the calibration corpus's
        # pairs (`hypvl calibrate` on its first raw samples), which every corpus the detector grounds reads
        input:
            PLAN.data.calibration_inputs(),
        output:
            calibration=PLAN.data.calibration_file(),
        log:
            f"{RESULTS}/logs/calibrate/{config['grounding']['calibration']['corpus']}.log",
        conda:
            ENV
        threads: THREADS
        resources:
            **PLAN.step_resources("ground"),  # a grounding job's
        params:
            corpus=config["grounding"]["calibration"]["corpus"],
            cfg=PLAN.step_config("ground"),
            claim=gpu_claim,  # untracked (common.smk)
        shell:
            "{params.claim}hypvl calibrate --corpus {params.corpus:q} --threads {threads} --config-json {params.cfg} "
            "> {log:q} 2>&1"
