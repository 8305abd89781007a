"""In-place writes in a captured program (issue 23 item 4, the capture frontend).

AOTAutograd functionalizes what capture records: an input, buffer or parameter the program writes
(directly, through a view, under ``no_grad``) is an output ``mutated:<port>`` holding its value at
the end, and a read after a write -- of the tensor or of a view of it -- reads the write.  Each
program below is captured, its graph run by the interpreter, and compared with the program run
eagerly on the same values: every output, every ``mutated:`` output, and no write the graph does
not return (a tensor the eager run changed must have its ``mutated:`` output).
"""
from __future__ import annotations

import textwrap

import pytest
import torch

from entangle_py.frontend.capture import capture, load_script
from entangle_py.frontend.functionalize import writes
from entangle_py.oracle import interp

HEAD = """
import torch, torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4, bias=False)
        self.register_buffer("count", torch.zeros(4))
        self.register_buffer("buf", torch.zeros(5, 4))
    def forward(self, x):
"""
TAIL = """
def build(rank, world_size):
    return M(), {"x": torch.randn(3, 4)}
"""

PROGRAMS = {
    "buffer_counter": """
        self.count.add_(1)
        y = self.fc(x) + self.count
        self.count.mul_(2)
        return y + self.count
""",
    "input_through_a_view": """
        x[0].mul_(2)
        x[:, 1:3].add_(1)
        return self.fc(x)
""",
    "parameter_scaled_under_no_grad": """
        y = self.fc(x)
        with torch.no_grad():
            self.fc.weight.mul_(0.5)
        return y
""",
    "intermediate_view_read_after_write": """
        h = self.fc(x)
        v = h[:, :2]
        h.relu_()
        return v.sum(-1)
""",
    "copy_into_a_buffer_slice": """
        self.buf[1:4].copy_(x)
        self.buf.t()[0].zero_()
        return self.buf * 1
""",
}


def _value(shape):
    return torch.randn(tuple(shape), dtype=torch.float64)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_captured_writes_are_the_programs(tmp_path, name):
    script = tmp_path / f"{name}.py"
    script.write_text(HEAD + textwrap.indent(textwrap.dedent(PROGRAMS[name]), " " * 8) + TAIL)
    g = capture(script, 1).rank(0)
    assert not any(writes(n) for n in g.nodes)

    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        model, inputs = load_script(script).build(0, 1)
    finally:
        torch.set_default_dtype(old)
    values = {}
    with torch.no_grad():
        for kind, named in (("param", model.named_parameters()), ("buffer", model.named_buffers())):
            for fqn, t in named:
                t.copy_(_value(t.shape))
                values[f"{kind}:{fqn}"] = t.detach().clone()
    args = {k: _value(v.shape) for k, v in inputs.items()}
    values.update({f"input:{k}": v.clone() for k, v in args.items()})
    with torch.no_grad():
        out = model(**args)
    after = {f"param:{n}": p for n, p in model.named_parameters()}
    after.update({f"buffer:{n}": b for n, b in model.named_buffers()})
    after.update({f"input:{k}": v for k, v in args.items()})

    b = capture(script, 1)
    envs = interp.run_bundle(b, [{p.name: values[p.name] for p in g.inputs}], float_dtype=torch.float64)
    got = interp.output_values(b, envs)[0]
    assert torch.allclose(got["out"], out)
    changed = {port for port, t in after.items() if not torch.equal(t, values[port])}
    assert {f"mutated:{p}" for p in changed} == {k for k in got if k.startswith("mutated:")}
    assert bool(changed) == (name != "intermediate_view_read_after_write")
    for port in changed:
        assert torch.allclose(got[f"mutated:{port}"], after[port]), port
