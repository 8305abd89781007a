"""entangle-py: prove that a distributed PyTorch program refines its sequential specification."""

__version__ = "0.1.0"
