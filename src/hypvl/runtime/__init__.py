"""Running on the machine: devices, CPU code paths, loader processes, GPU claims, the warm start."""
