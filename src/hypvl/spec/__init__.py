"""Replication specs: `replication/<paper>.yaml` maps each printed table onto experiments and tasks.

A spec declares experiments (one trained or released model each) and, per table, which experiment produced each
printed row and which (task, metric) each printed value column reports; `released` maps a printed row to the released
checkpoint of that model, reported beside ours.

- `schema`: the YAML's JSON schema; `document`: strict YAML reading and schema messages by key path.
- `terms`: what a value column reports (a metric, or a mean); `tables`: a table's spec and what each cell reads;
  `paper`: a paper's experiments and tables, and the metric JSONs a table needs.
- `build_table`: one table built and cross-checked against its expected CSV and the task registry; `load`: a spec
  file, or every one, loaded and validated.
"""
