"""Training losses: contrastive (CLIP, MERU, HyCoCLIP hCC) and entailment cones (MERU, HyCoCLIP hCE)."""
