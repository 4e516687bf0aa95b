// Normgate backward bodies: dx, dz (BF16) and the dw reduction of either package.
//
// Per row, recomputed from x and z (nothing saved by the forward): s = sigmoid(z), n = x*rstd,
// a = dy*z*s, g = a*w, dz = ((dy*n*w)*s) * (1 + z*(1-s)), dx = rstd*(g - n*mean(g*n)),
// dw += a*n. The two row sums (x^2 and g*n) use the canonical tree of normgate_math.cuh, so
// every program gives the same dx and dz bits.
//
// Schedules (every one adds a chunk's CAKE_NG_DW_CHUNK_ROWS rows of a*n into FP32 in row
// order, the chunk's canonical sum, and the chunk sums in FP64 above):
//  - tuned (D = 64, 128, 256; bwd_tuned): a persistent CTA per SM walks units of one step, a
//    group of D/8 lanes per row, loads staged two steps ahead in shared memory; the chunk sums
//    are taken after each step from the rows' terms in shared memory. Deterministic: one
//    level-0 node per unit, in a row or a column tree, or one per aligned group of units in the
//    grouped column tree (the program's knob); after the walk all CTAs reduce the nodes to dw
//    (a cooperative launch, grid barriers; build_tree_cooperative, reduce_column_tree); the
//    layout comes from the host (params.det). Non-deterministic: an FP64 sum per column and
//    chunk thread.
//  - general (any D): normgate_general.cuh.
// The tree, the tickets and the workspace layout are in normgate_dw.cuh / normgate_workspace.h.
// One file a part: normgate_bwd_rows.cuh (a row's arithmetic), normgate_bwd_tuned.cuh (the tuned
// programs' walk and tail).
#pragma once

#include "normgate_bwd_rows.cuh"
#include "normgate_bwd_tuned.cuh"
#include "normgate_dw.cuh"
#include "normgate_fwd.cuh"
#include "program_desc.h"
