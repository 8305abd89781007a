"""See _adv_vllm.py."""
from _adv_vllm import make_build

build = make_build('norm', bug='residual')
