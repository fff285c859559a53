import os
# Training: one job per experiment of the replication specs.

rule train:
    input:
        data_ready,
    output:
        checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
        log=f"{RESULTS}/models/{{experiment}}/train_log.csv",
        summary=f"{RESULTS}/models/{{experiment}}/train_summary.json",
    params:
        spec=lambda w: PLAN.spec_path(w.experiment),
        cfg=PLAN.step_config("train"),
        out=lambda w, output: os.path.dirname(output.checkpoint),
    threads: THREADS
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    shell:
        "hypvl train --spec {params.spec} --experiment {wildcards.experiment} --config-json {params.cfg}"
        " --out {params.out} --threads {threads} --quiet > {log} 2>&1"
