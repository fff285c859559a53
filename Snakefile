# hypvl: from data to reports. `snakemake --cores all reports/table1.md` runs the smoke scale;
# add `--configfile workflows/config/full.yaml` for paper scale. See README.md.
import os

from snakemake.utils import min_version

from hypvl.config import DEFAULT_CONFIG, PROJECT_ENV, deep_merge, in_project, load_config, validate_config
from hypvl.workflow.patterns import ANY_ID

min_version("8.0")


configfile: str(DEFAULT_CONFIG)  # the packaged smoke-scale default (src/hypvl/config/default.yaml)


# Used as a Snakemake `module` with `config:`, the default is not read above: the module's config goes over it here.
# The specs, printed tables and baselines are this checkout's, wherever the run's working directory is.
PROJECT = str(workflow.current_basedir)  # this checkout (also where a conda environment installs hypvl from)
config.update(in_project(deep_merge(load_config(project=PROJECT), config), PROJECT))
os.environ[PROJECT_ENV] = PROJECT
validate_config(config, "the workflow config (default.yaml + --configfile/--config)")  # schema.yaml, retired keys


report: "workflows/report/workflow.rst"  # `snakemake --report report.html`: the description of the HTML report


# Under `--sdm apptainer` every job runs in the project's image (config `container`; Dockerfile, container/hypvl.def).
container: config["container"]


include: "workflows/common.smk"


wildcard_constraints:
    experiment=ANY_ID,
    paper="|".join(PLAN.specs),
    table=r"table\d+",


include: "workflows/data.smk"
include: "workflows/acquire.smk"
include: "workflows/grounding.smk"
include: "workflows/train.smk"
include: "workflows/outside.smk"
include: "workflows/evaluate.smk"
include: "workflows/report.smk"


rule all:
    default_target: True
    input:
        f"{REPORTS}/index.md",
        *(f"{REPORTS}/{page}.html" for page in ("index", "claims", "coverage")),  # the overview of the HTML report
