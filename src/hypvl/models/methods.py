"""The methods the suite builds and the experiment overrides each honours: declarations only (no torch), so
the workflow can plan without importing the model code (`hypvl.models.build` builds them)."""

METHOD_NAMES = ("clip", "meru", "hycoclip")
# experiment overrides that change the architecture (MERU Table 3: embedding width; Table 5: a learned position
# embedding instead of the fixed sin-cos one)
ARCHITECTURE_OVERRIDES = ("embed_dim", "pos_embed")
POS_EMBEDS = ("sincos", "learned")
# experiment overrides that are model constructor arguments, per method
MODEL_OVERRIDES = {
    "clip": ("temperature",),
    "meru": ("temperature", "curv_init", "learn_curv", "entail_weight", "contrastive_similarity"),
    "hycoclip": ("temperature", "curv_init", "learn_curv", "gamma", "eta_inter", "eta_intra",
                 "hcc_terms", "hce_terms"),
}
# MERU's contrastive similarity (Table 4 row 3): negative Lorentzian distance, or the Lorentzian inner product
CONTRASTIVE_SIMILARITIES = ("neg_distance", "lorentz_inner")
