# Compare each table with the paper's printed numbers and render the reports. Each report's page and picture are
# flagged for `snakemake --report report.html` (or .zip): a category per paper, a subcategory per table.

# what `hypvl compare` is told of a table, for the whole table and for one row alike
TABLE_OPTIONS = dict(
    blockers=lambda w: PLAN.reports.blockers_arg(w.paper, w.table),  # why the plan leaves a cell missing
    seeds=lambda w: PLAN.reports.seeds_arg(w.paper, w.table),  # rows averaged over several seeds (config `seeds`)
    extras=lambda w: PLAN.reports.extras_arg(w.paper, w.table),  # config `extra_models`: rows of their own
)


rule compare:
    input:
        lambda w: PLAN.reports.table_inputs(w.paper, w.table),
        expected=f"{config['expected_dir']}/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
    output:
        csv=f"{RESULTS}/tables/{{paper}}/{{table}}.csv",
    log:
        f"{RESULTS}/logs/compare/{{paper}}/{{table}}.log",
    conda:
        ENV
    params:
        **TABLE_OPTIONS,
        expected_dir=lambda w, input: above(input.expected, 2),
        metrics_dir=lambda w, output: f"{above(output.csv, 3)}/metrics",
        scale=SCALE,
    shell:
        "hypvl compare --spec {input.spec:q} --table {wildcards.table} --expected-dir {params.expected_dir:q}"
        " --metrics-dir {params.metrics_dir:q} --scale {params.scale:q} --blockers {params.blockers}"
        " --seeds {params.seeds:q} --extras {params.extras:q} --out {output.csv:q} > {log:q} 2>&1"


rule compare_row:
    # one printed row on its own (e.g. an ablation row): needs only that row's metric JSONs, so
    # `snakemake --cores all results/smoke/rows/hycoclip/table4/minus_cont_ibox_t.csv` runs that row's jobs alone
    input:
        lambda w: PLAN.reports.row_inputs(w.paper, w.table, w.row),
        expected=f"{config['expected_dir']}/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
    output:
        csv=f"{RESULTS}/rows/{{paper}}/{{table}}/{{row}}.csv",
    log:
        f"{RESULTS}/logs/compare_row/{{paper}}/{{table}}/{{row}}.log",
    wildcard_constraints:
        row="[a-z0-9][a-z0-9_]*",
    conda:
        ENV
    params:
        **TABLE_OPTIONS,
        expected_dir=lambda w, input: above(input.expected, 2),
        metrics_dir=lambda w, output: f"{above(output.csv, 4)}/metrics",
        scale=SCALE,
    shell:
        "hypvl compare --spec {input.spec:q} --table {wildcards.table} --row {wildcards.row}"
        " --expected-dir {params.expected_dir:q} --metrics-dir {params.metrics_dir:q} --scale {params.scale:q}"
        " --blockers {params.blockers} --seeds {params.seeds:q} --extras {params.extras:q} --out {output.csv:q}"
        " > {log:q} 2>&1"


rule report:
    input:
        csv=f"{RESULTS}/tables/{{paper}}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{{paper}}.yaml",
        curves=lambda w: PLAN.reports.curves(w.paper, w.table).values(),  # the rows' training curves, linked
    output:
        md=f"{REPORTS}/{{paper}}/{{table}}.md",
        png=table_result(f"{REPORTS}/{{paper}}/{{table}}.png", "report/plot.rst"),
        html=table_result(f"{REPORTS}/{{paper}}/{{table}}.html", "report/table.rst"),
    log:
        f"{RESULTS}/logs/report/{{paper}}/{{table}}.log",
    conda:
        ENV
    params:
        expected_dir=config["expected_dir"],
        curves=lambda w: PLAN.reports.curves_arg(w.paper, w.table),
    shell:
        "hypvl report --spec {input.spec:q} --table {wildcards.table} --expected-dir {params.expected_dir:q}"
        " --compare-csv {input.csv:q} --out {output.md:q} {params.curves} > {log:q} 2>&1"


# reports/tableN.md: the flagship paper's tables (HyCoCLIP's, hypvl.workflow.reports.FLAGSHIP) at the top of reports/
use rule report as flagship_report with:
    input:
        csv=f"{RESULTS}/tables/{FLAGSHIP}/{{table}}.csv",
        spec=f"{config['replication_dir']}/{FLAGSHIP}.yaml",
        curves=lambda w: PLAN.reports.curves(FLAGSHIP, w.table).values(),
    output:
        md=f"{REPORTS}/{{table}}.md",
        png=table_result(f"{REPORTS}/{{table}}.png", "report/plot.rst", FLAGSHIP),
        html=table_result(f"{REPORTS}/{{table}}.html", "report/table.rst", FLAGSHIP),
    log:
        f"{RESULTS}/logs/report/flagship/{{table}}.log",
    params:
        expected_dir=config["expected_dir"],
        curves=lambda w: PLAN.reports.curves_arg(FLAGSHIP, w.table),


rule curves:
    # one model's training curves (loss terms, learning rate, curvature, temperature), linked from its tables' rows
    input:
        log=f"{RESULTS}/models/{{experiment}}/train_log.csv",
    output:
        png=report(f"{REPORTS}/curves/{{experiment}}.png", caption="report/curves.rst", category="Training curves"),
    log:
        f"{RESULTS}/logs/curves/{{experiment}}.log",
    conda:
        ENV
    shell:
        "hypvl curves --log {input.log:q} --experiment {wildcards.experiment} --out {output.png:q} > {log:q} 2>&1"


rule page:
    # the index, the claims audit and the coverage as HTML pages: the overview of `snakemake --report`
    input:
        md=f"{REPORTS}/{{page}}.md",
    output:
        html=report(f"{REPORTS}/{{page}}.html", caption="report/page.rst", category="Overview"),
    log:
        f"{RESULTS}/logs/page/{{page}}.log",
    wildcard_constraints:
        page="index|claims|coverage",
    conda:
        ENV
    shell:
        "hypvl html --markdown {input.md:q} --out {output.html:q} > {log:q} 2>&1"


rule claims:
    # every explicit claim of the papers, checked on the papers' numbers and on ours
    input:
        tables=PLAN.reports.compare_csvs(),
        specs=PLAN.reports.spec_files(),
    output:
        md=f"{REPORTS}/claims.md",
    log:
        f"{RESULTS}/logs/claims.log",
    conda:
        ENV
    params:
        replication_dir=lambda w, input: above(input.specs[0]),
        expected_dir=config["expected_dir"],
        tables_dir=lambda w, input: above(input.tables[0], 2),
        scale=SCALE,
    shell:
        "hypvl claims --replication-dir {params.replication_dir:q} --expected-dir {params.expected_dir:q}"
        " --tables-dir {params.tables_dir:q} --scale {params.scale:q} --out {output.md:q} > {log:q} 2>&1"


rule coverage:
    # every printed cell: computed, external, or missing and why (`hypvl coverage` says it at any time, unrun)
    input:
        tables=PLAN.reports.compare_csvs(),
        specs=PLAN.reports.spec_files(),
    output:
        md=f"{REPORTS}/coverage.md",
    log:
        f"{RESULTS}/logs/coverage.log",
    conda:
        ENV
    params:
        cfg=PLAN.step_config("coverage"),
    shell:
        "hypvl coverage --config-json {params.cfg} --out {output.md:q} > {log:q} 2>&1"


rule index:
    input:
        PLAN.reports.targets(),
        f"{REPORTS}/claims.md",
        f"{REPORTS}/coverage.md",
    output:
        md=f"{REPORTS}/index.md",
    log:
        f"{RESULTS}/logs/index.log",
    conda:
        ENV
    params:
        reports_dir=lambda w, output: above(output.md),
        tables_dir=f"{RESULTS}/tables",  # the compare CSVs whose verdicts the index counts per paper
    shell:
        "hypvl index --reports-dir {params.reports_dir:q} --tables-dir {params.tables_dir:q} --out {output.md:q}"
        " > {log:q} 2>&1"


EXPORT = (
    "hypvl export {input.metrics:q} --scale {params.scale:q} --csv {output.csv:q}"
    " --clip-benchmark-dir {output.clip_benchmark:q} > {log:q} 2>&1"
)


rule export:
    # every metric the tables and the regression need (extra models' too), as one CSV (model, task, metric, value,
    # unit) and as CLIP_benchmark's JSONs for the tasks it also has (hypvl.replication.exports)
    input:
        metrics=lambda w: PLAN.reports.export_inputs(),
    output:
        csv=f"{RESULTS}/exports/metrics.csv",
        clip_benchmark=directory(f"{RESULTS}/exports/clip_benchmark"),
    log:
        f"{RESULTS}/logs/export/all.log",
    conda:
        ENV
    params:
        scale=SCALE,
    shell:
        EXPORT


rule export_model:
    # the same for one model: results/<scale>/exports/<experiment>/...
    input:
        metrics=lambda w: PLAN.reports.export_inputs(w.experiment),
    output:
        csv=f"{RESULTS}/exports/{{experiment}}/metrics.csv",
        clip_benchmark=directory(f"{RESULTS}/exports/{{experiment}}/clip_benchmark"),
    log:
        f"{RESULTS}/logs/export/{{experiment}}.log",
    wildcard_constraints:
        experiment=PLAN.pattern(PLAN.experiments()),
    conda:
        ENV
    params:
        scale=SCALE,
    shell:
        EXPORT


rule regress:
    # every number the tables need, checked against the pinned baseline of this scale (PASS/FAIL at the top;
    # `hypvl regress ... --update` re-pins after a deliberate change)
    input:
        metrics=lambda w: PLAN.reports.metric_files(),  # a function: computed only when the regression is requested
        baseline=f"{config['baselines_dir']}/{SCALE}.csv",
        tolerances=f"{config['baselines_dir']}/tolerances.yaml",
    output:
        md=f"{REPORTS}/regression.md",
    log:
        f"{RESULTS}/logs/regress.log",
    conda:
        ENV
    params:
        metrics_dir=lambda w, input: above(input.metrics[0], 2),
        scale=SCALE,
    shell:
        "hypvl regress --metrics-dir {params.metrics_dir:q} --scale {params.scale:q} --baseline {input.baseline:q}"
        " --tolerances {input.tolerances:q} --whole --out {output.md:q} > {log:q} 2>&1"
