# Models: one job per experiment of the replication specs: trained, or imported from released weights.
# A training job also evaluates its model on the `evaluate_with_training` groups, in the same process.


rule train:
    input:
        data_ready,
        init=lambda w: PLAN.init_checkpoint(w.experiment),
    output:
        checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
        log=f"{RESULTS}/models/{{experiment}}/train_log.csv",
        summary=f"{RESULTS}/models/{{experiment}}/train_summary.json",
        metrics=[path for group in PLAN.with_training for path in PLAN.group_outputs(group)],
    wildcard_constraints:
        experiment=PLAN.trained_pattern(),  # one job per distinct recipe (Plan.model_of)
    params:
        spec=lambda w: PLAN.spec_path(w.experiment),
        declared=lambda w: PLAN.declared_id(w.experiment),  # a seed variant trains its experiment with another seed
        seed=lambda w: PLAN.experiment(w.experiment).seed,
        cfg=PLAN.step_config("train"),
        out=lambda w: f"{RESULTS}/models/{w.experiment}",
        init=lambda w, input: ["--init-checkpoint", input.init] if input.init else [],
        then=lambda w, threads: "".join(f" :: {PLAN.evaluate_args(group, w.experiment, threads)}"
                                        for group in PLAN.with_training),
    threads: THREADS
    priority: lambda w: PLAN.train_cost(w.experiment)  # the longest first, so the run does not end on one core
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    conda:
        ENV
    shell:
        "hypvl train --spec {params.spec:q} --experiment {params.declared} --seed {params.seed} --config-json {params.cfg}"
        " --out {params.out:q} {params.init:q} --threads {threads} --quiet{params.then} > {log:q} 2>&1"


rule import_released:
    # released checkpoints (MERU's and HyCoCLIP's) are fetched to {DATA}/weights/<name>.pth by hand or
    # `hypvl acquire`; they hold paper-scale models, so use them with the full config
    input:
        weights=lambda w: f"{DATA}/weights/{PLAN.experiment(w.experiment).source.split(':', 1)[1]}.pth",
    output:
        checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
    wildcard_constraints:
        experiment=PLAN.source_pattern("released:"),
    params:
        method=lambda w: PLAN.experiment(w.experiment).method,
        backbone=lambda w: PLAN.experiment(w.experiment).backbone,
        cfg=PLAN.step_config("train"),
    log:
        f"{RESULTS}/logs/import_released/{{experiment}}.log",
    conda:
        ENV
    shell:
        "hypvl import-weights --weights {input.weights:q} --method {params.method:q} --backbone {params.backbone:q}"
        " --experiment {wildcards.experiment} --config-json {params.cfg} --out {output.checkpoint:q} > {log:q} 2>&1"
