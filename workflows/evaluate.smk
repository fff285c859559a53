# Evaluation: one job per (experiment, task group), each writing one metrics JSON per task of the group
# (groups and their tasks: hypvl.evaluate.tasks). The rules differ only in the group name.

# VG-Attribution keeps attribute pairs with at least this many samples (ARO: 25; the smoke world writes
# 25 per pair, so the paper's threshold holds at both scales).
VGA_MIN_COUNT = 25

for _group in PLAN.groups:

    rule:
        name:
            f"evaluate_{_group}"
        input:
            data_ready,
            checkpoint=f"{RESULTS}/models/{{experiment}}/checkpoint.pt",
        output:
            PLAN.group_outputs(_group),
        params:
            group=_group,  # the shell command below is formatted at run time, after the loop has moved on
            cfg=PLAN.step_config("evaluate"),
            out_dir=lambda w: f"{RESULTS}/metrics/{w.experiment}",
        threads: THREADS
        log:
            f"{RESULTS}/logs/evaluate/{{experiment}}/{_group}.log",
        shell:
            "hypvl evaluate {params.group} --experiment {wildcards.experiment} --checkpoint {input.checkpoint}"
            " --config-json {params.cfg} --out-dir {params.out_dir} --threads {threads}"
            f" --vg-attribution-min-count {VGA_MIN_COUNT} > {{log}} 2>&1"
