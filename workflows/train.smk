# Models: one job per experiment of the replication specs: trained, or imported from released weights.
import os


def experiments_with_source(prefix):
    """Regex alternatives of the experiment ids whose `source` starts with `prefix`."""
    ids = [e.id for spec in PLAN.specs.values() for e in spec.experiments.values() if e.source.startswith(prefix)]
    return "|".join(ids) or "(?!)"


rule train:
    input:
        data_ready,
        init=lambda w: PLAN.init_checkpoint(w.experiment),
    output:
        checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
        log=f"{RESULTS}/models/{{experiment}}/train_log.csv",
        summary=f"{RESULTS}/models/{{experiment}}/train_summary.json",
    wildcard_constraints:
        experiment=experiments_with_source("train"),
    params:
        spec=lambda w: PLAN.spec_path(w.experiment),
        cfg=PLAN.step_config("train"),
        out=lambda w, output: os.path.dirname(output.checkpoint),
        init=lambda w, input: f"--init-checkpoint {input.init}" if input.init else "",
    threads: THREADS
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    shell:
        "hypvl train --spec {params.spec} --experiment {wildcards.experiment} --config-json {params.cfg}"
        " --out {params.out} {params.init} --threads {threads} --quiet > {log} 2>&1"


rule import_released:
    # released checkpoints (MERU's and HyCoCLIP's) are fetched to {DATA}/weights/<name>.pth by hand or
    # `hypvl acquire`; they hold paper-scale models, so use them with the full config
    input:
        weights=lambda w: f"{DATA}/weights/{PLAN.experiment(w.experiment).source.split(':', 1)[1]}.pth",
    output:
        f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
    wildcard_constraints:
        experiment=experiments_with_source("released:"),
    params:
        method=lambda w: PLAN.experiment(w.experiment).method,
        backbone=lambda w: PLAN.experiment(w.experiment).backbone,
        cfg=PLAN.step_config("train"),
    shell:
        "hypvl import-weights --weights {input.weights} --method {params.method} --backbone {params.backbone}"
        " --experiment {wildcards.experiment} --config-json {params.cfg} --out {output}"
