"""See _adv_pp.py (the spec adv_pp_wrong_rank.toml names the wrong rank for fc2)."""
from _adv_pp import make_build

build = make_build("wrong_rank")
