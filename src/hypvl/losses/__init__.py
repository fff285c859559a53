"""Training losses: contrastive (CLIP, MERU, HyCoCLIP hCC) and entailment cones (MERU, HyCoCLIP hCE);
PoinCLIP's contrastive and entropy-ordered cone losses in the Poincaré ball; HierarCaps' radial alignment losses."""
