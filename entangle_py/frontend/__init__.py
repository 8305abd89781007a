"""Frontends: capture a PyTorch program, import FX text dumps, show a bundle."""
