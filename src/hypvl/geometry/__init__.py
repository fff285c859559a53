"""Hyperbolic geometry: the Lorentz model (MERU/HyCoCLIP) and the Poincaré ball (PoinCLIP)."""
