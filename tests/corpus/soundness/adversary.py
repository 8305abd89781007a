"""The adversary on the checker's own spec features, assumptions and flags (issue 23 item 7).

Each attempt: a small distributed program (``adversary/<script>.py``, ``build(rank, world_size)``),
the spec it is checked under, what it tries, its label -- what the program IS, confirmed on real
gloo ranks by ``run_gloo_adv.py`` (``gloo="plain"``) or ``run_gloo_random.py`` (``"random"``:
programs that draw random numbers, equal in distribution) -- and the exits ``entangle check`` may
give: a wrong program exit 1 (or 2 where refusing is an acceptable answer), a correct one exit 0.

``kind``: "verdict" (the test asserts the exit), or "trusted": the program is wrong and refines
under a fact the *user* wrote that is false (a [cut] relation, a [constants] value, a --lemmas
file) -- the user's responsibility, so the right answer is exit 0 *with that fact printed beside
the verdict* (the test asserts both).  ``fx``: the graphs are checked as FX text dumps (import-fx
of ``GraphModule.print_readable()``), not captured.  ``docs/adversary.md`` is the table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIR = HERE / "adversary"


@dataclass(frozen=True)
class Attempt:
    name: str             # unique; also the id of its gloo label
    feature: str          # the spec feature, assumption or flag attacked
    tries: str            # what the attempt tries, one line
    script: str           # adversary/<script>.py (or a path relative to tests/corpus/soundness)
    spec: str             # adversary/<spec>.toml: the spec checked
    truth: str = ""       # adversary/<truth>.toml: the relation the gloo label uses (default: spec)
    world_size: int = 2
    capture: tuple = ()   # extra `entangle capture` flags (--dynamic)
    check: tuple = ()     # extra `entangle check` flags
    exits: tuple = ()     # acceptable exits (default: wrong -> (1,), correct -> (0,))
    gloo: str = "plain"   # "plain" | "random"
    kind: str = "verdict"  # "verdict" | "trusted" (see the module docstring)
    fx: bool = False      # checked as FX text dumps
    discloses: str = ""   # kind "trusted": what the report must print with the verdict
    found: str = ""       # what the attempt found (a hole, a false alarm, ...); "" = nothing
    mode: str = field(default="forward")

    @property
    def label(self) -> str:
        return "wrong" if "_wrong" in self.name else "correct"

    @property
    def script_path(self) -> str:
        return str((DIR / f"{self.script}.py").resolve())

    @property
    def spec_path(self) -> str:
        return str(DIR / f"{self.spec}.toml")

    @property
    def truth_path(self) -> str:
        return str(DIR / f"{self.truth or self.spec}.toml")

    @property
    def expected_exits(self) -> tuple:
        return self.exits or ((1,) if self.label == "wrong" else (0,))

    def for_gloo(self):
        """The view the gloo harnesses read: script, spec (the truth), label, id."""
        return _GlooView(self.name, self.script_path, self.truth_path, self.label, self.world_size, self.mode)


@dataclass(frozen=True)
class _GlooView:
    name: str
    script: str
    spec: str
    label: str
    world_size: int
    mode: str

    @property
    def truth(self) -> str:
        return self.spec

    @property
    def id(self) -> str:
        return self.name


def _a(name, feature, tries, spec, script=None, **kw):
    return Attempt(name=name, feature=feature, tries=tries, script=script or name, spec=spec, **kw)


HOLE = "HOLE"
FALSE_ALARM = "false alarm"

ATTEMPTS = [
    # --- random draws: coupling from capture's evidence of each rank's stream -------------------
    _a("rng_seed_high_bits_wrong", "random draws", "ranks seed SEED + rank * 2**32: different seeds, one mt19937 stream (CPU keeps a seed's low 32 bits): SP dropout with one mask on every shard",
       "rng_sp", gloo="random", found=HOLE + ": coupled as independent streams (seeds 1000, 4294968296), refines"),
    _a("rng_seed_low_bits_correct", "random draws", "twin: seeds SEED + rank + rank * 2**32 (the low bits differ)", "rng_sp", gloo="random"),
    _a("rng_same_rng_evidence_wrong", "same_rng", "one seed on every SP rank, spec writes same_rng: the evidence (identical streams) must decide", "rng_sp_same_rng", gloo="random"),
    _a("rng_same_rng_cli_wrong", "--assume same_rng", "the same program with --assume same_rng on the command line", "rng_sp",
       script="rng_same_rng_evidence_wrong", check=("--assume", "same_rng"), gloo="random"),
    _a("rng_build_draw_rank1_wrong", "random draws", "TP dropout replicas, one seed, but rank 1 draws a real CPU tensor in build: its stream is ahead", "rng_tp", gloo="random"),
    _a("rng_build_param_rank1_wrong", "random draws", "TP dropout replicas, one seed, rank 1 alone initialises an extra parameter in build (meta in capture)", "rng_tp", gloo="random"),
    _a("rng_build_param_all_correct", "random draws", "twin: every rank initialises it: replicas stay in step", "rng_tp", gloo="random"),
    _a("rng_set_state_same_wrong", "random draws", "ranks seed SEED + rank, then set_rng_state of one saved state: the same SP mask everywhere", "rng_sp", gloo="random"),
    # --- [cut] and given tensors ---------------------------------------------------------------
    _a("cut_false_relation_wrong", "[cut]", "row-parallel without its all-reduce; [cut] mm = replicate (false): refines only on the false fact",
       "cut_false_relation_wrong", kind="trusted", discloses="given (spec, not checked",
       found="wrong refines on a false [cut] relation (by design: printed as given, not checked)"),
    _a("cut_bias_before_reduce_wrong", "[cut]", "a true cut (mm = partial), bias added on every rank before the all-reduce after it", "cut_partial"),
    _a("cut_bias_after_reduce_correct", "[cut]", "twin: bias added once after the all-reduce", "cut_partial"),
    _a("cut_returned_partial_wrong", "[cut]", "the cut tensor itself returned un-reduced, expected replicated", "cut_returned_partial"),
    # --- [outputs] check -----------------------------------------------------------------------
    _a("inner_only_check_wrong", "[outputs] check", "check = [\"relu\"] (an inner tensor only) on a program whose returned output is wrong",
       "inner_only_check", kind="trusted", discloses="not checked: 1 output (out)",
       found="the list selects what is checked: the returned output is left out, and the verdict says so (decided: "
             "an inner entry adds its check to the outputs the list names; a list naming no output checks none)"),
    _a("empty_check_wrong", "[outputs] check", "check = [] on the same wrong program", "empty_check", script="inner_only_check_wrong",
       exits=(2,), found=HOLE + " (fixed): \"refines: 0 operators related\"; now exit 2, nothing to check"),
    _a("inner_check_same_name_wrong", "[outputs] check", "check out + inner relu, the ranks' relu a relu of partial sums (same name, other value)", "inner_check_same_name"),
    # --- state: every write accounted for ------------------------------------------------------
    _a("st_view_write_wrong", "state", "in-place write through a view: row 0 of every rank's shard scaled, the sequential row 0 only", "st_colpar"),
    _a("st_view_write_correct", "state", "twin: rank 0 (which holds row 0) alone scales it", "st_colpar",
       found=FALSE_ALARM + ": no lemma for select_scatter into a concat"),
    _a("st_bn_local_stats_wrong", "state", "DP running mean updated from each rank's own rows (SyncBN's bug)", "st_bn"),
    _a("st_bn_synced_stats_correct", "state", "twin: batch mean all-reduced before the update", "st_bn"),
    _a("st_input_write_wrong", "state", "ranks scale the caller's replicated input in place, the sequential program does not", "st_colpar"),
    _a("st_rank0_only_wrong", "state", "replicated counter buffer incremented by rank 0 only", "st_steps",
       found="exit 2 before eb1b766 (rank 1 'has no tensor named mutated:buffer:steps'); fixed in this branch"),
    _a("st_all_ranks_correct", "state", "twin: every rank increments it", "st_steps"),
    _a("st_rank0_only_expect_r0_wrong", "state / [expect]", "the same, [expect] \"mutated:buffer:steps\" = \"r0.mutated:buffer:steps\" (one replica)",
       "st_steps_expect_r0", script="st_rank0_only_wrong", truth="st_steps",
       found=HOLE + ": an [expect] on a state replaces its obligation (every replica): refines"),
    _a("st_attr_overwrite_wrong", "state", "plain tensor attribute (not a buffer) overwritten in place; rank 1 writes another row", "st_attr",
       found=HOLE + ": the attribute's port (const:L[_self_].cache) has no input relation, so its state has no obligation: r0's certificate suffices, refines"),
    _a("st_attr_overwrite_correct", "state", "twin: every rank writes the sequential row", "st_attr"),
    _a("st_plain_attr_wrong", "state", "plain tensor attribute accumulated (read, then written) by the ranks only", "st_colpar"),
    _a("st_buffer_rebind_wrong", "state", "buffer rebound (self.calls = self.calls + x[0], not in place) by the ranks only", "st_calls",
       exits=(1, 2), found="refused at capture (exit 2), with a misleading message ('returning an input unchanged...')"),
    # --- explicit relation terms ---------------------------------------------------------------
    _a("term_conv1d_layout_correct", "explicit terms", "weight = concat(transpose(r0.w, dims=[-1,-2]), transpose(r1.w, dim0=1, dim1=0), dim=-2): Conv1D layout, square shards", "term_conv1d"),
    _a("term_conv1d_layout_wrong", "explicit terms", "the same relation, ranks read their square shard as [out, in]", "term_conv1d"),
    _a("term_padded_rows_correct", "explicit terms / slice", "rows [0, -1) and [0, 2) of padded [3, K] shards (negative end, negative dim)", "term_padded_rows"),
    _a("term_padded_rows_wrong", "explicit terms / slice", "the ranks read w[1:]: the padding row the relation leaves free", "term_padded_rows"),
    _a("term_flat_halves_correct", "explicit terms / reshape", "x = reshape(concat(r0.x, r1.x), [4, -1]): flat row blocks viewed back", "term_flat_halves"),
    _a("term_flat_halves_wrong", "explicit terms / reshape", "the ranks view a flat row block as a column block", "term_flat_halves"),
    _a("term_neg_input_correct", "explicit terms / neg", "x = neg(r0.x); the ranks compute -2 * x", "term_neg_input",
       found=FALSE_ALARM + ": no lemma relating mul by -2 of a negation"),
    _a("term_neg_input_wrong", "explicit terms / neg", "the ranks compute 2 * their (negated) x", "term_neg_input"),
    _a("term_one_rank_twice_wrong", "explicit terms", "x = concat(r0.x, r0.x): rank 1's x is free, rank 1 computes from it", "term_one_rank_twice"),
    _a("term_one_rank_twice_correct", "explicit terms", "twin: rank 0's block broadcast", "term_one_rank_twice"),
    _a("term_expect_swapped_wrong", "explicit terms / [expect]", "[expect] out = concat(r1.out, r0.out, dim=-2) on rows in rank order", "term_expect_swapped"),
    _a("term_max_sum_wrong", "partial(max)", "x = partial(max); row maxima all-reduced with sum", "term_max"),
    _a("term_max_max_correct", "partial(max)", "twin: all-reduced with max", "term_max"),
    _a("term_max_neg_wrong", "explicit terms / max", "x = max(r0.x, r1.x); each rank scales by -1.5, then max over ranks", "term_max_explicit"),
    # --- N-D mesh placements (4 ranks) ---------------------------------------------------------
    _a("mesh_names_swapped_wrong", "[mesh]", "mesh [tp, dp] (tp the slower dim); the program reduces over {0,1},{2,3}", "mesh_names_swapped", world_size=4),
    _a("mesh_names_swapped_correct", "[mesh]", "twin: reduces over the spec's tp groups {0,2},{1,3}", "mesh_names_swapped", world_size=4),
    _a("mesh_nested_shard_correct", "[mesh]", "shard(0)@tp, shard(0)@dp on one dim: rank r holds chunk r; all-gather in rank order", "mesh_nested_shard", world_size=4),
    _a("mesh_nested_shard_wrong", "[mesh]", "the chunks reordered as if tp were the outer split", "mesh_nested_shard", world_size=4),
    _a("mesh_partial_dp_wrong", "[mesh] / partial@dp", "x partial over dp, replicated over tp; all-reduce over tp", "mesh_partial_dp", world_size=4),
    _a("mesh_partial_dp_correct", "[mesh] / partial@dp", "twin: all-reduce over dp", "mesh_partial_dp", world_size=4),
    # --- pipeline: rank-qualified names --------------------------------------------------------
    _a("pp_own_copy_wrong", "rank-qualified names", "param = r1.param (last stage); rank 0 computes from its own stale copy of that name", "pp_own_copy"),
    _a("pp_own_copy_correct", "rank-qualified names", "twin: rank 0 receives rank 1's weight by broadcast", "pp_own_copy"),
    _a("pp_own_input_wrong", "rank-qualified names", "x = r0.x; rank 1 computes the last stage from its own x", "pp_own_input"),
    _a("pp_own_input_correct", "rank-qualified names", "twin: rank 1 computes from the broadcast activation", "pp_own_input"),
    # --- DTensor placements recorded by capture ------------------------------------------------
    _a("dt_partial_local_wrong", "DTensor placements", "a Partial() DTensor weight used through to_local() (a share as the whole)", "dt_placements", truth="dt_partial_truth"),
    _a("dt_partial_full_correct", "DTensor placements", "twin: full_tensor() before use", "dt_placements", truth="dt_partial_truth"),
    _a("dt_shard1_as_rows_wrong", "DTensor placements", "a Shard(1) weight's square local read as rows of W^T", "dt_placements", truth="dt_shard1_truth"),
    _a("dt_shard1_rowpar_correct", "DTensor placements", "twin: used row-parallel, partial products all-reduced", "dt_placements", truth="dt_shard1_truth"),
    # --- inferred relations, dynamic shapes ----------------------------------------------------
    _a("inf_local_mean_wrong", "inferred relations", "x missing from the spec ([8, K] vs [4, K]: shard(0)); each rank returns its own rows' mean",
       "inf_expect_replicate", truth="inf_shard0_truth"),
    _a("inf_local_mean_dynamic_wrong", "inferred relations / --dynamic", "the same under --dynamic: [x_size0, K] in every graph, symbols of different graphs",
       "inf_expect_replicate", script="inf_local_mean_wrong", truth="inf_shard0_truth", capture=("--dynamic",), exits=(1, 2),
       found=HOLE + ": inferred 'replicate' from textually equal symbolic shapes (sizes.py: equal names in two graphs mean nothing), refines"),
    _a("dyn_fixed_rows_wrong", "--dynamic", "each rank takes rows [4r, 4r+4) of a replicated x: right only at the captured size", "dyn_replicate",
       capture=("--dynamic",), exits=(1, 2), found="refused (exit 2): no semantics for the symbolic slice"),
    _a("dyn_stage_size_wrong", "--dynamic / rank-qualified names", "x = r0.x; rank 1 broadcasts into a buffer of its OWN x's size (an unrelated symbol)",
       "dyn_stage_size", capture=("--dynamic",), exits=(1, 2),
       found="fixed (refused, exit 2: [expect]'s r1.out has rank 1's own size symbol); was " + HOLE + ": sizes.py unifies rank 1's x size with the sequential one through a relation naming only rank 0, refines"),
    _a("dyn_symint_div_correct", "--dynamic", "a mean written x.sum(0) / x.shape[0] (a SymInt divisor) on a replicated x", "dyn_replicate",
       capture=("--dynamic",), exits=(0, 2), found="crash: KeyError traceback, exit 1 (a SymInt input of an op is not bound)"),
    # --- [constants], import-fx ----------------------------------------------------------------
    _a("fx_const_undeclared_wrong", "[constants] / import-fx", "the ranks' constant 3s, the sequential 2s; FX text carries no values; undeclared", "fx_const_undeclared",
       script="fx_const_value_wrong", fx=True),
    _a("fx_const_undeclared_correct", "[constants] / import-fx", "twin: both 2s, undeclared (free: never assumed equal)", "fx_const_undeclared",
       script="fx_const_value_correct", fx=True, exits=(0, 1),
       found=FALSE_ALARM + " by design (documented): an undeclared constant is free, so exit 1 is allowed"),
    _a("fx_const_declared_wrong", "[constants] / import-fx", "the wrong program with [constants] const:_tensor_constant0 = 2.0 (the sequential value; applies to every graph)",
       "fx_const_declared", script="fx_const_value_wrong", fx=True, kind="trusted", discloses="const:_tensor_constant0",
       found=HOLE + " (report): refines resting on the declared value, which the report does not print"),
    # --- --lemmas, limits, flags ---------------------------------------------------------------
    _a("lemma_wrong_numeric_wrong", "--lemmas", "a wrong user lemma (x * c = x) proves a scaled output; numeric re-check on",
       "lemma_scaled", script="../c1_scaled_allreduce_wrong", check=("--lemmas", "@wrong_lemma.py"), exits=(4,)),
    _a("lemma_wrong_no_numeric_wrong", "--lemmas / --no-numeric", "the same with --no-numeric", "lemma_scaled", script="../c1_scaled_allreduce_wrong",
       check=("--lemmas", "@wrong_lemma.py", "--no-numeric"), kind="trusted", discloses="wrong_lemma.py",
       found=HOLE + " (report): refines; neither text nor JSON says the proof rests on a user lemma file"),
    _a("limit_iterations_wrong", "--max-iterations", "--max-iterations 1 on a wrong program", "term_conv1d", script="term_conv1d_layout_wrong",
       check=("--max-iterations", "1"), exits=(1, 3)),
    _a("limit_enodes_wrong", "--max-enodes", "--max-enodes 50 on a wrong program (4 ranks)", "mesh_partial_dp", script="mesh_partial_dp_wrong",
       world_size=4, check=("--max-enodes", "50"), exits=(1, 3)),
    _a("limit_seconds_wrong", "--max-seconds", "--max-seconds 0.001 on a wrong program", "pc_partial_in", script="pc_partial_as_replicate_wrong",
       check=("--max-seconds", "0.001"), exits=(1, 3)),
    _a("limit_iterations_correct", "--max-iterations", "--max-iterations 1 on a correct program: refines or unknown, nothing else", "term_conv1d",
       script="term_conv1d_layout_correct", check=("--max-iterations", "1"), exits=(0, 3)),
    _a("limit_iterations0_correct", "--max-iterations", "--max-iterations 0 on a correct program: unknown (exit 3), never fails", "term_conv1d",
       script="term_conv1d_layout_correct", check=("--max-iterations", "0"), exits=(0, 3)),
    _a("flags_no_numeric_budget_wrong", "--no-numeric / --recheck-budget", "--no-numeric --recheck-budget 0 on a wrong program", "cut_partial",
       script="cut_bias_before_reduce_wrong", check=("--no-numeric", "--recheck-budget", "0")),
    # --- assumptions ---------------------------------------------------------------------------
    _a("vi_unmasked_wrong", "valid_indices", "vocab-parallel embedding without the mask, under valid_indices (the ranks' own lookups go out of range)", "vi_valid"),
    _a("vi_masked_correct", "valid_indices", "twin: masked lookup, under valid_indices", "vi_valid"),
    _a("vi_masked_no_assumption_correct", "valid_indices / not written", "the masked lookup without the assumption: no assumption is on unless written",
       "vi_plain", script="vi_masked_correct", exits=(1,), found="fails as it must: the assumption is off unless written (its label: correct for ids in range)"),
    # --- placements: partial vs replicate ------------------------------------------------------
    _a("pc_partial_as_replicate_wrong", "partial vs replicate", "x = partial; tanh of each rank's share", "pc_partial_in"),
    _a("pc_partial_reduced_correct", "partial vs replicate", "twin: shares all-reduced first", "pc_partial_in"),
    _a("pc_replicas_as_partial_wrong", "partial vs replicate", "replicas returned, [expect] out = partial (their sum is W times it)", "pc_expect_partial"),
    _a("pc_shares_correct", "partial vs replicate", "twin: rank 0 returns it, the others zeros", "pc_expect_partial",
       found=FALSE_ALARM + ": no lemma for a sum over ranks with x * 0.0 shares"),
    # --- the mean over ranks (rmean): division by the world size -------------------------------
    _a("mo_uneven_mean_of_means_wrong", "mean over ranks / uneven shards", "rows 4 and 2: each rank's mean, all-reduced, / world size (mean of means)", "mo_uneven"),
    _a("mo_uneven_global_count_correct", "mean over ranks / uneven shards", "twin: the row sums all-reduced, / the global row count", "mo_uneven"),
    _a("mo_uneven_prediv_correct", "mean over ranks / uneven shards", "each rank's row sum / the global row count, then all-reduced", "mo_uneven"),
    _a("mo_uneven_local_count_wrong", "mean over ranks / uneven shards", "each rank's row sum / (its row count * world size), then all-reduced", "mo_uneven"),
    _a("mo_mean_of_means_correct", "mean over ranks", "even shards: each rank's mean, all-reduced, / world size", "mo_dp"),
    _a("mo_mean_of_means3_correct", "mean over ranks", "the same on 3 ranks (/ 3)", "mo_dp", script="mo_mean_of_means_correct", world_size=3),
    _a("mo_mean_of_means4_correct", "mean over ranks", "the same on 4 ranks (/ 4)", "mo_dp", script="mo_mean_of_means_correct", world_size=4),
    _a("mo_mean_of_means8_correct", "mean over ranks", "the same on 8 ranks (/ 8)", "mo_dp", script="mo_mean_of_means_correct", world_size=8),
    _a("mo_chunk3_mean_of_means_wrong", "mean over ranks / uneven shards", "3 ranks, chunks of 3, 3, 2 rows: each rank's mean, all-reduced, / 3", "mo_dp", world_size=3),
    _a("mo_chunk3_global_count_correct", "mean over ranks / uneven shards", "twin: each rank's row sum / 8 (8 / 3 inexact), all-reduced", "mo_dp", world_size=3),
    _a("mo_inplace_correct", "mean over ranks / divisor", "dist.all_reduce in place, then div_ by the world size", "mo_dp"),
    _a("mo_mul_inverse_correct", "mean over ranks / divisor", "the means all-reduced, * (1.0 / world size) (0.5: exact)", "mo_dp",
       found=FALSE_ALARM + ": no lemma reading a product by 1 / n (exact) as the division by n of a mean over n ranks"),
    _a("mo_rs_mean_correct", "mean over ranks / reduce-scatter", "[F, F] means reduce-scattered along the rows, / world size", "mo_dp_rows_out"),
    _a("mo_rs_prediv_correct", "mean over ranks / reduce-scatter", "the means / world size, then reduce-scattered", "mo_dp_rows_out"),
    _a("mo_rs_no_div_wrong", "mean over ranks / reduce-scatter", "the means reduce-scattered, never divided", "mo_dp_rows_out"),
    _a("mo_rs_local_slice_wrong", "mean over ranks / reduce-scatter", "each rank's rows of its own mean / world size, no reduce-scatter", "mo_dp_rows_out"),
    _a("mo_rs_mean4_correct", "mean over ranks / reduce-scatter", "the same as mo_rs_mean_correct on 4 ranks", "mo_dp_rows_out", script="mo_rs_mean_correct", world_size=4),
    _a("mo_avg_op_correct", "mean over ranks / AVG", "the means all-reduced with funcol's \"avg\"", "mo_dp"),
    _a("mo_avg_op4_correct", "mean over ranks / AVG", "the same on 4 ranks", "mo_dp", script="mo_avg_op_correct", world_size=4),
    _a("mo_avg_op_twice_wrong", "mean over ranks / AVG", "the means all-reduced with \"avg\", then / world size again", "mo_dp"),
    _a("mo_avg_op_sums_wrong", "mean over ranks / AVG", "the row SUMS all-reduced with \"avg\"", "mo_dp"),
    _a("mo_avg_op_uneven_wrong", "mean over ranks / AVG", "uneven shards (4, 2 rows): the means all-reduced with \"avg\"", "mo_uneven"),
    _a("mo_avg_zero_parts_correct", "mean over ranks / AVG", "ranks 2, 3 contribute zeros (dropped from the lowered sum): \"avg\" over 4, * 4", "mo_two_of_four", world_size=4,
       found=FALSE_ALARM + ": no lemma for a division by 4 then a product by 4 ((s / 4.0) * 4.0 = s)"),
    _a("mo_avg_zero_parts_wrong", "mean over ranks / AVG", "the same, * 2 (the ranks with rows) where the avg divided by 4", "mo_two_of_four", world_size=4),
    _a("mo_div_ws_plus1_wrong", "mean over ranks / divisor", "the means all-reduced, / (world size + 1)", "mo_dp"),
    _a("mo_div_2ws_wrong", "mean over ranks / divisor", "the means all-reduced, / (2 * world size)", "mo_dp"),
    _a("mo_div_global_batch_wrong", "mean over ranks / divisor", "the MEANS all-reduced, / the global batch size", "mo_dp"),
    _a("mo_div_twice_wrong", "mean over ranks / divisor", "the means / world size before and again after the all-reduce", "mo_dp"),
    _a("mo_prediv_correct", "mean over ranks / divisor", "twin: the means / world size before the all-reduce only", "mo_dp"),
    _a("mo_no_div_wrong", "mean over ranks / divisor", "the means all-reduced, never divided (4 ranks)", "mo_dp", world_size=4),
    _a("mo_sum_div_local_rows_wrong", "mean over ranks / divisor", "the row SUMS all-reduced, / the local row count", "mo_dp"),
    _a("mo_sum_div_ws_wrong", "mean over ranks / divisor", "the row SUMS all-reduced, / world size", "mo_dp"),
    _a("mo_sum_div_global_rows_correct", "mean over ranks / divisor", "twin: the row sums all-reduced, / the global row count", "mo_dp"),
    _a("mo_sum_div_global_rows3_correct", "mean over ranks / divisor", "the same on 3 ranks (24 / 3 = 8 rows each)", "mo_dp",
       script="mo_sum_div_global_rows_correct", world_size=3),
    _a("mo_local_only_wrong", "mean over ranks", "each rank returns its own rows' mean (no all-reduce)", "mo_dp"),
    _a("mo_local_only_noexpect_correct", "mean over ranks / no [expect]", "the same with no [expect]: the certificate alone decides (a mean over ranks of the outputs)",
       "mo_dp_noexpect", script="pa_local_mean_correct",
       found="was a hole (labelled wrong: the harnesses knew no mean over ranks, the spec no partial(avg)); the mean over "
             "ranks is clean (division by the world size), so its certificate out = mean(r0.out, r1.out) is a relation the "
             "spec can now expect (partial(avg)) and the harnesses accept: correct, refines"),
    _a("mo_cancel_noexpect_correct", "mean over ranks / no [expect]", "each rank's own mean shifted by +1 / -1 (the shifts cancel in the ranks' mean), no [expect]",
       "mo_dp_noexpect", script="mo_cancel_shares",
       found=FALSE_ALARM + ": the ranks' outputs are shares of the mean (out = mean(r0.out, r1.out) holds exactly: first labelled "
             "wrong, before the mean over ranks was a relation the harnesses know); no lemma cancels the constants +1 and -1 "
             "inside a mean over ranks"),
    _a("mo_cancel_wrong", "mean over ranks", "the same under [expect] out = replicate", "mo_dp"),
    _a("mo_uneven_local_only_noexpect_wrong", "mean over ranks / no [expect]", "uneven shards (4, 2 rows): each rank's own mean, no all-reduce, no [expect]",
       "mo_uneven_noexpect", script="mo_uneven_local_only_wrong"),
    _a("mo_mean_of_means_noexpect_correct", "mean over ranks / no [expect]", "twin: averaged over the ranks, no [expect]", "mo_dp_noexpect", script="mo_mean_of_means_correct"),
    _a("mo_scalar_loss_correct", "mean over ranks / 0-D", "a 0-D loss averaged over 4 ranks", "mo_dp", world_size=4),
    _a("mo_scalar_loss_div2_wrong", "mean over ranks / 0-D", "a 0-D loss all-reduced over 4 ranks, / 2 (sums of 0-D parts fold: lists of 4, 3, 2 parts)", "mo_dp", world_size=4),
    _a("mo_center_correct", "mean over ranks / broadcasting", "rows centred by the averaged mean ([1, F] against [rows, F])", "mo_dp_rows"),
    _a("mo_center_local_wrong", "mean over ranks / broadcasting", "rows centred by the local mean", "mo_dp_rows"),
    _a("mo_mean_for_max_wrong", "mean over ranks / max", "column maxima averaged over the ranks instead of their max", "mo_dp"),
    _a("mo_max_for_max_correct", "mean over ranks / max", "twin: all-reduced with max", "mo_dp"),
    _a("mo_subgroup_wrong", "mean over ranks / subgroup", "the means averaged over pairs {0,1}, {2,3} of a world of 4", "mo_dp", world_size=4),
    _a("mo_subgroup_div_world_wrong", "mean over ranks / subgroup", "the means summed over a pair, / world size 4", "mo_dp", world_size=4),
    _a("mo_hier_mean_correct", "mean over ranks / subgroup", "twin: averaged over the pairs, then across them", "mo_dp", world_size=4,
       found=FALSE_ALARM + ": no lemma for a mean of equal-sized means (mean(mean(a, b), mean(c, d)) = mean(a, b, c, d))"),
    _a("mo_hier_same_group_wrong", "mean over ranks / subgroup", "averaged over the same pair twice", "mo_dp", world_size=4),
    _a("mo_mesh_world_mean_correct", "mean over ranks / mesh", "[dp=2, tp=2]: the means all-reduced over the world, / 4 (tp replicas counted twice, over 4)", "mo_mesh", world_size=4,
       found=FALSE_ALARM + ": no lemma for a mean over ranks of replicas (mean(a, b, a, b) = mean(a, b))"),
    _a("mo_mesh_world_div_dp_wrong", "mean over ranks / mesh", "the means all-reduced over the world, / dp size 2", "mo_mesh", world_size=4),
    _a("mo_mesh_dp_mean_correct", "mean over ranks / mesh", "the means averaged over the dp group", "mo_mesh", world_size=4),
    _a("mo_mesh_tp_mean_wrong", "mean over ranks / mesh", "the means averaged over the tp group (replicas) instead of dp", "mo_mesh", world_size=4),
    _a("mo_mesh_dp_div_world_wrong", "mean over ranks / mesh", "the means summed over dp, / world size 4", "mo_mesh", world_size=4),
    _a("mo_mesh_dp_only_wrong", "mean over ranks / mesh", "batch split over dp and tp, averaged over dp only; [expect] out = replicate@dp (tp unnamed)", "mo_mesh_dp_only", world_size=4),
    _a("mo_replicas_mean_correct", "mean over ranks / replicas vs shares", "replicated tanh(x) averaged over the ranks: the value", "mo_rep",
       found=FALSE_ALARM + ": no lemma for the mean over ranks of one replicated value (mean(x, x) = x)"),
    _a("mo_shares_mean_wrong", "mean over ranks / replicas vs shares", "partial shares of x averaged (not summed) over the ranks", "mo_partial"),
    _a("mo_shares_sum_correct", "mean over ranks / replicas vs shares", "twin: the shares summed", "mo_partial"),
    _a("mo_int_mean_correct", "mean over ranks / ints", "int row sums all-reduced, true-divided by the global row count", "mo_dp",
       found=FALSE_ALARM + ": refused (exit 2): no semantics for aten.div of an int64 tensor by an int (true division into a float)"),
    _a("mo_int_floor_means_wrong", "mean over ranks / ints", "each rank's floor mean (int), all-reduced, floor-divided by world size", "mo_dp",
       exits=(1, 2), found="refused (exit 2): no semantics for div_floor of an int64 tensor"),
    _a("mo_int_true_means_wrong", "mean over ranks / ints", "each rank's floor mean (int), all-reduced, true-divided by world size", "mo_dp",
       exits=(1, 2), found="refused (exit 2): no semantics for div / div_floor of an int64 tensor"),
    _a("mo_half_mean_of_means_correct", "mean over ranks / float16", "float16 means (exact quarters) averaged over the ranks", "mo_dp"),
    _a("mo_half_div_ws_plus1_wrong", "mean over ranks / float16", "float16 means all-reduced, / (world size + 1)", "mo_dp"),
    _a("mo_bf16_mean_of_means_correct", "mean over ranks / bfloat16", "bfloat16 means (exact quarters) averaged over the ranks", "mo_dp"),
    _a("mo_bf16_div_ws_plus1_wrong", "mean over ranks / bfloat16", "bfloat16 means all-reduced, / (world size + 1)", "mo_dp"),
    _a("mo_grad_avg_correct", "mean over ranks / gradients", "DDP: each rank's gradient of its rows' mean loss, all-reduced, / world size", "mo_grad"),
    _a("mo_grad_avg4_correct", "mean over ranks / gradients", "the same on 4 ranks", "mo_grad", script="mo_grad_avg_correct", world_size=4),
    _a("mo_grad_avg_twice_wrong", "mean over ranks / gradients", "the loss pre-scaled by 1 / W, then averaged again (1 / W twice)", "mo_grad"),
    _a("mo_grad_avg_twice4_wrong", "mean over ranks / gradients", "the same on 4 ranks", "mo_grad", script="mo_grad_avg_twice_wrong", world_size=4),
    _a("mo_grad_sum_wrong", "mean over ranks / gradients", "the gradients all-reduced, never divided", "mo_grad"),
    _a("mo_grad_prescaled_sum_correct", "mean over ranks / gradients", "the loss pre-scaled by 1 / W, the gradients summed", "mo_grad"),
    # --- partial(avg): the mean over ranks as a placement (DTensor's Partial("avg")) -------------
    _a("pa_avg_as_sum_wrong", "partial(avg)", "x = partial(avg) (shares whose mean is x), summed by an all-reduce SUM: W times x", "pa_avg_in"),
    _a("pa_avg_reduced_correct", "partial(avg)", "twin: the shares averaged (all-reduce AVG)", "pa_avg_in"),
    _a("pa_local_sum_wrong", "partial(avg)", "[expect] out = partial(avg); each rank returns its rows' SUM", "pa_expect_avg"),
    _a("pa_local_mean_correct", "partial(avg)", "twin: each rank returns its rows' mean (equal shards)", "pa_expect_avg"),
    _a("pa_uneven_local_mean_wrong", "partial(avg)", "[expect] out = partial(avg); uneven shards (16 / 8 rows), each rank's mean", "pa_uneven_expect_avg"),
]

BY_NAME = {a.name: a for a in ATTEMPTS}
assert len(BY_NAME) == len(ATTEMPTS), "attempt names must be unique"


def plain(attempts):
    return [a.for_gloo() for a in attempts if a.gloo == "plain"]


def random_draws(attempts):
    return [a.for_gloo() for a in attempts if a.gloo == "random"]
