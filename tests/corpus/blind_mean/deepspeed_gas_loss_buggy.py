"""DeepSpeed engine: gradient accumulation over micro-batches (``engine.backward`` scales each
micro-batch loss by ``1 / gradient_accumulation_steps`` and the engine accumulates the detached
scaled losses), then ``_aggregate_total_loss``: the accumulated loss pre-divided by the
data-parallel world size and all-reduced (SUM) over the data-parallel group."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

GLOBAL_BATCH, HIDDEN, OUT = 16, 16, 4
GRADIENT_ACCUMULATION_STEPS = 2


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, 2 * HIDDEN)
        self.fc2 = nn.Linear(2 * HIDDEN, OUT)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class DeepSpeedEngineStep(nn.Module):
    def __init__(self, dp_world_size):
        super().__init__()
        self.module = MLP()
        self.dp_world_size = dp_world_size
        self.gradient_accumulation_steps = GRADIENT_ACCUMULATION_STEPS

    def _scale_loss_by_gas(self, prescaled_loss):
        return prescaled_loss / self.gradient_accumulation_steps

    def _aggregate_total_loss(self, agg_loss):
        if self.dp_world_size > 1:
            agg_loss = agg_loss.clone()  # BUG: no pre-division: the SUM all-reduce adds the ranks' losses
            dist.all_reduce(agg_loss, group=dist.group.WORLD)
        return agg_loss

    def forward(self, inputs, labels):
        agg_train_loss = torch.zeros((), dtype=inputs.dtype)
        for micro_inputs, micro_labels in zip(inputs.chunk(self.gradient_accumulation_steps),
                                              labels.chunk(self.gradient_accumulation_steps)):
            loss = F.mse_loss(self.module(micro_inputs), micro_labels)
            loss = self._scale_loss_by_gas(loss)
            agg_train_loss = agg_train_loss + loss.detach()
        return self._aggregate_total_loss(agg_train_loss)


def build(rank, world_size):
    local_batch = GLOBAL_BATCH // world_size
    return DeepSpeedEngineStep(world_size), {
        "inputs": torch.randn(local_batch, HIDDEN),
        "labels": torch.randn(local_batch, OUT),
    }
