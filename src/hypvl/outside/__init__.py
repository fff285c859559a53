"""Weights from outside: the weights manifest and where each row's weights come from (`sources`), released checkpoints
(`released`), extra models (`extras`, `extra_import`), the smoke and pilot stand-ins (`standins`, `pilot_weights`),
and `hypvl import-weights`, `import-extra`, `write-standin` (`commands`). Torch-free to import: planning reads
`sources` and `extras`."""
