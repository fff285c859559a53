"""The methods the suite builds and the experiment overrides each honours: declarations only (no torch), so
the workflow can plan without importing the model code (`hypvl.models.build` builds them)."""

METHOD_NAMES = ("clip", "meru", "hycoclip", "poinclip", "syntax_meru")
# methods that train on the dependency parses of the grounded shards (whole pairs only)
PARSE_METHODS = ("syntax_meru",)
# experiment overrides that change the architecture (MERU Table 3: embedding width; Table 5: a learned position
# embedding instead of the fixed sin-cos one)
ARCHITECTURE_OVERRIDES = ("embed_dim", "pos_embed")
POS_EMBEDS = ("sincos", "learned")
# experiment overrides that are model constructor arguments, per method
MODEL_OVERRIDES = {
    "clip": ("temperature",),
    "meru": ("temperature", "curv_init", "learn_curv", "entail_weight", "contrastive_similarity"),
    "syntax_meru": ("temperature", "curv_init", "learn_curv", "entail_weight", "syntax_weight"),
    "hycoclip": ("temperature", "curv_init", "learn_curv", "gamma", "eta_inter", "eta_intra",
                 "hcc_terms", "hce_terms"),
    # PoinCLIP Tables 4-5: lambda (entail_weight), lambda_reg, the entailment order; the readings of the paper's
    # unstated entropy input and printed exp map
    "poinclip": ("temperature", "curv_init", "learn_curv", "entail_weight", "lambda_reg", "entailment_order",
                 "entropy", "exp_map"),
}
# experiment overrides the evaluation honours (`hypvl evaluate --prompts`: MERU Table 5's CLIP-prompt rows); they
# change how a model is evaluated, not the model
EVAL_OVERRIDES = ("eval_prompts",)
# MERU's contrastive similarity (Table 4 row 3): negative Lorentzian distance, or the Lorentzian inner product
CONTRASTIVE_SIMILARITIES = ("neg_distance", "lorentz_inner")
