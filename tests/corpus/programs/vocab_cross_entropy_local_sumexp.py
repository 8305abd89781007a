"""See _vocab.py."""
from _vocab import make_build

build = make_build('ce', bug='local_sumexp')
