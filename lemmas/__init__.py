"""The lemma library, grouped by operator family (one module per family)."""
