"""What a printed value column reports: a Term (one task's metric, or a mean of terms) and the Column around it."""

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Measure:
    """One metric of one task."""

    task: str
    metric: str


@dataclass(frozen=True)
class Mean:
    """The mean of several terms (each a Measure or a Mean), as a paper averages columns."""

    terms: tuple["Measure | Mean", ...]


Term = Measure | Mean


def measures(term: Term) -> tuple[Measure, ...]:
    """The Measures a term averages, in order, depth first."""
    return (term,) if isinstance(term, Measure) else tuple(m for sub in term.terms for m in measures(sub))


def common_metric(term: Term) -> str:
    """The metric every measure of `term` reports, or "" where they report different ones."""
    names = {m.metric for m in measures(term)}
    return names.pop() if len(names) == 1 else ""


def renamed(term: Term, tasks: dict[str, str]) -> Term:
    """`term` with each task named in `tasks` replaced by the task it maps to."""
    if isinstance(term, Measure):
        return Measure(tasks.get(term.task, term.task), term.metric)
    return Mean(tuple(renamed(sub, tasks) for sub in term.terms))


def with_tasks(column: "Column", tasks: dict[str, str]) -> "Column":
    """`column` reading, for each task named in `tasks`, the task it maps to (every reading too)."""
    if not tasks:
        return column
    return replace(column, term=renamed(column.term, tasks),
                   readings={name: renamed(term, tasks) for name, term in column.readings.items()})


def term_label(term: Term, metric: str | None = None) -> str:
    """`task`, `task.metric` (where the metric is not `metric`) or `mean(...)` of those."""
    if isinstance(term, Measure):
        return term.task if term.metric == metric else f"{term.task}.{term.metric}"
    return f"mean({','.join(term_label(sub, metric) for sub in term.terms)})"


@dataclass(frozen=True)
class Column:
    """A printed value column: the term it reports (one task's metric, or a mean).

    tolerance: absolute, in printed units; None means the table's tolerance.
    scale: factor from our metric's units to the printed ones (0.01 where a paper prints a percentage
        metric as a fraction).
    readings: where the paper can be read several ways, every reading by name; `reading` names the one
        compared (`term`). Empty for a column with one reading.
    experiment: the experiment every row of the column reads, in place of the row's (a table whose columns name
        models); "" for the row's.
    """

    term: Term
    tolerance: float | None = None
    scale: float = 1.0
    readings: dict[str, Term] = field(default_factory=dict, hash=False)
    reading: str = ""
    experiment: str = ""

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks whose metric JSONs the column needs, each once, in order."""
        return tuple(dict.fromkeys(m.task for m in measures(self.term)))

    @property
    def metric(self) -> str:
        """The metric every term reports, or "" where they report different ones."""
        return common_metric(self.term)

    @property
    def task_label(self) -> str:
        """The task id, or `mean(task,...)`, naming each term's metric where they differ."""
        return term_label(self.term, self.metric or None)
