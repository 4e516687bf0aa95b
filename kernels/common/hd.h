/* Qualifiers for code compiled by both the host compiler and nvcc. */
#ifndef CAKE_KERNELS_COMMON_HD_H_
#define CAKE_KERNELS_COMMON_HD_H_

#if defined(__CUDACC__)
#define CAKE_HD __host__ __device__
#define CAKE_FORCEINLINE __forceinline__
#else
#define CAKE_HD
#define CAKE_FORCEINLINE inline
#endif

#endif /* CAKE_KERNELS_COMMON_HD_H_ */
