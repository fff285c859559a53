#!/bin/sh
# Install hypvl with the workflow's extras at the locked versions into the image's Python (Dockerfile and
# container/hypvl.def run this from /opt/hypvl, a copy of the checkout's package, specs and workflow).
set -eu
cd /opt/hypvl
python -m pip install --no-cache-dir --upgrade pip 'setuptools>=68' wheel
# the CUDA build of PyTorch comes as the lock's torch and nvidia-* wheels; the GPU driver is the host's (--nv)
python -m pip install --no-cache-dir -c constraints.txt '.[workflow]'
python -m pip check
hypvl coverage --project /opt/hypvl > /dev/null   # the package, its config and the specs load
