"""Hugging Face ``run_glue_no_trainer``-style evaluation with accelerate: a regression head's
MSE loss per device, ``accelerator.gather_for_metrics(loss.repeat(per_device_eval_batch_size))``
(accelerate's gloo path: ``dist.all_gather`` into ``empty_like`` buffers, ``torch.cat``), then
``torch.mean`` of the gathered losses."""
import torch
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

EVAL_BATCH, HIDDEN = 8, 16


def _gpu_gather_one(tensor, num_processes):
    if tensor.ndim == 0:
        tensor = tensor.clone()[None]
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    # gloo does not support all_gather_into_tensor
    output_tensors = [torch.empty_like(tensor) for _ in range(num_processes)]
    torch.distributed.all_gather(output_tensors, tensor)
    return torch.cat(output_tensors, dim=0)


def gather(tensor, num_processes):
    if num_processes > 1:
        return _gpu_gather_one(tensor, num_processes)
    return tensor


class RegressionHead(nn.Module):
    """BertForSequenceClassification's head with problem_type == "regression"."""

    def __init__(self, num_processes):
        super().__init__()
        self.num_processes = num_processes
        self.dense = nn.Linear(HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, 1)

    def forward(self, pooled_output, labels):
        logits = self.classifier(torch.tanh(self.dense(pooled_output)))
        loss = F.mse_loss(logits.squeeze(), labels.squeeze())
        per_device_eval_batch_size = pooled_output.shape[0]
        losses = gather(loss.repeat(per_device_eval_batch_size), self.num_processes)
        eval_loss = torch.mean(losses)
        return eval_loss


def build(rank, world_size):
    per_device = EVAL_BATCH // world_size
    return RegressionHead(world_size), {
        "pooled_output": torch.randn(per_device, HIDDEN),
        "labels": torch.randn(per_device),
    }
