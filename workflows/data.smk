# Data: the smoke world is synthesised; paper-scale data is acquired (see `hypvl.data.acquire`).

if SCALE == "smoke":

    rule synthesize_world:
        output:
            f"{DATA}/manifest.json",
        params:
            cfg=PLAN.step_config("synthesize"),
        log:
            f"{RESULTS}/logs/synthesize_world.log",
        shell:
            "hypvl synthesize --config-json {params.cfg} --out {DATA} > {log} 2>&1"


def data_ready(wildcards=None):
    """The marker the data steps leave: the smoke world's manifest (paper-scale data is checked by each step)."""
    return [f"{DATA}/manifest.json"] if SCALE == "smoke" else []
