"""The generated worlds, written in the real formats: the smoke world (`smoke`: tiny synthetic data for every table)
and the pilot (`pilot`: the real formats at stand-in scale, served as a mirror). Nothing on the real path imports them
(tests/deploy/test_layers.py)."""
