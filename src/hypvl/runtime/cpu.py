"""CPU code paths: which vector instructions torch's own kernels (ATen), MKL and oneDNN use.

Their results differ in the last bits between code paths (ATen's softmax sums and vectorised exp, MKL's GEMM
blocking), so a model trained on an AVX-512 machine is not bitwise the one trained on an AVX2 machine, and the
hyperbolic models' pinned smoke numbers move between machines. `avx2` makes all three take their AVX2 path on
every x86-64 CPU that has AVX2 (`ATEN_CPU_CAPABILITY`, `MKL_CBWR`, `ONEDNN_MAX_CPU_ISA`), costing about 10% of
the training speed on an AVX-512 machine; `native` lets each pick its best. The libraries read these variables
when torch loads or at their first kernel call: a `hypvl` process sets them before importing torch, and a warm
server's child (hypvl.runtime.warm) keeps its server's; a process that already imported torch keeps what it has.
"""

import os
import sys

from hypvl.errors import InputError
from hypvl.runtime.warm import SOCKET_ENV

ENVIRONMENT = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}


_chosen: list[str] = []  # the code path this process selected before importing torch


def use_code_path(name: str) -> bool:
    """Select the code path `name` (a key of ENVIRONMENT) for this process, over any value already in the
    environment; False when torch was imported already, so nothing could change. A process that selected another
    path before importing torch (a warm server's child, hypvl.runtime.warm) cannot run under this one: InputError."""
    if "torch" in sys.modules:
        if _chosen and _chosen[-1] != name:
            raise InputError(f"cpu_code_path {name!r}: this process loaded torch under {_chosen[-1]!r} (a warm "
                             f"server started for another config); unset {SOCKET_ENV} to run it on its own")
        return False
    os.environ.update(ENVIRONMENT[name])
    _chosen.append(name)
    return True
