/* A program that uses an installed Cake: built by the install_consumer test through
 * find_package(Cake) and through `cc consumer.c $(pkg-config --cflags --libs cake)`. Needs no
 * GPU: it asks for the version and a status name. */
#include <stdio.h>
#include <string.h>

#include <cake.h>

int main(void) {
  const int v = cake_version();
  const char *name = cake_status_string(CAKE_STATUS_UNSUPPORTED_SHAPE);
  printf("Cake %d.%d.%d (header %d): %s\n", v / 10000, v / 100 % 100, v % 100, CAKE_VERSION, name);
  return v == CAKE_VERSION && strcmp(name, "CAKE_STATUS_UNSUPPORTED_SHAPE") == 0 ? 0 : 1;
}
