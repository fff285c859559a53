# Evaluation: one job per (experiment, task group), each writing one metrics JSON per task of the group
# (groups and their tasks: hypvl.tasks). The rules differ only in the group name. A group in
# `evaluate_with_training` is computed by the training job for the models it trains. An experiment whose
# recipe repeats another's is evaluated on that experiment's model (PLAN.model_of).

for _group in PLAN.groups:

    rule:
        name:
            f"evaluate_{_group}"
        input:
            lambda w, group=_group: PLAN.evaluation.inputs(group, w.experiment),
            checkpoint=lambda w: PLAN.checkpoint(PLAN.model_of(w.experiment)),
        output:
            PLAN.evaluation.group_outputs(_group),
        wildcard_constraints:
            experiment=PLAN.trained_pattern(False) if _group in PLAN.with_training else "[a-z0-9_]+",
        params:
            # the shell command is formatted at run time, after the loop has moved on: bind the group now
            args=lambda w, threads, group=_group: PLAN.evaluation.args(group, w.experiment, threads),
        threads: THREADS
        resources:
            **PLAN.step_resources("evaluate"),
        log:
            f"{RESULTS}/logs/evaluate/{{experiment}}/{_group}.log",
        conda:
            ENV
        shell:
            "hypvl {params.args} > {log:q} 2>&1"
