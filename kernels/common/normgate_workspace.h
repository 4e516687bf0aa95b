/* Layout of the normgate backward's workspace, computed the same way by the host (size query,
 * validation) and the device (where each level lives). Plain C + CAKE_HD.
 *
 * Deterministic package: dw = sum over rows of a*n is a fixed tree over "chunks" of
 * CAKE_NG_DW_CHUNK_ROWS consecutive rows:
 *   chunk   FP32, the chunk's rows added in row order (rows past the end add +0);
 *   above   FP64, a full binary tree over chunk index (adjacent pairs first, missing chunks +0).
 * Every node of that tree is an aligned dyadic interval of chunks, so any schedule that builds
 * whole aligned subtrees gives the same bits. The general programs build it in levels: a block
 * of G chunks (G a power of two, one chunk a group) -> level 0 node; every 64 nodes of a level
 * -> one node of the next (the CTA whose arrival completes a parent's counter builds the
 * parent); the single node of the top level is rounded once into dw. The tuned programs keep
 * a column tree (below). Whoever consumes a counter or a node writes it back to
 * zero, so every call leaves the whole workspace zero, whatever its shape: one buffer serves
 * later calls of any shape that fits, and graph replays.
 *
 * Non-deterministic package: FP64 accumulator [d] + one ticket counter, left zero.
 */
#ifndef CAKE_KERNELS_COMMON_NORMGATE_WORKSPACE_H_
#define CAKE_KERNELS_COMMON_NORMGATE_WORKSPACE_H_

#include <stdint.h>

#include "hd.h"
#include "normgate_params.h"

#define CAKE_NG_TREE_FANOUT 64
#define CAKE_NG_MAX_LEVELS 8

static CAKE_HD inline int64_t cake_ng_round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static CAKE_HD inline int64_t cake_ng_chunks(int64_t rows) {
  return (rows + CAKE_NG_DW_CHUNK_ROWS - 1) / CAKE_NG_DW_CHUNK_ROWS;
}

/* The tree of one call: level-0 nodes are CTA blocks of chunks_per_block chunks; each level
 * above has one node per CAKE_NG_TREE_FANOUT nodes below; the top level has one node. Levels
 * are laid out one after another: FP64 [nodes][d], then (levels >= 1) uint32 [nodes] counters,
 * each in 256-byte granules. Computed level by level (no arrays) so device code keeps it in
 * registers. */
typedef struct cake_ng_tree {
  int64_t rows;
  int32_t d;
  int32_t levels;
  int64_t blocks; /* level-0 nodes */
} cake_ng_tree;

typedef struct cake_ng_level {
  int64_t nodes;
  int64_t node_offset;    /* bytes */
  int64_t counter_offset; /* bytes; levels >= 1 */
} cake_ng_level;

/* Nodes `level` levels above n nodes, one node per `fanout` below (either tree). */
static CAKE_HD inline int64_t cake_ng_nodes_above(int64_t n, int64_t fanout, int level) {
  for (int l = 0; l < level; ++l) n = (n + fanout - 1) / fanout;
  return n;
}

static CAKE_HD inline int64_t cake_ng_level_nodes(int64_t blocks, int level) {
  return cake_ng_nodes_above(blocks, CAKE_NG_TREE_FANOUT, level);
}

static CAKE_HD inline cake_ng_tree cake_ng_tree_of(int64_t rows, int32_t d,
                                                   int64_t chunks_per_block) {
  cake_ng_tree t;
  t.rows = rows;
  t.d = d;
  t.blocks = (cake_ng_chunks(rows) + chunks_per_block - 1) / chunks_per_block;
  t.levels = 1;
  while (cake_ng_level_nodes(t.blocks, t.levels - 1) > 1) ++t.levels;
  return t;
}

static CAKE_HD inline cake_ng_level cake_ng_level_of(const cake_ng_tree *t, int level) {
  cake_ng_level out;
  int64_t off = 0;
  out.nodes = 0;
  out.node_offset = 0;
  out.counter_offset = 0;
  for (int l = 0; l <= level; ++l) {
    const int64_t n = cake_ng_level_nodes(t->blocks, l);
    const int64_t node_bytes = cake_ng_round_up(n * (int64_t)t->d * 8, 256);
    const int64_t counter_bytes = l > 0 ? cake_ng_round_up(n * 4, 256) : 0;
    if (l == level) {
      out.nodes = n;
      out.node_offset = off;
      out.counter_offset = off + node_bytes;
    }
    off += node_bytes + counter_bytes;
  }
  return out;
}

static CAKE_HD inline int64_t cake_ng_tree_bytes(const cake_ng_tree *t) {
  const cake_ng_level top = cake_ng_level_of(t, t->levels - 1);
  return top.counter_offset + (t->levels > 1 ? cake_ng_round_up(4, 256) : 0);
}

/* The tuned backward programs walk "units" of rows (one step of a CTA: 2^k whole chunks),
 * handed out by a unit counter, so that fast and slow SMs end together. Their deterministic
 * package keeps one node per unit (a unit's node is the same bits whichever CTA computes it),
 * in one of three trees (a program knob; the third, the grouped column tree, below). The row tree is cake_ng_tree_of's with a unit a
 * block: a unit writes its node as one contiguous row; after the walk the CTAs build its levels
 * in parallel, a grid barrier before each, until one is short enough to reduce a column a CTA
 * (normgate_dw_row_tree.cuh, build_tree_cooperative). The column tree (below) is read contiguously
 * a column at a time, one barrier and one pass up to 2^14 units, but a unit's node costs d
 * separate 8-byte writes, one L2 request each (Nsight Compute: 8.3 M against 5.2 M write
 * requests at 16384 x 48, D = 128): the column tree wins where the tail after the walk
 * dominates, the row tree where the walk does (H200, docs/performance.md). The column
 * tree: a level above holds one node per CAKE_NG_COLUMN_SPAN nodes below (an aligned subtree
 * of the same canonical tree); the first level of at most CAKE_NG_COLUMN_SPAN nodes is reduced
 * a column at a time into dw. A level is column-major by spans: FP64 [nodes / span][d][span],
 * span = CAKE_NG_COLUMN_SPAN, or the node count rounded up to 32 where it is smaller (one span:
 * plain column-major), so that a column's nodes of one span are contiguous (16-byte reads) and
 * every column starts 256-byte aligned; its CTAs build the levels in parallel, a grid barrier
 * before each (normgate_dw_column_tree.cuh, reduce_column_tree). Each tree is built by a cooperative
 * launch (all CTAs resident together); its words (uint32, cake_ng_det_tuned_words_offset):
 * [0] unused, [1] the unit counter, [2 + b] grid barrier b. The non-deterministic
 * package keeps its unit counter beside its ticket (cake_ng_nondet_counter_offset + 4).
 * Whoever takes the last ticket (or leaves the last barrier last) resets the counters. */
#define CAKE_NG_COLUMN_SPAN_LOG2 14
#define CAKE_NG_COLUMN_SPAN (1 << CAKE_NG_COLUMN_SPAN_LOG2)

typedef struct cake_ng_coltree {
  int64_t units; /* level-0 nodes */
  int32_t d;
  int32_t levels;
} cake_ng_coltree;

typedef struct cake_ng_collevel {
  int64_t nodes;
  int64_t span;        /* nodes of a column side by side */
  int64_t node_offset; /* bytes */
  int64_t bytes;
} cake_ng_collevel;

static CAKE_HD inline int64_t cake_ng_colspan(int64_t nodes) {
  return nodes > CAKE_NG_COLUMN_SPAN ? CAKE_NG_COLUMN_SPAN : cake_ng_round_up(nodes, 32);
}

/* Doubles from a level's start to node n of column c (span from cake_ng_colspan). */
static CAKE_HD inline int64_t cake_ng_colnode_index(int64_t n, int32_t d, int32_t c, int64_t span) {
  if (span < CAKE_NG_COLUMN_SPAN) return c * span + n; /* one span */
  return (((n >> CAKE_NG_COLUMN_SPAN_LOG2) * d + c) << CAKE_NG_COLUMN_SPAN_LOG2) +
         (n & (CAKE_NG_COLUMN_SPAN - 1));
}

/* The same index as a column's part plus a node's part (their sum), so that a loop over nodes
   with a fixed column (the walk's level-0 stores) computes the column's part once. */
static CAKE_HD inline int64_t cake_ng_colnode_col_part(int32_t c, int64_t span) {
  return span < CAKE_NG_COLUMN_SPAN ? c * span : (int64_t)c << CAKE_NG_COLUMN_SPAN_LOG2;
}
static CAKE_HD inline int64_t cake_ng_colnode_node_part(int64_t n, int32_t d, int64_t span) {
  if (span < CAKE_NG_COLUMN_SPAN) return n;
  return (((n >> CAKE_NG_COLUMN_SPAN_LOG2) * d) << CAKE_NG_COLUMN_SPAN_LOG2) +
         (n & (CAKE_NG_COLUMN_SPAN - 1));
}

static CAKE_HD inline int64_t cake_ng_collevel_nodes(int64_t units, int level) {
  return cake_ng_nodes_above(units, CAKE_NG_COLUMN_SPAN, level);
}

/* Units of a call of the tuned programs (units of chunks_per_unit chunks). */
static CAKE_HD inline int64_t cake_ng_units(int64_t rows, int64_t chunks_per_unit) {
  return (cake_ng_chunks(rows) + chunks_per_unit - 1) / chunks_per_unit;
}

static CAKE_HD inline cake_ng_coltree cake_ng_coltree_of(int64_t rows, int32_t d,
                                                         int64_t chunks_per_unit) {
  cake_ng_coltree t;
  t.units = cake_ng_units(rows, chunks_per_unit);
  t.d = d;
  t.levels = 1;
  while (cake_ng_collevel_nodes(t.units, t.levels - 1) > CAKE_NG_COLUMN_SPAN) ++t.levels;
  return t;
}

static CAKE_HD inline cake_ng_collevel cake_ng_collevel_of(const cake_ng_coltree *t, int level) {
  cake_ng_collevel out;
  int64_t off = 0;
  out.nodes = 0;
  out.span = 0;
  out.node_offset = 0;
  out.bytes = 0;
  for (int l = 0; l <= level; ++l) {
    const int64_t n = cake_ng_collevel_nodes(t->units, l);
    const int64_t span = cake_ng_colspan(n);
    const int64_t bytes = cake_ng_round_up(n, span) * (int64_t)t->d * 8;
    if (l == level) {
      out.nodes = n;
      out.span = span;
      out.node_offset = off;
      out.bytes = bytes;
    }
    off += bytes;
  }
  return out;
}

static CAKE_HD inline int64_t cake_ng_coltree_words_offset(const cake_ng_coltree *t) {
  const cake_ng_collevel top = cake_ng_collevel_of(t, t->levels - 1);
  return top.node_offset + top.bytes;
}

/* The grouped column tree (tree knob 2): the column tree's node writes and its read after the
 * walk both scale with the node count, so most units are handed out in aligned groups of
 * CAKE_NG_GROUP_UNITS: the CTA that takes a group walks its units in consecutive steps and
 * builds the group's aligned subtree (its units' values wait in shared memory for the last), one
 * node a group. Only the last units go out one by one, enough of them (CAKE_NG_GROUP_UNITS per
 * CTA) for the CTAs to finish together whatever group each was in when the groups ran out.
 * Handed out in ticket order: tickets [0, groups) are the groups (units [t G, t G + G)), the next
 * `singles` tickets the single units after them. The column tree's level 0 is then one "leaf"
 * per G units (cake_ng_coltree_of with G units a node): leaf i < groups is group i's node, a
 * leaf past them is built after the walk from its G single units' nodes (those past the end
 * +0), which lie column-major in one span after the tree: FP64 [d][singles span]. Every node is
 * still an aligned dyadic interval of chunks: the same bits as the other trees. */
#define CAKE_NG_GROUP_UNITS_LOG2 3
#define CAKE_NG_GROUP_UNITS (1 << CAKE_NG_GROUP_UNITS_LOG2)
#define CAKE_NG_GROUP_MAX_GRID 1024 /* the singles region is sized for grids up to this */
#define CAKE_NG_SINGLES_MAX (CAKE_NG_GROUP_UNITS * (CAKE_NG_GROUP_MAX_GRID + 1))

typedef struct cake_ng_grouping {
  int64_t units;   /* all units of the call */
  int64_t groups;  /* tickets [0, groups): groups of CAKE_NG_GROUP_UNITS units */
  int64_t singles; /* then one unit a ticket: units [groups G, units) */
} cake_ng_grouping;

static CAKE_HD inline cake_ng_grouping cake_ng_grouping_of(int64_t units, int64_t grid) {
  cake_ng_grouping g;
  const int64_t cap = grid < CAKE_NG_GROUP_MAX_GRID ? grid : CAKE_NG_GROUP_MAX_GRID;
  const int64_t want = CAKE_NG_GROUP_UNITS * cap; /* singles: a group's worth per CTA */
  g.units = units;
  g.groups = units > want ? (units - want) / CAKE_NG_GROUP_UNITS : 0;
  g.singles = units - g.groups * CAKE_NG_GROUP_UNITS; /* < want + G <= CAKE_NG_SINGLES_MAX */
  return g;
}

/* The grouped tree's leaves: the column tree with a group a node. */
static CAKE_HD inline cake_ng_coltree cake_ng_leaves_of(int64_t rows, int32_t d,
                                                       int64_t chunks_per_unit) {
  return cake_ng_coltree_of(rows, d, chunks_per_unit * CAKE_NG_GROUP_UNITS);
}

/* The singles' span (doubles a column) and their region's start, after the leaves. */
static CAKE_HD inline int64_t cake_ng_singles_span(int64_t units) {
  return cake_ng_round_up(units < CAKE_NG_SINGLES_MAX ? units : CAKE_NG_SINGLES_MAX, 32);
}
static CAKE_HD inline int64_t cake_ng_singles_offset(int64_t rows, int32_t d, int64_t chunks_per_unit) {
  const cake_ng_coltree leaves = cake_ng_leaves_of(rows, d, chunks_per_unit);
  return cake_ng_coltree_words_offset(&leaves);
}

/* The tuned deterministic programs' workspace in bytes and where its words start, for each
 * tree (the program's knob: 0 row, 1 column, 2 grouped column). The row tree is
 * cake_ng_tree_of's, its words after the tree; the column tree's after its last level; the
 * grouped tree's after the singles. */
static CAKE_HD inline int64_t cake_ng_det_tuned_words_offset(int64_t rows, int32_t d,
                                                             int64_t chunks_per_unit,
                                                             int tree) {
  if (tree == 2) {
    return cake_ng_singles_offset(rows, d, chunks_per_unit) +
           cake_ng_singles_span(cake_ng_units(rows, chunks_per_unit)) * (int64_t)d * 8;
  }
  if (tree == 1) {
    const cake_ng_coltree t = cake_ng_coltree_of(rows, d, chunks_per_unit);
    return cake_ng_coltree_words_offset(&t);
  }
  const cake_ng_tree t = cake_ng_tree_of(rows, d, chunks_per_unit);
  return cake_ng_tree_bytes(&t);
}
static CAKE_HD inline int64_t cake_ng_det_tuned_bytes(int64_t rows, int32_t d,
                                                      int64_t chunks_per_unit, int tree) {
  return cake_ng_det_tuned_words_offset(rows, d, chunks_per_unit, tree) + 256;
}

/* What a tuned deterministic launch of `grid` CTAs passes its kernel (normgate_params.h). */
static CAKE_HD inline cake_ng_det_layout cake_ng_det_layout_of(int64_t rows, int32_t d,
                                                              int64_t chunks_per_unit, int tree,
                                                              int64_t grid) {
  cake_ng_det_layout l;
  l.words_offset = cake_ng_det_tuned_words_offset(rows, d, chunks_per_unit, tree);
  l.singles_offset = 0;
  l.singles_span = 0;
  l.leaf_span = 0;
  l.groups = 0;
  l.singles = 0;
  if (tree == 2) {
    const int64_t units = cake_ng_units(rows, chunks_per_unit);
    const cake_ng_grouping g = cake_ng_grouping_of(units, grid);
    l.singles_offset = cake_ng_singles_offset(rows, d, chunks_per_unit);
    l.singles_span = cake_ng_singles_span(units);
    l.leaf_span = cake_ng_colspan(cake_ng_leaves_of(rows, d, chunks_per_unit).units);
    l.groups = g.groups;
    l.singles = g.singles;
  }
  return l;
}

/* Dynamic shared memory of the tuned backward programs, in bytes from the start:
 *   stages  [stages][rows_per_group][3][threads] 16-byte vectors (x, z, dy of one row part)
 *   t       FP32 [2][chunks of a step][16 rows x d + 32 / chunks]: each row's dw terms, for
 *           the in-order chunk sums (two steps' buffers; the padding spreads the banks)
 *   words   64 bytes: a flag, then the ring's mbarriers (from 16)
 *   ring    the unit ring (int64 [stages + 2])
 *   slots   grouped tree only (tree 2), 16-byte aligned: the group buffer FP64
 *           [CAKE_NG_GROUP_UNITS][d] */
typedef struct cake_ng_bwd_smem {
  int32_t t_offset, words_offset, ring_offset, slots_offset, bytes;
} cake_ng_bwd_smem;

static CAKE_HD inline cake_ng_bwd_smem cake_ng_bwd_smem_of(int32_t d, int32_t threads,
                                                           int32_t rows_per_group, int32_t stages,
                                                           int32_t tree) {
  cake_ng_bwd_smem s;
  const int32_t step_rows = rows_per_group * (threads / (d / 8));
  s.t_offset = stages * rows_per_group * 3 * threads * 16;
  const int32_t step_chunks = step_rows / CAKE_NG_DW_CHUNK_ROWS;
  s.words_offset = s.t_offset + 2 * step_chunks * (CAKE_NG_DW_CHUNK_ROWS * d + 32 / (step_chunks > 0 ? step_chunks : 1)) * 4;
  s.ring_offset = s.words_offset + 64;
  s.slots_offset = (int32_t)cake_ng_round_up(s.ring_offset + (stages + 2) * 8, 16);
  s.bytes = tree == 2 ? s.slots_offset + CAKE_NG_GROUP_UNITS * d * 8 : s.ring_offset + (stages + 2) * 8;
  return s;
}

/* Non-deterministic package: FP64 [d] accumulator, then the ticket counter and (tuned
 * programs) the unit counter beside it. */
static CAKE_HD inline int64_t cake_ng_nondet_counter_offset(int32_t d) {
  return cake_ng_round_up((int64_t)d * 8, 256);
}
static CAKE_HD inline int64_t cake_ng_nondet_bytes(int32_t d) {
  return cake_ng_nondet_counter_offset(d) + 256;
}

#endif /* CAKE_KERNELS_COMMON_NORMGATE_WORKSPACE_H_ */
