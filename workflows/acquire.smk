# Paper-scale data: each dataset of the acquisition manifest (`hypvl acquire --list`) that the config places
# (`acquire`: dataset -> folder under data_dir) is fetched by one job, checksum-verified, into that folder; the job
# then checks that every path the readers need is there (else it names the manual `prepare` step that is due) and
# leaves {data_dir}/acquired/<dataset>.json. Grounding and evaluation jobs take these files as inputs, so missing
# data stops a run in its first jobs, each saying what to fetch or prepare, never inside a training or evaluation
# job. Downloads need the network, which cluster nodes often lack: the jobs run where Snakemake runs (localrules).
# With config `fetch.mirror` every fetch comes from that local folder instead (hypvl.acquire.mirror); the pilot scale
# writes its world there first (rule pilot_world).


localrules:
    acquire,


rule acquire:
    input:
        PLAN.data.pilot_world(),  # the pilot's mirror, written first
    output:
        marker=f"{DATA}/acquired/{{dataset}}.json",
    log:
        f"{RESULTS}/logs/acquire/{{dataset}}.log",
    wildcard_constraints:
        dataset=PLAN.pattern(config["acquire"]),
    priority: PLAN.training.first_priority()  # before any other job: missing data is named at the start of a run
    conda:
        ENV
    resources:
        **PLAN.step_resources("acquire"),
    params:
        dest=lambda w: PLAN.data.acquisition_folder(w.dataset),
        ready=lambda w: ["--ready", *ready] if (ready := PLAN.data.acquisition_ready(w.dataset)) else [],
        fetch=PLAN.data.fetch_options(config["fetch"]["sources"]),  # a mirror and manifest, where configured
    shell:
        "hypvl acquire {wildcards.dataset} --dest {params.dest:q} {params.ready:q} {params.fetch:q}"
        " --out {output.marker:q} > {log:q} 2>&1"
