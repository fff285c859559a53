# Weights from outside: an experiment whose `source` is released:<name> or pretrained:<hub id> gets its
# checkpoint.pt by importing its weights folder (hypvl/outside/weights.yaml says what each holds). The folder is
# fetched at paper scale (`hypvl acquire`, checksums verified or recorded), or read where config `weights.local`
# says you keep the files. At smoke scale the import job first writes a stand-in in the same layout from a
# smoke-trained model (rule import_standin, into results/<scale>/standins/<experiment>/weights), so the import reads
# it through the very code path the real files take. Both import rules also evaluate the imported model on the
# `evaluate_with_training` groups, in the same process (as rule train).
WEIGHTS_FOLDERS = PLAN.outside.weights_folders()  # folder -> an experiment reading it
WEIGHTS_PATTERN = PLAN.pattern(str(Path(folder).relative_to(f"{DATA}/weights")) for folder in WEIGHTS_FOLDERS)


if PLAN.standins is None:

    localrules:
        fetch_weights,  # downloads need the network, which cluster nodes often lack (as workflows/acquire.smk)

    rule fetch_weights:
        input:
            lambda w: PLAN.outside.pilot_weights(f"{DATA}/weights/{w.weights}"),  # the pilot's stand-in, served first
        output:
            folder=directory(f"{DATA}/weights/{{weights}}"),
        log:
            f"{RESULTS}/logs/fetch_weights/{{weights}}.log",
        wildcard_constraints:
            weights=WEIGHTS_PATTERN,
        priority: PLAN.training.first_priority()  # before any other job: a download that fails is named at the start
        conda:
            ENV
        resources:
            **PLAN.step_resources("acquire"),
        params:
            entry=lambda w, output: PLAN.outside_weights(WEIGHTS_FOLDERS[output.folder]).entry,
            fetch=PLAN.outside.fetch_options(),  # the weights manifest, and a mirror where configured
        shell:
            "hypvl fetch-weights {params.entry:q} {params.fetch:q} --dest {output.folder:q} > {log:q} 2>&1"

    if PLAN.data.pilot_world():
        PILOT_WEIGHTS = f"{config['fetch']['mirror']}/pilot_weights"

        rule pilot_weights:
            # the pilot scale: a full-size stand-in of a released checkpoint, served by the mirror
            output:
                marker=f"{PILOT_WEIGHTS}/{{weights}}.json",
            log:
                f"{RESULTS}/logs/pilot_weights/{{weights}}.log",
            wildcard_constraints:
                weights=WEIGHTS_PATTERN,
            priority: PLAN.training.first_priority()
            conda:
                ENV
            params:
                experiment=lambda w: WEIGHTS_FOLDERS[f"{DATA}/weights/{w.weights}"],
                spec=lambda w, threads: PLAN.spec_path(WEIGHTS_FOLDERS[f"{DATA}/weights/{w.weights}"]),  # untracked
                manifest=PLAN.outside.manifest_options(),
                cfg=PLAN.step_config("pilot_weights"),
            shell:
                "hypvl pilot-weights --spec {params.spec:q} --experiment {params.experiment} {params.manifest:q}"
                " --config-json {params.cfg} --out {output.marker:q} > {log:q} 2>&1"

        rule pilot_detector:
            # the pilot scale: the grounding detector's full-size stand-in, in the mirror's Hub cache
            output:
                marker=f"{PILOT_WEIGHTS}/detector.json",
            log:
                f"{RESULTS}/logs/pilot_weights/detector.log",
            conda:
                ENV
            params:
                detector=config["grounding"]["detector"],
                cfg=PLAN.step_config("pilot_weights"),
            shell:
                "hypvl pilot-weights --detector {params.detector:q} --config-json {params.cfg}"
                " --out {output.marker:q} > {log:q} 2>&1"

else:

    rule train_standin:
        # a transformers architecture no model of ours converts into, trained like our CLIP at this scale
        input:
            PLAN.outside.standin_inputs() if PLAN.outside.standin_trainings() else [],
        output:
            checkpoint=f"{RESULTS}/standins/{{experiment}}/checkpoint.pt",
            log=f"{RESULTS}/standins/{{experiment}}/train_log.csv",
            summary=f"{RESULTS}/standins/{{experiment}}/train_summary.json",
        log:
            f"{RESULTS}/logs/train_standin/{{experiment}}.log",
        wildcard_constraints:
            experiment=PLAN.pattern(PLAN.outside.standin_trainings()),
        conda:
            ENV
        threads: THREADS
        resources:
            **PLAN.step_resources("train"),
        params:
            spec=experiment_spec,
            cfg=lambda w: PLAN.outside.standin_config(w.experiment),
            settings=run_settings,  # untracked (common.smk)
            out=lambda w, output: above(output.checkpoint),
            claim=gpu_claim,  # untracked (common.smk)
        shell:
            "{params.claim}hypvl train --spec {params.spec:q} --experiment {wildcards.experiment} --standin"
            " --config-json {params.cfg} --config-json {params.settings} --out {params.out:q} --threads {threads}"
            " --quiet > {log:q} 2>&1"


rule import_weights:
    input:
        *MODEL_INPUTS,
        weights=lambda w: PLAN.outside.weights_input(w.experiment),
    output:
        **MODEL_OUTPUTS,
    log:
        f"{RESULTS}/logs/import_weights/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.outside.imported_pattern(),
    priority: PLAN.training.making_priority()  # a made model is evaluated before the next is made
    conda:
        ENV
    threads: THREADS
    resources:
        **PLAN.step_resources("import"),
    params:
        spec=experiment_spec,
        cfg=PLAN.step_config("import"),
        then=evaluations_after,
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}hypvl import-weights --spec {params.spec:q} --experiment {wildcards.experiment}"
        " --weights {input.weights:q} --config-json {params.cfg} --out {output.checkpoint:q}{params.then}"
        " > {log:q} 2>&1"


rule import_standin:
    # smoke scale: writes the stand-in of an outside source in its real layout from one of our models, imports it
    # through the code path the real files take, and evaluates it on `evaluate_with_training`: one process
    input:
        *MODEL_INPUTS,
        source=lambda w: PLAN.outside.standin_from(w.experiment),
    output:
        **MODEL_OUTPUTS,
        weights=directory(f"{RESULTS}/standins/{{experiment}}/weights"),
    log:
        f"{RESULTS}/logs/import_standin/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.outside.imported_pattern(stood_in=True),
    priority: PLAN.training.making_priority()  # a made model is evaluated before the next is made
    conda:
        ENV
    threads: THREADS
    resources:
        **PLAN.step_resources("import"),
    params:
        layout=lambda w: PLAN.outside.standin_args(w.experiment),
        spec=experiment_spec,
        cfg=PLAN.step_config("import"),
        then=evaluations_after,
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}hypvl write-standin {params.layout:q} --checkpoint {input.source:q} --out {output.weights:q}"
        " :: import-weights --spec {params.spec:q} --experiment {wildcards.experiment} --weights {output.weights:q}"
        " --config-json {params.cfg} --out {output.checkpoint:q}{params.then} > {log:q} 2>&1"


rule import_extra:
    # config `extra_models`: your model, imported from its source (a file or folder here; a hub id or open_clip release
    # fetched into data_dir/weights/extra/<name>) and evaluated on `evaluate_with_training`, in one process
    input:
        *MODEL_INPUTS,
        weights=lambda w: PLAN.outside.extra_input(w.experiment),
    output:
        **MODEL_OUTPUTS,
    log:
        f"{RESULTS}/logs/import_extra/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.outside.extra_pattern(),
    priority: PLAN.training.making_priority()  # a made model is evaluated before the next is made
    conda:
        ENV
    threads: THREADS
    resources:
        **PLAN.step_resources("import"),
    params:
        extra=lambda w: PLAN.outside.extra_args(w.experiment),
        cfg=PLAN.step_config("import_extra"),
        then=evaluations_after,
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}hypvl import-extra {params.extra:q} --config-json {params.cfg}"
        " --out {output.checkpoint:q}{params.then} > {log:q} 2>&1"
