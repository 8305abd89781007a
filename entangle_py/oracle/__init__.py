"""Numeric evidence: the interpreter (simulated collectives), re-check and witness, OpInfo conformance, mutants."""
