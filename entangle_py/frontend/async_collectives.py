"""``async_op=True`` collectives (``handle = dist.all_reduce(t, async_op=True); ...; handle.wait()``,
as Megatron's backward overlaps its all-reduces and reduce-scatters with the weight gradient),
captured as the functional collective they perform.

TorchDynamo (torch 2.13) breaks the graph at ``async_op=True``.  While capture traces, Dynamo's
rewrite of an in-place ``torch.distributed`` collective into a functional one is given a second
form for ``async_op=True`` (``tracing_async_collectives``): the functional collective is issued at
the call, on the input as it is then, and its result is written into the output tensor when the
program calls ``wait()`` on the handle the call returned -- not before.  A read of the output
between the call and the wait (a race on real hardware) reads what the tensor held before, and a
handle never waited on never writes: neither is taken for the completed collective.
"""
from __future__ import annotations

import contextlib

import torch.distributed._functional_collectives as funcol


class Pending:
    """The handle of an asynchronous collective: ``wait()`` writes its result into its output."""

    def __init__(self, out, value):
        self.out = out
        self.value = value
        self.done = False

    def wait(self, timeout=None):
        if not self.done:
            self.out.copy_(self.value)
            self.done = True
        return True

    def is_completed(self):
        return self.done


def _group(group):
    import torch.distributed as dist
    return group or dist.group.WORLD


def all_reduce(tensor, op="sum", group=None):
    return Pending(tensor, funcol.all_reduce(tensor, op, _group(group)))


def all_gather_into_tensor(output_tensor, input_tensor, group=None):
    return Pending(output_tensor, funcol.all_gather_tensor(input_tensor, 0, _group(group)))


def reduce_scatter_tensor(output, input, op="sum", group=None):
    return Pending(output, funcol.reduce_scatter_tensor(input, op, 0, _group(group)))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None):
    return Pending(output, funcol.all_to_all_single(input, output_split_sizes, input_split_sizes, _group(group)))


def _forms():
    """{torch.distributed function: its asynchronous form here} (the deprecated aliases too)."""
    import torch.distributed as dist
    forms = {dist.all_reduce: all_reduce, dist.all_gather_into_tensor: all_gather_into_tensor,
             dist.reduce_scatter_tensor: reduce_scatter_tensor, dist.all_to_all_single: all_to_all_single}
    for legacy, form in (("_all_gather_base", all_gather_into_tensor), ("_reduce_scatter_base", reduce_scatter_tensor)):
        if hasattr(dist, legacy):
            forms[getattr(dist, legacy)] = form
    return forms


@contextlib.contextmanager
def tracing_async_collectives():
    """While Dynamo traces: ``async_op=True`` on the collectives of ``_forms()`` calls their form
    here (Dynamo inlines it) instead of breaking the graph."""
    import inspect
    from torch._dynamo.variables.functions import CollectiveFunctionRewriteVariable, UserFunctionVariable
    forms = _forms()
    orig = CollectiveFunctionRewriteVariable.call_function

    def call_function(self, tx, args, kwargs):
        form = forms.get(self.fn)
        if form is not None:
            bound = dict(inspect.signature(self.fn).bind(*args, **kwargs).arguments)
            flag = bound.get("async_op")
            if flag is not None and flag.is_python_constant() and flag.as_python_constant():
                del bound["async_op"]
                unknown = set(bound) - set(inspect.signature(form).parameters)
                if unknown:     # an argument the form does not take: Dynamo's own graph break
                    return orig(self, tx, args, kwargs)
                async_self = CollectiveFunctionRewriteVariable(self.fn, replacement_var=UserFunctionVariable(form),
                                                               source=self.source)
                return orig(async_self, tx, [], bound)
        return orig(self, tx, args, kwargs)

    CollectiveFunctionRewriteVariable.call_function = call_function
    try:
        yield
    finally:
        CollectiveFunctionRewriteVariable.call_function = orig
