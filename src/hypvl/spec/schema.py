"""The JSON schema a `replication/<paper>.yaml` must satisfy (`SPEC_SCHEMA`), before any cross-check.

A value column is one metric of one task, a mean of several (nested means included, e.g. PoinCLIP Table 4's mean
of the COCO recalls' mean and CIFAR-100 accuracy), an `external` reason, or, where the paper reads two ways, named
`readings` of which `reading` is the one compared; a row is an experiment, an experiment scored on other tasks, named
`readings`, or `external`.
"""

_SLUG = "^[a-z0-9][a-z0-9_]*$"
_NAME = r"^\w[\w .,()+/-]*$(?!\n)"  # letters, digits, spaces and .,()+/- only: no markup, no line break
_TASK = {"type": "string", "pattern": _SLUG}
_TOLERANCE = {"type": "number", "minimum": 0, "maximum": 100}  # in the printed table's units
_SCALE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}  # our number times it is the printed one
# a column that reads one model whatever the row (tables whose columns name models, e.g. HierarCaps Table 7)
_EXPERIMENT = {"type": "string", "pattern": _SLUG}


def _named(entry: dict) -> dict:
    """At least one entry `entry`, each under a slug."""
    return {"type": "object", "minProperties": 1, "propertyNames": {"pattern": _SLUG}, "additionalProperties": entry}


SPEC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["paper", "title", "experiments", "tables"],
    "properties": {
        "paper": {"type": "string", "pattern": _SLUG},
        # the paper's short name in reports (default: `paper`), plain text: `snakemake --report` writes it unescaped
        # into its page's scripts and into every caption's reStructuredText (hypvl.workflow.reports.paper_name)
        "name": {"type": "string", "maxLength": 60, "pattern": _NAME},
        "title": {"type": "string", "minLength": 1},
        "claims": {},  # validated by the claims audit
        "experiments": _named({
                "type": "object",
                "additionalProperties": False,
                "required": ["method", "backbone", "data", "source"],
                "properties": {
                    "method": {"type": "string", "pattern": _SLUG},
                    "backbone": {"type": "string", "pattern": _SLUG},
                    "data": {"type": "string", "pattern": _SLUG},
                    "boxes": {"type": "boolean"},
                    "source": {"type": "string", "pattern": "^(train|released:.+|pretrained:.+)$"},
                    "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
                    "overrides": {"type": "object"},
                    "note": {"type": "string"},
                },
            }),
        "tables": _named({
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "expected", "tolerance", "rows", "columns"],
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "expected": {"type": "string", "pattern": r"^[^/\\]+\.csv$"},
                    "tolerance": _TOLERANCE,
                    "rows": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "oneOf": [
                                {"type": "string", "pattern": _SLUG},
                                {
                                    # one model scored another way, e.g. HierarCaps Table 7's single-prompt rows
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["experiment", "tasks"],
                                    "properties": {
                                        "experiment": {"type": "string", "pattern": _SLUG},
                                        "tasks": {"type": "object", "minProperties": 1,
                                                  "propertyNames": {"pattern": _SLUG},
                                                  "additionalProperties": _TASK},
                                    },
                                },
                                {
                                    # a row the paper and its code describe two ways: one experiment per reading,
                                    # `reading` the one compared as the row, each other one as `<row>__<name>`
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["readings", "reading"],
                                    "properties": {
                                        "readings": {"type": "object", "minProperties": 2,
                                                     "propertyNames": {"pattern": _SLUG},
                                                     "additionalProperties": {"type": "string", "pattern": _SLUG}},
                                        "reading": {"type": "string", "pattern": _SLUG},
                                    },
                                },
                                {"$ref": "#/$defs/external"},
                            ]
                        },
                    },
                    "released": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "pattern": _SLUG},
                    },
                    # an ablation: the printed label column whose values the rows vary (the plot's x axis, in
                    # printed order), the label column splitting them into lines, the rows drawn as horizontal
                    # reference lines, and whether the settings are ordered (a line) or not (points)
                    "ablation": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["varies"],
                        "properties": {
                            "varies": {"type": "string", "pattern": "^_"},
                            "series": {"type": "string", "pattern": "^_"},
                            "reference": {"type": "array", "items": {"type": "string", "pattern": _SLUG},
                                          "uniqueItems": True},
                            "ordered": {"type": "boolean"},
                        },
                    },
                    "columns": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "oneOf": [
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["task", "metric"],
                                    "properties": {
                                        "task": _TASK, "metric": _TASK, "tolerance": _TOLERANCE, "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["mean_of"],
                                    "properties": {
                                        "mean_of": {"$ref": "#/$defs/terms"},
                                        "metric": _TASK,
                                        "tolerance": _TOLERANCE,
                                        "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["readings", "reading"],
                                    "properties": {
                                        "readings": {
                                            "type": "object",
                                            "minProperties": 2,
                                            "propertyNames": {"pattern": _SLUG},
                                            "additionalProperties": {"$ref": "#/$defs/term"},
                                        },
                                        "reading": {"type": "string", "pattern": _SLUG},
                                        "tolerance": _TOLERANCE,
                                        "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {"$ref": "#/$defs/external"},
                            ]
                        },
                    },
                },
            }),
    },
    "$defs": {
        # what a mean averages: task ids (of the enclosing `metric`), {task, metric} or nested means
        "terms": {
            "type": "array",
            "minItems": 2,
            "uniqueItems": True,
            "items": {"oneOf": [_TASK, {"$ref": "#/$defs/term"}]},
        },
        "term": {
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["task", "metric"],
                    "properties": {"task": _TASK, "metric": _TASK},
                },
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["mean_of"],
                    "properties": {"mean_of": {"$ref": "#/$defs/terms"}, "metric": _TASK},
                },
            ]
        },
        "external": {
            "type": "object",
            "additionalProperties": False,
            "required": ["external"],
            "properties": {"external": {"type": "string", "minLength": 1}},
        }
    },
}
