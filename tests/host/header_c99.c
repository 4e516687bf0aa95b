/* cake.h compiles as strict C99 with no CUDA header on the include path. */
#include "cake.h"

int cake_header_is_c99(void) { return (int)sizeof(cake_normgate_desc) > 0 && CAKE_VERSION > 0; }
