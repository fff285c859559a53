# Grounding (HyCoCLIP App. A): each raw training corpus -> grounded shards (`hypvl ground`), with a
# grounding.json summary that marks the corpus ready. At smoke scale the raw corpora come from the
# synthesized world; at paper scale from acquisition (see `hypvl acquire`).
import json
import re
import shlex

# grounded folder (config `corpora`) -> corpus name, for corpora that have a raw source to ground
GROUNDED = {folder: corpus for corpus, folder in config["corpora"].items() if corpus in config["grounding"]["raw"]}
GROUND_CONFIG = shlex.quote(json.dumps(
    {key: config[key] for key in ("data_dir", "spacy_model", "corpora", "grounding")}, sort_keys=True))


def grounded_summary(corpus):
    """The file `hypvl ground` leaves when training corpus `corpus` is grounded."""
    return f"{DATA}/{config['corpora'][corpus]}/grounding.json"


rule ground:
    input:
        [f"{DATA}/manifest.json"] if SCALE == "smoke" else [],
    output:
        f"{DATA}/{{grounded}}/grounding.json",
    wildcard_constraints:
        grounded="|".join(re.escape(folder) for folder in GROUNDED),
    params:
        corpus=lambda w: GROUNDED[w.grounded],
        cfg=GROUND_CONFIG,
    log:
        f"{RESULTS}/logs/ground/{{grounded}}.log",
    shell:
        "hypvl ground --corpus {params.corpus} --config-json {params.cfg} > {log} 2>&1"
