"""Op semantics: the term language (constructors with a torch meaning) and the lowering of ATen ops to terms."""
