"""Sizes and the dropout rate the random-draw programs share."""
S, B, H = 8, 4, 6          # x [S, B, H]: a sequence, sharded along S under sequence parallelism
P = 0.5                    # dropout rate (half the elements: masks that differ show it)
SEED = 1000
