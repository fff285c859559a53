# Data: the smoke world is synthesised, each raw corpus and the evaluation sets by their own job (so a
# corpus is grounded while the evaluation sets are drawn); paper-scale data is acquired (`hypvl acquire`).
# Raw training corpora are then grounded (workflows/grounding.smk).

if SCALE == "smoke":

    rule synthesize_corpus:
        output:
            summary=f"{DATA}/{{raw}}/corpus.json",
        wildcard_constraints:
            raw="|".join(re.escape(entry["path"]) for entry in config["grounding"]["raw"].values()),
        params:
            cfg=PLAN.step_config("synthesize"),
            corpus=lambda w: PLAN.raw_corpus_named(w.raw),
            out=lambda w, output: above(output.summary, 1 + len(Path(w.raw).parts)),  # the data folder
        priority: 1  # before the evaluation sets: grounding waits for the corpora
        log:
            f"{RESULTS}/logs/synthesize/{{raw}}.log",
        conda:
            ENV
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {params.out:q} --only {params.corpus:q} > {log:q} 2>&1"

    rule synthesize_evaluation:
        output:
            manifest=f"{DATA}/manifest.json",
            # what the finetune rule reads (Plan.finetune_inputs)
            hierarcaps_train=f"{DATA}/{config['eval']['datasets']['hierarcaps_train']}",
            hierarcaps_train_images=f"{DATA}/{config['eval']['datasets']['hierarcaps_train_images']}",
        params:
            cfg=PLAN.step_config("synthesize"),
            out=lambda w, output: above(output.manifest),
        priority: 1  # every training job waits for it (it evaluates zero-shot)
        log:
            f"{RESULTS}/logs/synthesize/evaluation.log",
        conda:
            ENV
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {params.out:q} --only evaluation > {log:q} 2>&1"
