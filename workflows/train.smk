# Models trained by the suite: one job per distinct recipe of the replication specs (weights from outside:
# workflows/outside.smk), and HierarCaps' alignments of another experiment's model (rule finetune). A training job
# also evaluates its model on the `evaluate_with_training` groups, in the same process. Where the config has GPUs
# (resources.gpu), each run asks for the GPUs, nodes, memory and time its model and schedule need (hypvl.workflow.cost) and
# starts torchrun with a process per GPU (several nodes: srun, one torchrun per node).


rule train:
    input:
        *MODEL_INPUTS,
        init=lambda w: PLAN.training.init_checkpoint(w.experiment),
    output:
        **TRAINING_OUTPUTS,
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.training.trained_by("train"),  # one job per distinct recipe (PLAN.model_of)
    priority: lambda w: PLAN.training.priority(w.experiment)  # after every other ready job; the longest first
    retries: PLAN.training.retries()  # a run longer than resources.max_runtime continues from its checkpoint
    conda:
        ENV
    threads: lambda w: PLAN.training.threads(w.experiment)
    resources:
        # GPUs, nodes, host memory and runtime derived from the model and schedule (hypvl.workflow.cost), at paper scale
        **PLAN.training.job_resources(),
    params:
        spec=experiment_spec,
        declared=lambda w: PLAN.declared_id(w.experiment),  # a seed variant trains its experiment with another seed
        seed=lambda w: PLAN.experiment(w.experiment).seed,
        cfg=lambda w: PLAN.training.experiment_config(PLAN.declared_id(w.experiment)),
        settings=run_settings,  # untracked (common.smk)
        out=model_folder,
        init=lambda w, input: ["--init-checkpoint", input.init] if input.init else [],
        then=evaluations_after,
        launch=lambda w, threads: PLAN.training.launcher(w.experiment, threads),  # torchrun where a run has GPUs
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}{params.launch} --spec {params.spec:q} --experiment {params.declared} --seed {params.seed}"
        " --config-json {params.cfg} --config-json {params.settings} --out {params.out:q} {params.init:q}"
        " --quiet{params.then} > {log:q} 2>&1"


rule finetune:
    # HierarCaps' text-only Radial Embedding alignment (method radial_ft) of the model its `base` override names
    input:
        lambda w: PLAN.training.finetune_inputs(w.experiment),
        base=lambda w: PLAN.training.base_checkpoint(w.experiment),
    output:
        **TRAINING_OUTPUTS,
    log:
        f"{RESULTS}/logs/finetune/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.training.trained_by("finetune"),  # one job per distinct recipe (PLAN.model_of)
    priority: PLAN.training.making_priority()  # a made model is evaluated before the next is made
    conda:
        ENV
    threads: THREADS
    resources:
        **PLAN.step_resources("finetune"),
    params:
        spec=experiment_spec,
        cfg=PLAN.step_config("finetune"),
        settings=run_settings,  # untracked (common.smk)
        data=lambda w: [word for option in PLAN.training.finetune_data(w.experiment).items() for word in option],
        out=model_folder,
        then=evaluations_after,
        claim=gpu_claim,  # untracked (common.smk)
    shell:
        "{params.claim}hypvl finetune --spec {params.spec:q} --experiment {wildcards.experiment}"
        " --config-json {params.cfg} --config-json {params.settings}"
        " --base-checkpoint {input.base:q} {params.data:q} --out {params.out:q}"
        " --threads {threads} --quiet{params.then} > {log:q} 2>&1"
