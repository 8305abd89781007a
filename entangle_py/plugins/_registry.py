"""What a plugin declares about one custom op (see plugins/__init__.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PluginOp:
    target: str                 # 'ns.op.overload'
    schema: str                 # the op's schema, as torch.library would define it
    reference: Callable         # the op in plain torch: arguments by schema name -> value(s)
    pure: bool = False          # data-dependent control flow: not decomposed, related by congruence

    def arguments(self):
        """[(name, default, is_tensor, is_written)] in schema order."""
        import torch
        out = []
        for a in torch._C.parse_schema(self.schema).arguments:
            is_tensor = str(a.type).startswith(("Tensor", "Optional[Tensor]"))
            written = a.alias_info is not None and a.alias_info.is_write
            out.append((a.name, a.default_value if a.has_default_value() else _REQUIRED, is_tensor, written))
        return out

    def written(self) -> list[str]:
        """Arguments the op writes (out-style): the reference returns their new values, in order."""
        return [name for name, _, _, w in self.arguments() if w]


_REQUIRED = object()
REGISTRY: dict[str, PluginOp] = {}


def custom_op(target: str, schema: str, pure: bool = False):
    """Register the decorated function as the reference implementation of ``target``."""
    def register(fn):
        if target in REGISTRY:
            raise ValueError(f"{target} has two plugins")
        REGISTRY[target] = PluginOp(target, schema, fn, pure)
        return fn
    return register
