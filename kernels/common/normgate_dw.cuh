// The dw reduction of the normgate backward, both packages (layout and order in
// normgate_workspace.h). Rounding to dw happens once, from FP64. One file a part:
//   normgate_dw_store.cuh         the rounding into dw
//   normgate_dw_sync.cuh          fences, arrival counters, grid barriers
//   normgate_dw_row_tree.cuh      the row tree (counter protocol, or cooperative levels)
//   normgate_dw_column_tree.cuh   the column tree (cooperative levels, contiguous spans)
//   normgate_dw_grouped_tree.cuh  the grouped column tree's leaves
//   normgate_dw_nondet.cuh        the non-deterministic package
#pragma once

// In dependency order.
#include "normgate_dw_store.cuh"
#include "normgate_dw_sync.cuh"
#include "normgate_dw_row_tree.cuh"
#include "normgate_dw_grouped_tree.cuh"
#include "normgate_dw_column_tree.cuh"
#include "normgate_dw_nondet.cuh"
