"""Names of a captured graph's ports: Dynamo's graph inputs by where they come from (the model's
parameters and buffers, the inputs, constants, sizes and strides), the forward's results as
``out``, ``out:<i>`` or ``out:<key>``."""
from __future__ import annotations

import re

from entangle_py.frontend.capture_errors import CaptureError
from entangle_py.frontend.convert import source_name_of


def dynamo_port_names(gm, port_of_id) -> list[str]:
    """Stable port names for the inputs of Dynamo's graph, in order (AOT's PlainAOTInput idx)."""
    import torch
    from torch._dynamo.source import TensorProperty, TensorPropertySource
    names, by_source = [], {}
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in phs:
        ga = n.meta.get("grapharg")
        ex = ga.example if ga is not None else None
        if isinstance(ex, torch.Tensor):
            name = port_of_id.get(id(ex))
            if name is None:
                src = ga.source.name if ga is not None and ga.source is not None else n.name
                src = src() if callable(src) else src
                name = "const:" + _sanitize(src)
            by_source[_source_name(ga)] = name
        names.append(name if isinstance(ex, torch.Tensor) else None)
    for i, n in enumerate(phs):
        if names[i] is not None:
            continue
        ga = n.meta.get("grapharg")
        src = ga.source if ga is not None else None
        if isinstance(src, TensorPropertySource):
            base = by_source.get(source_name_of(src.base), "const:" + _sanitize(source_name_of(src.base)))
            prop = {TensorProperty.SIZE: "size", TensorProperty.STRIDE: "stride"}.get(src.prop, "storage_offset")
            names[i] = f"{prop}:{base}" + (f":{src.idx}" if src.idx is not None else "")
        else:
            names[i] = "sym:" + _sanitize(source_name_of(src) if src is not None else n.name)
    return names


def _source_name(ga) -> str:
    return source_name_of(ga.source) if ga is not None and ga.source is not None else ""


def _sanitize(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:\[\]]+", "_", s).strip("_") or "anon"


def flat_results(result) -> list:
    return [result] if not isinstance(result, (tuple, list, dict)) else \
        list(result.values() if isinstance(result, dict) else result)


def output_names(result, num_graph_outputs: int) -> list[str]:
    import torch
    if isinstance(result, torch.Tensor):
        names = ["out"]
    elif isinstance(result, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in result):
        names = [f"out:{i}" for i in range(len(result))]
    elif isinstance(result, dict) and all(isinstance(x, torch.Tensor) and isinstance(k, str) for k, x in result.items()):
        names = [f"out:{k}" for k in result]
    else:
        raise CaptureError(f"forward returned {type(result).__name__}; capture supports a tensor, "
                           f"a tuple/list of tensors, or a dict of tensors")
    if len(names) != num_graph_outputs:
        raise CaptureError(
            f"forward returns {len(names)} tensor(s) but the captured graph computes {num_graph_outputs}: "
            f"returning an input unchanged, or the same tensor twice, is not supported")
    return names
