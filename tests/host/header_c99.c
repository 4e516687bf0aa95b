/* cake.h compiles as strict C99 with no CUDA header on the include path, and without
 * CAKE_EXPERIMENTAL_API it declares the stable section only. */
#include "cake.h"

#ifdef CAKE_H_EXPERIMENTAL_
#error "cake.h declared its experimental section without CAKE_EXPERIMENTAL_API"
#endif

/* Each of these would clash with a declaration of the experimental section. */
typedef int cake_table_program;
typedef int cake_table_route;
typedef int cake_table_program_init;
typedef int cake_table_route_init;
typedef int cake_table_counts;
typedef int cake_table_program_get;
typedef int cake_table_route_get;

int cake_header_is_c99(void) { return (int)sizeof(cake_normgate_desc) > 0 && CAKE_VERSION > 0; }
