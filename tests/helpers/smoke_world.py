"""The smoke world at its smallest setting."""

from hypvl.worlds.smoke.settings import WorldSettings


TINY = WorldSettings(seed=3, grit_samples=24, redcaps_samples=20, cc3m_samples=12, yfcc15m_samples=10, per_class=2,
                     probe_train_per_class=2, probe_val_per_class=1, retrieval_images=12, vlchecklist_per_group=3,
                     vg_attribution_per_pair=2, hierarcaps_test=5, hierarcaps_train=8, shard_size=10)
