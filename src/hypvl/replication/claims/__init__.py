"""The claims audit: every explicit quantitative claim of a paper, as a predicate over table cells.

One concept per module, imports pointing one way (render -> evaluator -> language):
  language   how a claim is written in `replication/<paper>.yaml`: schema, loading, reference checks
  evaluator  the predicates over the paper's numbers and ours, verdicts, the per-claim audit
  render     the markdown report, `reports/claims.md`
"""
