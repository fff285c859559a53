"""Acquisition: the manifest of paper-scale sources, verified downloads, the local mirror, unpacking, and the records a
fetch leaves (checksums, Hub commits) that fingerprint a data folder."""
