// CUDA graphs: in a fresh process, after cake_create (which loads the
// module), the first launching Cake calls happen inside a stream capture in global mode:
// normgate forward, backward in both packages (BF16 and FP32 dw), and SwiGLU + MXFP8 forward and
// backward when the library has them. The capture must succeed (an allocation, a module load or
// a synchronisation inside it would break a global-mode capture), hold exactly one kernel node
// per call, and leave device memory as it was. The graph is then replayed 100 times with new
// inputs each time, and every replay's outputs equal the same calls run eagerly on the same
// inputs, byte for byte (the non-deterministic package's dw within 1 ulp), with the
// non-deterministic workspace back to zero after each replay. Skips without a GPU.
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/gpu_common.h"
#include "rel_gpu.h"

namespace {

std::vector<relg::Task> make_tasks() {
  std::vector<relg::Task> t(4);
  t[0].op = relg::Op::kFwd;
  t[0].rows = 3001;
  t[0].d = 128;
  t[1].op = relg::Op::kBwdDet;
  t[1].rows = 3001;
  t[1].d = 128;
  t[1].pad = 8;
  t[2].op = relg::Op::kBwdNondet;
  t[2].rows = 20000;
  t[2].d = 256;
  t[2].dw_dtype = CAKE_DTYPE_F32;
  t[3].op = relg::Op::kFwd;
  t[3].rows = 777;
  t[3].d = 96;  // the general program
  if (rel::have_swiglu()) {
    t.resize(6);
    t[4].op = relg::Op::kSwFwd;
    t[4].m = 256;
    t[4].k = 512;
    t[5].op = relg::Op::kSwBwd;
    t[5].m = 384;
    t[5].k = 256;
  }
  return t;
}

}  // namespace

static void test_capture_first_call_and_replay(void **) {
  SKIP_WITHOUT_GPU();
  if (!rel::have_swiglu()) print_message("graph without SwiGLU: %s\n", REL_SWIGLU_ABSENT);
  CUDA_OK(cudaFree(nullptr));
  cake_handle_t h = nullptr;
  CAKE_OK(cake_create(&h, 0));  // the module is loaded here, before any capture
  std::vector<relg::Task> graph_tasks = make_tasks(), eager_tasks = make_tasks();
  std::string err;
  for (auto *set : {&graph_tasks, &eager_tasks}) {
    for (relg::Task &t : *set) {
      if (!t.setup(h, &err)) {
        print_error("%s: %s\n", t.label().c_str(), err.c_str());
        fail();
      }
    }
  }
  cudaStream_t stream, eager;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&eager, cudaStreamNonBlocking));
  CUDA_OK(cudaDeviceSynchronize());
  size_t free_before = 0, free_after = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_before, &total));

  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (relg::Task &t : graph_tasks) {
    const cake_status_t st = t.launch(h, stream);
    if (st != CAKE_STATUS_SUCCESS) {
      print_error("captured %s: %s: %s\n", t.label().c_str(), cake_status_string(st), cake_last_error_message());
      cudaStreamEndCapture(stream, &graph);
      fail();
    }
  }
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaMemGetInfo(&free_after, &total));
  assert_int_equal(free_before, free_after);  // nothing allocated while capturing

  size_t nodes = 0;
  CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::vector<cudaGraphNode_t> list(nodes);
  CUDA_OK(cudaGraphGetNodes(graph, list.data(), &nodes));
  assert_int_equal(nodes, graph_tasks.size());  // one kernel per call: no memset, no copy
  for (cudaGraphNode_t n : list) {
    cudaGraphNodeType type;
    CUDA_OK(cudaGraphNodeGetType(n, &type));
    assert_int_equal(type, cudaGraphNodeTypeKernel);
  }
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  constexpr int kReplays = 100;
  for (int r = 0; r < kReplays; ++r) {
    for (size_t i = 0; i < graph_tasks.size(); ++i) {
      graph_tasks[i].fill(1000 + r * 16 + i, stream);
      eager_tasks[i].fill(1000 + r * 16 + i, eager);
    }
    CUDA_OK(cudaGraphLaunch(exec, stream));
    for (relg::Task &t : eager_tasks) CAKE_OK(t.launch(h, eager));
    for (size_t i = 0; i < graph_tasks.size(); ++i) {
      const auto g = graph_tasks[i].read(stream, &err);
      const auto e = eager_tasks[i].read(eager, &err);
      if (!err.empty()) {
        print_error("replay %d: %s\n", r, err.c_str());
        fail();
      }
      const std::string diff = relg::compare(graph_tasks[i], g, e);
      if (!diff.empty()) {
        print_error("replay %d, %s: graph and eager differ: %s\n", r, graph_tasks[i].label().c_str(), diff.c_str());
        fail();
      }
      if (!graph_tasks[i].workspace_zero()) {
        print_error("replay %d, %s: workspace not left zero\n", r, graph_tasks[i].label().c_str());
        fail();
      }
    }
  }
  print_message("captured %zu calls as the process's first launches; %d replays equal eager\n", graph_tasks.size(),
                kReplays);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaStreamDestroy(eager));
  graph_tasks.clear();
  eager_tasks.clear();
  CAKE_OK(cake_destroy(h));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_capture_first_call_and_replay)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
