// What a handle holds. Immutable after cake_create_ex returns, so calls on it need no lock.
#pragma once
#include <vector>

#include "cake.h"
#include "driver/driver.h"
#include "modules/images.h"
#include "router/tables.h"

struct cake_handle_st {
  uint32_t magic;  // kHandleMagic while alive; catches use after destroy in most cases
  const cake::Driver *drv;
  int ordinal;
  CUdevice device;
  CUcontext context;  // the device's primary context, retained
  CUmodule module;
  int cc_major, cc_minor;
  int sm_count;          // real multiprocessor count: sizes persistent grids
  int routing_sm_count;  // what routes divide by (options.sm_count for tests)
  const cake::ArchTable *table;
  const cake::Image *image;
  bool jit;
  std::vector<CUfunction> functions;  // by program index of `table`
  std::vector<int> ctas_per_sm;       // occupancy the driver reports per program
  char device_name[96];
};

namespace cake {

constexpr uint32_t kHandleMagic = 0xCA4E0001u;

// Checks the handle, and makes its context current on this thread for the scope's lifetime
// (only pushing when another context is current, so the common path is one query).
class ScopedHandleContext {
 public:
  ScopedHandleContext() = default;
  ~ScopedHandleContext();
  cake_status_t enter(cake_handle_t handle);

 private:
  cake_handle_t handle_ = nullptr;
  bool pushed_ = false;
};

cake_status_t check_handle(cake_handle_t handle);

}  // namespace cake
