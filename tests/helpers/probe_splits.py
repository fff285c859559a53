"""The pixels of a linear-probe split's images."""

import numpy as np


def pixel_bytes(image) -> bytes:
    return np.asarray(image).tobytes()
