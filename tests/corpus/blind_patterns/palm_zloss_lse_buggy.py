"""PaLM's z-loss (1e-4 * log(Z)^2) next to the LM loss, with the output layer split over the
vocabulary: each rank's logsumexp over its slice, all-gathered ([tp, tokens]) and combined
with a logsumexp over the ranks; z-loss is the mean of its square."""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.nn as nn

VOCAB, HIDDEN, TOKENS = 8, 4, 5
Z_LOSS_WEIGHT = 1e-4


class ZLoss(nn.Module):
    def __init__(self, rank, world_size):
        super().__init__()
        self.world_size = world_size
        self.lm_head = nn.Linear(HIDDEN, VOCAB // world_size, bias=False)

    def forward(self, hidden_states):
        logits = self.lm_head(hidden_states)                 # [t, v/tp]
        log_z = torch.logsumexp(logits, dim=-1)              # [t]
        if self.world_size > 1:
            gathered = funcol.all_gather_tensor(log_z.unsqueeze(0), 0, dist.group.WORLD)  # [tp, t]
            log_z = torch.logsumexp(gathered, dim=-1)  # BUG: reduced over the tokens instead of the ranks
        return Z_LOSS_WEIGHT * log_z.pow(2).mean()


def build(rank, world_size):
    return ZLoss(rank, world_size), {"hidden_states": torch.randn(TOKENS, HIDDEN)}
