"""The reports stage's plan (workflows/report.smk): which metric files each compared table and printed row needs,
what `hypvl compare` is told about the cells the plan leaves missing (`blockers`) and the rows averaged over several
seeds (`seeds_arg`), and the report, claims and regression targets.

A table needs the metrics of the (experiment, task) cells the suite can produce, on every seed of a row that
averages several (config `seeds`); every other cell renders as missing with the plan's reason, so every report
target works now and fills in as the suite grows.
"""

import json
import shlex
from pathlib import Path

from hypvl.errors import InputError, first_key
from hypvl.outside.extras import EXTRA_EXPERIMENT, EXTRA_ROW, entry_problem, extra_needs
from hypvl.replication.coverage import NEEDS_DATA, Blockers
from hypvl.spec.paper import seed_variant, table_needs
from hypvl.spec.tables import row_needs
from hypvl.workflow.core import Core
from hypvl.workflow.evaluation import EvaluationStage


def check_report_text(config: dict) -> None:
    """InputError naming the first config string holding `<`: `snakemake --report` writes the config's paths and
    settings (each report rule's inputs, outputs and params) into its page's scripts as JSON, unescaped, where
    `</script>` would end one and start the config's own. Spec names, the other text it shows, are plain text by the
    spec schema."""
    key = first_key(config, lambda leaf: isinstance(leaf, str) and "<" in leaf)
    if key is not None:
        raise InputError(f"config key {key}: holds '<', which snakemake --report would write unescaped into its "
                         "page's scripts; refused")


FLAGSHIP = "hycoclip"  # the paper whose tables are also reports/tableN.* (the README's main job: reports/table1.md)


class ReportStage:
    """The compare, report, claims, coverage, index and regression targets of one plan."""

    def __init__(self, plan: Core, evaluation: EvaluationStage):
        self.plan = plan
        self.evaluation = evaluation
        self.folder = Path(plan.config["reports_dir"])
        check_report_text(plan.config)

    def _with_variants(self, needs) -> set[tuple[str, str]]:
        """(experiment, task) pairs plus the same tasks on the experiments' seed variants."""
        plan = self.plan
        return {(seed_variant(plan.experiment(exp), seed), task) for exp, task in needs
                for seed in plan.seeds.get(exp, (plan.experiment(exp).seed,))} | set(needs)

    def _extra_needs(self, paper: str, table: str, experiments=None) -> set[tuple[str, str]]:
        """What the rows of the extra models (config `extra_models`; `experiments`: some of them) in a table read."""
        table_spec = self.plan.specs[paper].table(table)
        return {need for exp in (self.plan.extras if experiments is None else experiments)
                for need in extra_needs(table_spec, exp)}

    def table_inputs(self, paper: str, table: str) -> list[str]:
        """Metric JSONs a table needs (its extra models' rows too) that the suite can compute; the rest are reported
        as missing."""
        needs = self._with_variants(table_needs(self.plan.specs[paper], table)) | self._extra_needs(paper, table)
        return self.evaluation.metric_files(needs)

    def row_inputs(self, paper: str, table: str, row: str) -> list[str]:
        """Metric JSONs one printed row (or a printed row's released checkpoint, `<row>__released`) needs that
        the suite can compute (empty for an external row).

        ValueError names the table's rows when `row` is not one of them.
        """
        table_spec = self.plan.specs[paper].table(table)
        extra = EXTRA_EXPERIMENT + row.removeprefix(EXTRA_ROW) if row.startswith(EXTRA_ROW) else None
        if extra in self.plan.extras and entry_problem(table_spec) is None:
            return self.evaluation.metric_files(self._extra_needs(paper, table, [extra]))
        rows = table_spec.compared_rows()
        if row not in rows:
            raise ValueError(f"{paper} {table} has no row {row!r} (rows: {', '.join(rows)})")
        return self.evaluation.metric_files(self._with_variants(row_needs(table_spec, row)))

    def curves(self, paper: str, table: str) -> dict[str, str]:
        """Experiment -> the PNG of its model's training curves (reports/curves/<model>.png), for each experiment of a
        table whose metrics the table reads and whose model the suite trains or fine-tunes."""
        plan, needs = self.plan, table_needs(self.plan.specs[paper], table)
        measured = sorted({exp for exp, task in needs if plan.runnable(exp) and self.evaluation.computable(task)})
        models = {exp: plan.model_of(exp) for exp in measured}
        return {exp: str(self.folder / "curves" / f"{model}.png") for exp, model in models.items()
                if plan.trains(model) or plan.fine_tunes(model)}

    def curves_arg(self, paper: str, table: str) -> str:
        """`hypvl report`'s shell-quoted `--curves EXPERIMENT=PNG ...` of a table (empty where it has none)."""
        curves = self.curves(paper, table)
        return f"--curves {' '.join(shlex.quote(f'{exp}={png}') for exp, png in curves.items())}" if curves else ""

    def paper_name(self, paper: str) -> str:
        """The name a paper's reports go under (its spec's `name`, plain text by the spec schema): the report's
        category, which `snakemake --report` writes unescaped into its page's scripts and its captions' RST."""
        return self.plan.specs[paper].name

    def blockers(self, paper: str, table: str) -> Blockers:
        """The experiments and tasks of a table the plan produces no metric for, with the reason."""
        needs = table_needs(self.plan.specs[paper], table) | self._extra_needs(paper, table)
        experiments, tasks = {exp for exp, _ in needs}, {task for _, task in needs}
        blocked = {exp: self.plan.blocker(exp) for exp in sorted(experiments)}
        return Blockers({exp: reason for exp, reason in blocked.items() if reason},
                        {task: NEEDS_DATA for task in sorted(tasks) if not self.evaluation.computable(task)})

    def blockers_arg(self, paper: str, table: str) -> str:
        """`hypvl compare`'s shell-quoted `--blockers` JSON for a table."""
        return shlex.quote(self.blockers(paper, table).to_json())

    def extras_arg(self, paper: str, table: str) -> str:
        """`hypvl compare`'s `--extras` JSON for a table: {row: {experiment, source, geometry}} of the extra models
        that enter it (none where it cannot be entered, `hypvl.outside.extras.entry_problem`)."""
        if entry_problem(self.plan.specs[paper].table(table)) is not None:
            return "{}"
        return json.dumps({extra.row: {"experiment": exp, "source": extra.source, "geometry": extra.geometry}
                           for exp, extra in sorted(self.plan.extras.items())}, sort_keys=True)

    def seeds_arg(self, paper: str, table: str) -> str:
        """JSON {experiment: seeds} of the table's rows that average several seeds (`hypvl compare --seeds`)."""
        rows = self.plan.specs[paper].table(table).experiments()
        return json.dumps({exp: list(self.plan.seeds[exp]) for exp in rows if exp in self.plan.seeds}, sort_keys=True)

    def compare_csvs(self) -> list[str]:
        """Every table's compare CSV: what the claims audit reads."""
        return [str(self.plan.results / "tables" / paper / f"{table}.csv") for paper, table in self.plan.tables()]

    def spec_files(self) -> list[str]:
        """Every replication spec (the claims audit reads the claims there)."""
        return sorted(str(spec.path) for spec in self.plan.specs.values())

    def metric_files(self) -> list[str]:
        """Every metric JSON some table needs that the suite can compute, plus `regression_extras` (task groups
        no table needs, evaluated on a few models so that every group is pinned): what the regression checks."""
        specs, metric_files = self.plan.specs, self.evaluation.metric_files
        needs = {path for paper, table in self.plan.tables()  # seed variants are not pinned
                 for path in metric_files(table_needs(specs[paper], table))}
        extras = {(experiment, task) for experiment, groups in self.plan.config.get("regression_extras", {}).items()
                  for group in groups for task in self.plan.groups[group]}
        return sorted(needs | set(metric_files(extras)))

    def export_inputs(self, experiment: str | None = None) -> list[str]:
        """What the exports read: every metric JSON the tables (their extra models' rows too) and the regression need,
        or those of one experiment."""
        files = {path for paper, table in self.plan.tables() for path in self.table_inputs(paper, table)}
        files |= set(self.metric_files())
        if experiment is not None:
            folder = str(self.plan.results / "metrics" / experiment)
            files = {path for path in files if str(Path(path).parent) == folder}
        return sorted(files)

    def target(self, paper: str, table: str) -> Path:
        """The report of one table: reports/<paper>/<table>.md."""
        return self.folder / paper / f"{table}.md"

    def targets(self) -> list[str]:
        """Every table report."""
        return [str(self.target(paper, table)) for paper, table in self.plan.tables()]
