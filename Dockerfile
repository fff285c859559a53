# hypvl's software for GPU machines and clusters: Python 3.11, PyTorch's CUDA build and every other dependency at the
# locked versions (constraints.txt), hypvl with the workflow's extras, and the checkout's specs, printed tables,
# baselines and workflow under /opt/hypvl. Build from the checkout, then convert for Apptainer (README, "Containers"):
#   docker build -t hypvl:0.1.0 .
#   apptainer build hypvl.sif docker-daemon://hypvl:0.1.0      (or without Docker: container/hypvl.def)
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HYPVL_PROJECT=/opt/hypvl MPLBACKEND=Agg
COPY pyproject.toml constraints.txt README.md Snakefile /opt/hypvl/
COPY src /opt/hypvl/src
COPY replication /opt/hypvl/replication
COPY expected /opt/hypvl/expected
COPY baselines /opt/hypvl/baselines
COPY workflows /opt/hypvl/workflows
COPY container /opt/hypvl/container
RUN sh /opt/hypvl/container/install.sh
WORKDIR /work
CMD ["hypvl", "--help"]
