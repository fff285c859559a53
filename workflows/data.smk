# Data: the smoke world is synthesised; paper-scale data is acquired (see `hypvl acquire`).
# Raw training corpora are then grounded (workflows/grounding.smk).

if SCALE == "smoke":

    rule synthesize_world:
        output:
            manifest=f"{DATA}/manifest.json",
        params:
            cfg=PLAN.step_config("synthesize"),
            out=lambda w, output: above(output.manifest),
        log:
            f"{RESULTS}/logs/synthesize_world.log",
        conda:
            ENV
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {params.out:q} > {log:q} 2>&1"
