"""What a bundle's meta records beside its graphs: keys capture writes (custom op schemas, capture
notes, DTensor placements, parallel styles, random streams) and their readers, which keep only
well-formed entries because a graph file is untrusted."""
from __future__ import annotations

import json
from dataclasses import dataclass

from entangle_py.ir.graph import GraphFormatError

# Bundle meta key: {custom op target: its schema as the capturing process defined it} (JSON),
# so that a plugin is never applied to a same-named op of another signature.
CUSTOM_OP_SCHEMAS = "custom_op_schemas"
# Bundle meta key: [{"ranks", "text", "file", "line", "code"}] (JSON), what capture modelled that the
# user should know about, where the program set it up (e.g. a DDP reducer that stalls).
CAPTURE_NOTES = "capture_notes"
# Bundle meta key: {port: relation text} for the inputs a DTensor program holds as DTensors, read
# from their placements (``Shard(d)`` -> ``shard(d)``, ``Replicate()`` -> ``replicate``,
# ``Partial()`` -> ``partial``).  ``entangle check`` takes an input's relation from here when the
# spec does not give one, and prints it for review like a relation inferred from shapes.  A
# placement the spec language cannot say (an N-D or partial mesh, a strided shard, Partial(avg))
# is recorded as ``unmapped: <why>``: the spec must then give that input's relation.
DTENSOR_PLACEMENTS = "dtensor_placements"
# Bundle meta key: where the DTensor plan's parallel styles were made and applied (JSON, by capture)
PARALLEL_STYLES = "parallel_styles"


def capture_notes(bundle) -> list[dict]:
    """The bundle's capture notes, keeping only well-formed entries (a graph file is untrusted)."""
    try:
        found = json.loads(bundle.meta.get(CAPTURE_NOTES) or "[]")
    except ValueError:
        return []
    out = []
    for n in found if isinstance(found, list) else []:
        if (isinstance(n, dict) and isinstance(n.get("text"), str) and isinstance(n.get("file"), (str, type(None)))
                and isinstance(n.get("line"), (int, type(None))) and isinstance(n.get("code"), (str, type(None)))
                and isinstance(n.get("ranks"), list) and all(isinstance(r, int) for r in n["ranks"])):
            out.append({k: n.get(k) for k in ("ranks", "text", "file", "line", "code")})
    return out


# Bundle meta key: where each rank's random draws come from (JSON, written by frontend/rng.py):
# {"<rank>": {"seeded": bool, "seed": int (when seeded), "state": digest of the default generator's
# state when the forward starts, "build": [[op, shape, dtype, params], ...], "forward": [shape, ...]
# or null}} -- ``seeded`` false when the program never seeds the generator (its seed is then the
# process's own); ``build`` the draws build() made on meta tensors (parameter init), which a real
# run makes before the forward; ``forward`` the shapes of the draws the forward makes run eagerly.
RNG_STREAMS = "rng_streams"


@dataclass(frozen=True)
class RngStream:
    """One rank's default generator as its forward starts (``rng_streams``)."""
    seeded: bool
    seed: int | None
    state: str
    build: tuple        # ((op, shape, dtype, params), ...) in the order build() drew them
    forward: tuple | None = None    # shapes of the forward's draws run eagerly; None: not known


def rng_streams(bundle) -> dict | None:
    """{rank: RngStream} of a bundle that records them for every rank, None for one that records
    none (an imported graph, an older capture); GraphFormatError when the record is malformed (a
    graph file is untrusted, and evidence is never half-read)."""
    text = bundle.meta.get(RNG_STREAMS)
    if text is None:
        return None
    def bad(why):
        return GraphFormatError(f"bundle meta {RNG_STREAMS!r}: {why}")
    try:
        found = json.loads(text)
    except ValueError:
        raise bad("not JSON") from None
    if not isinstance(found, dict) or set(found) != {str(r) for r in range(len(bundle.ranks))}:
        raise bad(f"expected one entry per rank 0..{len(bundle.ranks) - 1}")
    out = {}
    for r in range(len(bundle.ranks)):
        e = found[str(r)]
        if not (isinstance(e, dict) and set(e) <= {"seeded", "seed", "state", "build", "forward"}
                and isinstance(e.get("seeded"), bool) and isinstance(e.get("state"), str)
                and isinstance(e.get("build"), list)):
            raise bad(f"rank {r}: expected {{seeded, seed, state, build, forward}}")
        seed = e.get("seed")
        if e["seeded"] != (isinstance(seed, int) and not isinstance(seed, bool)):
            raise bad(f"rank {r}: a seed is given exactly when seeded")
        build = []
        for d in e["build"]:
            if not (isinstance(d, list) and len(d) == 4 and isinstance(d[0], str) and isinstance(d[1], list)
                    and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in d[1])
                    and isinstance(d[2], str) and isinstance(d[3], str)):
                raise bad(f"rank {r}: a build draw is [op, shape, dtype, params]")
            build.append((d[0], tuple(d[1]), d[2], d[3]))
        forward = e.get("forward")
        if forward is not None and not (isinstance(forward, list) and all(
                isinstance(sh, list) and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in sh)
                for sh in forward)):
            raise bad(f"rank {r}: forward is a list of shapes or null")
        out[r] = RngStream(e["seeded"], seed if e["seeded"] else None, e["state"], tuple(build),
                           None if forward is None else tuple(tuple(sh) for sh in forward))
    return out
