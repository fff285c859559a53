"""Geometry: the Lorentz model (MERU/HyCoCLIP), the Poincaré ball (PoinCLIP) and Euclidean radial embeddings
(HierarCaps)."""
