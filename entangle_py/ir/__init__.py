"""Graph IR: the closed node/graph model, the bundle file format, symbolic sizes."""
