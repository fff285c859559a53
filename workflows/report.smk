# Compare each table with the paper's printed numbers and render the reports.

rule compare:
    input:
        lambda w: PLAN.table_inputs(w.paper, w.table),
        expected=f"{config['expected_dir']}/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
    output:
        f"{RESULTS}/tables/{{paper}}/{{table}}.csv",
    shell:
        "hypvl compare --spec {input.spec} --table {wildcards.table} --expected-dir {config[expected_dir]}"
        " --metrics-dir {RESULTS}/metrics --scale {SCALE} --out {output}"


rule compare_row:
    # one printed row on its own (e.g. an ablation row): needs only that row's metric JSONs, so
    # `snakemake --cores all results/smoke/rows/hycoclip/table4/minus_cont_ibox_t.csv` runs that row's jobs alone
    input:
        lambda w: PLAN.row_inputs(w.paper, w.table, w.row),
        expected=f"{config['expected_dir']}/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
    output:
        f"{RESULTS}/rows/{{paper}}/{{table}}/{{row}}.csv",
    wildcard_constraints:
        row="[a-z0-9][a-z0-9_]*",
    shell:
        "hypvl compare --spec {input.spec} --table {wildcards.table} --row {wildcards.row}"
        " --expected-dir {config[expected_dir]} --metrics-dir {RESULTS}/metrics --scale {SCALE} --out {output}"


rule report:
    input:
        csv=f"{RESULTS}/tables/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
    output:
        md=f"{REPORTS}/{{paper}}/{{table}}.md",
        png=f"{REPORTS}/{{paper}}/{{table}}.png",
    shell:
        "hypvl report --spec {input.spec} --table {wildcards.table} --expected-dir {config[expected_dir]}"
        " --compare-csv {input.csv} --out {output.md}"


rule flagship_report:
    # reports/tableN.md: HyCoCLIP's tables, the suite's flagship, at the top of reports/
    input:
        csv=f"{RESULTS}/tables/hycoclip/{{table}}.csv",
        spec=f"{config['replication_dir']}/hycoclip.yaml",
    output:
        md=f"{REPORTS}/{{table}}.md",
        png=f"{REPORTS}/{{table}}.png",
    shell:
        "hypvl report --spec {input.spec} --table {wildcards.table} --expected-dir {config[expected_dir]}"
        " --compare-csv {input.csv} --out {output.md}"


rule claims:
    # every explicit claim of the papers, checked on the papers' numbers and on ours
    input:
        PLAN.claims_inputs(),
    output:
        f"{REPORTS}/claims.md",
    shell:
        "hypvl claims --replication-dir {config[replication_dir]} --expected-dir {config[expected_dir]}"
        " --tables-dir {RESULTS}/tables --scale {SCALE} --out {output}"


rule index:
    input:
        PLAN.report_targets(),
        f"{REPORTS}/claims.md",
    output:
        f"{REPORTS}/index.md",
    shell:
        "hypvl index --reports-dir {REPORTS} --out {output}"


rule regress:
    # every number the tables need, checked against the pinned baseline of this scale (PASS/FAIL at the top;
    # `hypvl regress ... --update` re-pins after a deliberate change)
    input:
        PLAN.metric_files(),
        baseline=f"{config['baselines_dir']}/{SCALE}.csv",
        tolerances=f"{config['baselines_dir']}/tolerances.yaml",
    output:
        f"{REPORTS}/regression.md",
    shell:
        "hypvl regress --metrics-dir {RESULTS}/metrics --scale {SCALE} --baseline {input.baseline}"
        " --tolerances {input.tolerances} --whole --out {output}"
