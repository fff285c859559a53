"""`hypvl compare`, `report`, `curves`, `html`, `claims`, `index` and `regress`: the replication steps of the workflow.

pandas and matplotlib are imported inside the handlers, so registering these commands costs every
other `hypvl` command nothing at start-up.
"""

import logging

log = logging.getLogger(__name__)


def _compare(args) -> None:
    """Join a table's printed numbers (or one printed row's) with the metric JSONs; write the compare CSV."""
    from hypvl.errors import InputError
    from hypvl.replication.compare import compare_table, write_compare_csv
    from hypvl.replication.coverage import Blockers
    from hypvl.spec.load import load_spec

    spec = load_spec(args.spec, args.expected_dir)
    seeds, extras = (_json_object(name, text) for name, text in (("--seeds", args.seeds), ("--extras", args.extras)))
    blockers = Blockers.from_json(args.blockers) if args.blockers is not None else None
    frame = compare_table(spec, args.table, args.metrics_dir, args.scale, seeds=seeds, blockers=blockers,
                          extras=extras)
    if args.row is not None:
        rows = [*spec.table(args.table).compared_rows(), *extras]
        if args.row not in rows:
            raise InputError(f"{spec.path}: table {args.table} has no row {args.row!r} (rows: {', '.join(rows)})")
        frame = frame[frame["row"] == args.row]
    write_compare_csv(frame, args.out)


def _json_object(option: str, text: str) -> dict:
    """The JSON object an option gives; InputError names the option when it is not one."""
    import json

    from hypvl.errors import InputError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InputError(f"{option}: must be a JSON object, not {text!r}")
    return value


def _export(args) -> None:
    """Write the combined metrics CSV and the CLIP_benchmark-format JSONs of the metric JSONs given."""
    from hypvl.replication.exports import write_exports

    write_exports(args.metrics, args.scale, args.csv, args.clip_benchmark_dir)


def _report(args) -> None:
    """Render a table report (markdown + PNG) from its compare CSV."""
    from hypvl.replication.compare import read_compare_csv
    from hypvl.replication.report import write_report
    from hypvl.spec.load import load_spec

    from hypvl.errors import InputError

    spec = load_spec(args.spec, args.expected_dir)
    frame = read_compare_csv(args.compare_csv)
    curves = dict(entry.partition("=")[::2] for entry in args.curves)
    if not all(curves.values()) or len(curves) != len(args.curves):
        raise InputError(f"--curves: give each as EXPERIMENT=PNG, once per experiment, not {args.curves}")
    write_report(spec, args.table, frame, args.out, also=args.also, source=args.compare_csv, curves=curves)


def _curves(args) -> None:
    """Draw one model's training curves from its train_log.csv."""
    from hypvl.replication.curves import draw_curves, read_log
    from hypvl.replication.plots import save_png

    save_png(draw_curves(read_log(args.log), f"training of {args.experiment}"), args.out)


def _html(args) -> None:
    """Render a markdown report as a self-contained HTML page."""
    from hypvl.replication.html import write_html

    write_html(args.markdown, args.out)


def _index(args) -> None:
    """Render reports/index.md linking every table report and the claims audit, with the agreement per paper."""
    from hypvl.replication.index import render_index

    render_index(args.reports_dir, args.out, args.tables_dir)


def _claims(args) -> None:
    """Audit every claim of every spec on the papers' numbers and ours; write reports/claims.md."""
    from hypvl.replication.claims.render import write_claims_report
    from hypvl.spec.load import load_all_specs

    specs = load_all_specs(args.replication_dir, args.expected_dir)
    write_claims_report(specs, args.tables_dir, args.scale, args.out)


def _regress(args) -> None:
    """Check the measured metrics against the pinned baseline (or pin them); write the regression report."""
    from hypvl.errors import InputError
    from hypvl.io import atomic_write
    from hypvl.replication.regression import (
        check,
        failures,
        load_policy,
        measured_values,
        read_baseline,
        render_report,
        update_baseline,
    )

    policy = load_policy(args.tolerances)
    measured = measured_values(args.metrics_dir, args.scale, policy)
    if measured.empty:
        raise InputError(f"{args.metrics_dir}: no metrics JSONs to check")
    if args.update:
        update_baseline(args.baseline, measured)
        log.info("pinned %d values in %s", len(measured), args.baseline)
    checked = check(measured, read_baseline(args.baseline), policy, args.scale, whole=args.whole)
    report = render_report(checked, args.scale, args.baseline, args.whole)
    bad = failures(checked)
    if args.out:
        with atomic_write(args.out) as handle:
            handle.write(report)
        log.info("%d values ok, %d not; see %s", len(checked) - len(bad), len(bad), args.out)
    else:
        print(report)
    if args.strict and not bad.empty:
        raise SystemExit(1)


def add_commands(subparsers) -> None:
    """Register the `compare`, `report`, `curves`, `html`, `claims`, `index` and `regress` subcommands."""
    expected_help = "folder holding <paper>/<table>.csv (default: expected/ beside the spec's folder)"

    compare = subparsers.add_parser("compare", help="join a table's printed numbers with our metric JSONs")
    compare.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    compare.add_argument("--table", required=True, help="table name in the spec, e.g. table1")
    compare.add_argument("--expected-dir", default=None, help=expected_help)
    compare.add_argument("--metrics-dir", required=True, help="results/<scale>/metrics")
    compare.add_argument("--scale", required=True, help="scale the metrics were measured at (smoke, full)")
    compare.add_argument("--row", default=None, help="only this printed row (an ablation row's own target)")
    compare.add_argument("--blockers", default=None,
                         help="JSON: the experiments and tasks the workflow's plan does not produce, with the reason "
                              "(what a missing cell says; the workflow passes it)")
    compare.add_argument("--seeds", default="{}",
                         help='JSON {experiment: [seed, ...]}: rows averaged over those seeds\' models (config seeds)')
    compare.add_argument("--extras", default="{}",
                         help="JSON {extra__<name>: {experiment, source}}: extra models' rows (config extra_models)")
    compare.add_argument("--out", required=True, help="results/<scale>/tables/<paper>/<table>.csv")
    compare.set_defaults(func=_compare)

    export = subparsers.add_parser("export", help="one CSV of every metric, and CLIP_benchmark's JSONs")
    export.add_argument("metrics", nargs="+", help="metric JSONs (<metrics_dir>/<experiment>/<task>.json), or folders "
                        "of them (results/<scale>/metrics: what exists; an experiment's; `hypvl evaluate`'s --out-dir)")
    export.add_argument("--scale", required=True, help="scale they were measured at")
    export.add_argument("--csv", required=True, help="results/<scale>/exports/metrics.csv")
    export.add_argument("--clip-benchmark-dir", required=True, help="results/<scale>/exports/clip_benchmark")
    export.set_defaults(func=_export)

    report = subparsers.add_parser("report", help="render a table report (markdown + PNG plot)")
    report.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    report.add_argument("--table", required=True, help="table name in the spec, e.g. table1")
    report.add_argument("--expected-dir", default=None, help=expected_help)
    report.add_argument("--compare-csv", required=True, help="the CSV written by `hypvl compare`")
    report.add_argument("--out", required=True, help="reports/<paper>/<table>.md (the PNG goes beside it)")
    report.add_argument("--also", action="append", default=[], help="another path for the same report (repeatable)")
    report.add_argument("--curves", nargs="*", default=[],
                        help="EXPERIMENT=PNG: the training curves of a row's model, linked from its row")
    report.set_defaults(func=_report)

    curves = subparsers.add_parser("curves", help="draw a model's training curves (loss terms, curvature, temperature)")
    curves.add_argument("--log", required=True, help="results/<scale>/models/<experiment>/train_log.csv")
    curves.add_argument("--experiment", required=True, help="the model's experiment id (the plot's title)")
    curves.add_argument("--out", required=True, help="reports/curves/<experiment>.png")
    curves.set_defaults(func=_curves)

    page = subparsers.add_parser("html", help="render a markdown report as a self-contained HTML page")
    page.add_argument("--markdown", required=True, help="a report, e.g. reports/index.md")
    page.add_argument("--out", required=True, help="the page, e.g. reports/index.html")
    page.set_defaults(func=_html)

    claims = subparsers.add_parser("claims", help="audit every claim of the papers (reports/claims.md)")
    claims.add_argument("--replication-dir", required=True, help="replication/ (claims live in each <paper>.yaml)")
    claims.add_argument("--expected-dir", default=None, help="expected/ (default: beside the replication folder)")
    claims.add_argument("--tables-dir", required=True, help="results/<scale>/tables (compare CSVs per paper)")
    claims.add_argument("--scale", required=True, help="scale the compare CSVs were measured at (smoke, full)")
    claims.add_argument("--out", required=True, help="reports/claims.md")
    claims.set_defaults(func=_claims)

    index = subparsers.add_parser("index", help="render reports/index.md")
    index.add_argument("--reports-dir", required=True, help="reports/")
    index.add_argument("--tables-dir", default=None,
                       help="results/<scale>/tables: the compare CSVs whose verdicts the index counts per paper")
    index.add_argument("--out", required=True, help="reports/index.md")
    index.set_defaults(func=_index)

    regress = subparsers.add_parser("regress", help="check measured metrics against a pinned baseline")
    regress.add_argument("--metrics-dir", required=True, help="results/<scale>/metrics")
    regress.add_argument("--scale", required=True, help="scale the metrics were measured at")
    regress.add_argument("--baseline", required=True, help="baselines/<scale>.csv")
    regress.add_argument("--tolerances", required=True, help="baselines/tolerances.yaml")
    regress.add_argument("--whole", action="store_true", help="every pinned value must have been measured")
    regress.add_argument("--update", action="store_true", help="pin the measured values first (re-baseline)")
    regress.add_argument("--strict", action="store_true", help="exit 1 when a value is not ok")
    regress.add_argument("--out", default=None, help="reports/regression.md (default: print the report)")
    regress.set_defaults(func=_regress)
