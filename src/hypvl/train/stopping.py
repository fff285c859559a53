"""A training run asked to stop by a signal ends the step in flight, writes its resume checkpoint and exits.

SIGTERM is what a cluster sends at a job's time limit, on preemption and on `scancel` (SLURM waits KillWait, 30 s
by default, before SIGKILL), and what torchrun and Snakemake pass on when they are stopped; SIGINT is Ctrl-C, which
a terminal sends to its whole foreground group (Snakemake and its jobs included). Inside `StopSignals` the first of
either is noted (`requested`); the trainer, once its step ends, writes resume.pt and raises `hypvl.errors.Stopped`
(exit status 128 + the signal, as a shell reports a process the signal killed), and the same command continues the
run from there. Under data parallelism the ranks agree on the step through the all-reduce every step already makes
(`hypvl.train.trainer`). A second Ctrl-C stops at once (KeyboardInterrupt, resume.pt as last written); a repeated
SIGTERM is ignored, since torchrun and the cluster may each send one. Loader processes outlive both
(`ignore_in_loader`): the main process ends them when it exits.
"""

import logging
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

log = logging.getLogger(__name__)


def ignore_in_loader(_worker_id: int) -> None:
    """DataLoader's `worker_init_fn`: a loader process outlives Ctrl-C and a first SIGTERM (sent to the whole process
    group, its death would end the main process's step before it could save); a second SIGTERM ends it, as PyTorch's
    and multiprocessing's shutdowns send one to a loader process that did not stop when asked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _next_sigterm_ends)


def _next_sigterm_ends(number: int, _frame) -> None:
    signal.signal(number, signal.SIG_DFL)


class StopSignals:
    """Notes the first stop signal while open (`requested`: its number, else None); the previous handlers come back
    on exit. Outside the main thread, where Python cannot take signals, it notes nothing."""

    def __init__(self):
        self.requested: int | None = None
        self.previous: dict = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            self.previous = {number: signal.signal(number, self._noted) for number in STOP_SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)

    def _noted(self, number: int, _frame) -> None:
        if self.requested is None:
            self.requested = number
            log.warning("%s received: stopping once this step ends, after writing the resume checkpoint (Ctrl-C "
                        "again stops at once)", signal.Signals(number).name)
        elif number == signal.SIGINT:
            raise KeyboardInterrupt
