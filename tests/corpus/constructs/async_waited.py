"""See _row_parallel.py."""
from _row_parallel import make_build

build = make_build("async_waited")
GLOO_PEER_DELAY = 1.0   # seconds: rank 0 reads before its peers join (see _row_parallel.py)
