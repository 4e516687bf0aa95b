// What only sm100 has. Included before the shared bodies when sm100's manifest is compiled, also
// when it is compiled for sm_90 as a cross-check image (so guard every instruction that sm_90
// lacks with __CUDA_ARCH__ and give the same bits without it).
#pragma once
#define CAKE_ARCH_TABLE_sm100 1
