// The cake:: operator library. The fake (meta) implementations that torch.compile and
// FakeTensor tracing use live in Python (cake/torch/_fakes.py), named here so that PyTorch
// imports them with the ops.
#include <torch/library.h>

#include "ops.h"

TORCH_LIBRARY(cake, m) {
  m.set_python_module("cake.torch._fakes");
  for (const auto &op : cake_torch::kSchemas) m.def(op.schema);
}
