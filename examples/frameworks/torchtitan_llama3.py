"""torchtitan: a 2-layer Llama3 built like its ``debugmodel`` flavour (fused QKV, RoPE (here
without llama scaling), vocab-parallel embedding, vocabulary-sharded logits for its loss-parallel
cross-entropy), smaller, with two stand-ins for what the checker cannot read yet: causal
``ScaledDotProductAttention`` as the inner attention (torchtitan 0.3 builds its language models
with FlexAttention, a higher-order op) and the real ``CosSinRoPE`` for ``ComplexRoPE``
(``view_as_complex`` / ``view_as_real``), with torchtitan's own tensor-parallel sharding
(``set_llama3_sharding_config``, as ``Llama3Model.Config.update_from_config`` sets it, then
``model.parallelize(parallel_dims)``, as ``parallelize_llama`` calls it).  ``parallelize_llama``
then always applies FSDP2 (``fully_shard``), which capture refuses (see docs/frameworks.md): this
recipe stops before it, as a TP-only run's FSDP2 over one data-parallel rank gathers nothing.
``SEQUENCE_PARALLEL`` in a script importing this module: torchtitan's ``enable_sp``.

    entangle capture examples/frameworks/torchtitan_llama3.py -o seq.pt
    entangle capture examples/frameworks/torchtitan_llama3.py --world-size 2 -o dist.pt
    entangle check seq.pt dist.pt --spec examples/frameworks/torchtitan_llama3.toml
"""
import torch
from torchtitan.distributed import ParallelDims
from torchtitan.distributed.utils import get_spmd_context
from torchtitan.models.common import Embedding, Linear, RMSNorm, compute_ffn_hidden_dim
from torchtitan.models.common.rope import CosSinRoPE
from torchtitan.models.common.attention import ScaledDotProductAttention
from torchtitan.models.llama3 import Llama3Model, _build_llama3_layers
from torchtitan.models.llama3.sharding import set_llama3_sharding_config

DIM, HEADS, LAYERS, VOCAB = 32, 4, 2, 64
BATCH, SEQ = 2, 8


def config(enable_sp=False, plan=None):
    init = {"weight": torch.nn.init.ones_}
    cfg = Llama3Model.Config(
        dim=DIM, vocab_size=VOCAB,
        tok_embeddings=Embedding.Config(num_embeddings=VOCAB, embedding_dim=DIM, param_init=init),
        norm=RMSNorm.Config(normalized_shape=DIM, param_init=init),
        lm_head=Linear.Config(in_features=DIM, out_features=VOCAB, param_init=init),
        layers=_build_llama3_layers(
            fuse_qkv=True, n_layers=LAYERS, dim=DIM, n_heads=HEADS,
            hidden_dim=compute_ffn_hidden_dim(DIM, multiple_of=32),
            rope=CosSinRoPE.Config(dim=DIM // HEADS, max_seq_len=64, theta=500000),
            attn_backend="flex"))
    for layer in cfg.layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()
    set_llama3_sharding_config(cfg, enable_sp=enable_sp)
    if plan is not None:        # a change to the sharding entries (the bugs' scripts)
        plan(cfg)
    return cfg


def _spmd_context(dims):
    return get_spmd_context(parallel_dims=dims)


class Step(torch.nn.Module):
    """The model's forward as torchtitan's trainer runs it: inside its SPMD context (the mesh its
    layers' redistributions read, ``Trainer.train_context``)."""

    def __init__(self, model, context):
        super().__init__()
        self.model = model
        self.context = context

    def forward(self, tokens):
        with self.context():
            return self.model(tokens)


def make_build(enable_sp=False, plan=None, context=None):
    def build(rank, world_size):
        model = config(enable_sp and world_size > 1, plan).build()
        dims = None
        if world_size > 1:
            dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=world_size, pp=1, ep=1,
                                world_size=world_size)
            dims.build_mesh()
            model.parallelize(dims)
        tokens = torch.arange(BATCH * SEQ).reshape(BATCH, SEQ) % VOCAB
        return Step(model, (context or _spmd_context)(dims)), {"tokens": tokens}
    return build


build = make_build()
