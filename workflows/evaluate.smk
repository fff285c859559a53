# Evaluation: one job per (experiment, task group), each writing one metrics JSON per task.

rule evaluate_zeroshot:
    input:
        data_ready,
        checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
    output:
        PLAN.group_outputs("zeroshot"),
    params:
        cfg=PLAN.step_config("evaluate"),
        out_dir=lambda w: f"{RESULTS}/metrics/{w.experiment}",
    threads: THREADS
    log:
        f"{RESULTS}/logs/evaluate/{{experiment}}/zeroshot.log",
    shell:
        "hypvl evaluate zeroshot --experiment {wildcards.experiment} --checkpoint {input.checkpoint}"
        " --config-json {params.cfg} --out-dir {params.out_dir} --threads {threads} > {log} 2>&1"
