"""The refinement check: spec (input relation, expectations), the exploration window, the operator loop."""
