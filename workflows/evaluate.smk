# Evaluation: one job per (experiment, task group), each writing one metrics JSON per task of the group, or of the
# subset of it that the targets read of the experiment (rules evaluate_<group>_part<n>: PLAN.evaluation.rules; groups
# and their tasks: hypvl.tasks). A group in `evaluate_with_training` is computed by the training job for the models it
# trains. An experiment whose recipe repeats another's is evaluated on that experiment's model (PLAN.model_of).

EVALUATION_RULES = PLAN.evaluation.rules(PLAN.reports.export_inputs())

for _rule in EVALUATION_RULES:

    rule:
        name:
            _rule.name
        input:
            lambda w, evaluation=_rule: PLAN.evaluation.inputs(evaluation, w.experiment),
            checkpoint=lambda w: PLAN.checkpoint(PLAN.model_of(w.experiment)),
        output:
            PLAN.evaluation.group_outputs(_rule.group, _rule.tasks),
        log:
            f"{RESULTS}/logs/evaluate/{{experiment}}/{_rule.group}.log",
        wildcard_constraints:
            experiment=_rule.experiments,
        conda:
            ENV
        threads: THREADS
        resources:
            **PLAN.step_resources("evaluate"),
        params:
            # the shell command is formatted at run time, after the loop has moved on: bind the rule now
            args=lambda w, threads, evaluation=_rule: PLAN.evaluation.args(
                evaluation.group, w.experiment, threads, evaluation.tasks if evaluation.subset else None
            ),
            claim=gpu_claim,  # untracked (common.smk)
        shell:
            "{params.claim}hypvl {params.args} > {log:q} 2>&1"


# a profile's set-resources and set-threads for evaluate_<group> reach its part rules too
for _rule in EVALUATION_RULES:
    if _rule.subset:
        inherit_rule_settings(_rule.name, f"evaluate_{_rule.group}")
