/* cake-info: what a libcake.so ships and what it would run on this machine.
 *
 *   cake-info            text: library version, devices, every architecture table
 *   cake-info --json     the same as one JSON object
 *
 * Uses only the public C ABI (cake.h), its experimental section included (the program tables:
 * knobs, routes, wave bands), so it is built against the header of the library it ships with.
 * No CUDA header, no CUDA runtime. Devices are found by cake_create() on ordinals 0, 1, ...
 * until the driver has no more; without a driver or a GPU the reason (cake_last_error_message())
 * is printed and the tables still are, since the table functions need no device. Exit status: 0, or 2 for a bad command line. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The program tables are the header's experimental section. */
#ifndef CAKE_EXPERIMENTAL_API
#define CAKE_EXPERIMENTAL_API
#endif
#include "cake.h"

/* Ordinals tried at most (the driver normally answers NO_DEVICE long before). */
#define MAX_DEVICES 64
/* The ABI has no list of tables: every table number in this range is asked for, so a library
 * newer than this header shows its new tables too. */
#define MAX_ARCH 1000

typedef struct device_entry {
  int ordinal;
  cake_status_t status;     /* of cake_create() */
  char message[512];        /* cake_last_error_message() when status is not SUCCESS */
  cake_device_info info;    /* valid when status is SUCCESS */
} device_entry;

typedef struct table_entry {
  int arch;
  int32_t program_count;
  int32_t route_count;
  cake_table_program *programs;
  cake_table_route *routes;
} table_entry;

typedef struct report {
  int version;
  device_entry devices[MAX_DEVICES];
  int device_count;
  table_entry *tables;
  int table_count;
} report;

/* ---- names ---------------------------------------------------------------------------- */

static const char *family_name(cake_family_t family) {
  switch (family) {
    case CAKE_FAMILY_NORMGATE: return "normgate";
    case CAKE_FAMILY_SWIGLU_MXFP8: return "swiglu_mxfp8";
    case CAKE_FAMILY_SWIGLU_FP8: return "swiglu_fp8";
  }
  return NULL;
}

static const char *op_name(cake_family_t family, cake_op_t op) {
  static const char *const normgate[] = {"forward", "backward_det", "backward_nondet"};
  static const char *const swiglu[] = {"forward_rowwise",  "forward_colwise",  "forward_both",
                                       "backward_rowwise", "backward_colwise", "backward_both"};
  const int i = (int)op;
  if (family == CAKE_FAMILY_NORMGATE && i >= 0 && i < 3) return normgate[i];
  if ((family == CAKE_FAMILY_SWIGLU_MXFP8 || family == CAKE_FAMILY_SWIGLU_FP8) && i >= 0 && i < 6) {
    return swiglu[i];
  }
  return NULL;
}

/* The knobs of a manifest line, in manifest order (kernels/common/program_desc.h: the
 * arguments after threads and min_ctas). A family this tool does not know gets knob0.. */
static int knob_names(cake_family_t family, const char *const **names) {
  static const char *const normgate[] = {"d", "rows_per_group", "prefetch", "persistent"};
  static const char *const swiglu[] = {"tile_rows", "tile_cols",    "rows_per_thread",
                                       "load_hint", "sigmoid_form", "band_form"};
  static const char *const swiglu_fp8[] = {"tile_rows", "rows_per_thread", "load_hint",
                                           "sigmoid_form", "band_form", "load_batch",
                                           "pipeline"};
  switch (family) {
    case CAKE_FAMILY_NORMGATE: *names = normgate; return 4;
    case CAKE_FAMILY_SWIGLU_MXFP8: *names = swiglu; return 6;
    case CAKE_FAMILY_SWIGLU_FP8: *names = swiglu_fp8; return 7;
  }
  *names = NULL;
  return 8;
}

/* What a route's size metric counts. */
static const char *metric_name(cake_family_t family) {
  return family == CAKE_FAMILY_NORMGATE ? "rows_per_sm" : "m_times_k";
}

/* ---- gathering -------------------------------------------------------------------------- */

static void gather_devices(report *r) {
  for (int ordinal = 0; ordinal < MAX_DEVICES; ++ordinal) {
    device_entry *e = &r->devices[r->device_count];
    memset(e, 0, sizeof *e);
    e->ordinal = ordinal;
    cake_handle_t h = NULL;
    e->status = cake_create(&h, ordinal);
    if (e->status != CAKE_STATUS_SUCCESS) {
      /* NO_DEVICE past ordinal 0 is the end of the list, not something to report. */
      if (e->status == CAKE_STATUS_NO_DEVICE && ordinal > 0) return;
      snprintf(e->message, sizeof e->message, "%s", cake_last_error_message());
      ++r->device_count;
      /* No driver, or none of its devices: later ordinals would say the same. */
      if (e->status == CAKE_STATUS_DRIVER_UNAVAILABLE || e->status == CAKE_STATUS_NO_DEVICE) return;
      continue;
    }
    cake_device_info_init(&e->info);
    if (cake_device_query(h, &e->info) != CAKE_STATUS_SUCCESS) {
      e->status = CAKE_STATUS_INTERNAL_ERROR;
      snprintf(e->message, sizeof e->message, "cake_device_query: %s", cake_last_error_message());
    }
    cake_destroy(h);
    ++r->device_count;
  }
}

static int gather_tables(report *r) {
  for (int arch = 1; arch < MAX_ARCH; ++arch) {
    int32_t programs = 0, routes = 0;
    if (cake_table_counts((cake_arch_t)arch, &programs, &routes) != CAKE_STATUS_SUCCESS) continue;
    table_entry *grown = realloc(r->tables, (size_t)(r->table_count + 1) * sizeof *grown);
    if (grown == NULL) return 0;
    r->tables = grown;
    table_entry *t = &r->tables[r->table_count++];
    memset(t, 0, sizeof *t);
    t->arch = arch;
    t->programs = calloc((size_t)(programs > 0 ? programs : 1), sizeof *t->programs);
    t->routes = calloc((size_t)(routes > 0 ? routes : 1), sizeof *t->routes);
    if (t->programs == NULL || t->routes == NULL) return 0;
    for (int32_t i = 0; i < programs; ++i) {
      cake_table_program_init(&t->programs[i]);
      if (cake_table_program_get((cake_arch_t)arch, i, &t->programs[i]) != CAKE_STATUS_SUCCESS) {
        fprintf(stderr, "cake-info: sm%d program %d: %s\n", arch, (int)i,
                cake_last_error_message());
        break;
      }
      t->program_count = i + 1;
    }
    for (int32_t i = 0; i < routes; ++i) {
      cake_table_route_init(&t->routes[i]);
      if (cake_table_route_get((cake_arch_t)arch, i, &t->routes[i]) != CAKE_STATUS_SUCCESS) {
        fprintf(stderr, "cake-info: sm%d route %d: %s\n", arch, (int)i,
                cake_last_error_message());
        break;
      }
      t->route_count = i + 1;
    }
  }
  return 1;
}

/* ---- text --------------------------------------------------------------------------------- */

/* A name for the text form: the known one, else "family<N>" / "op<N>" written into buf. */
static const char *family_text(cake_family_t family, char *buf, size_t n) {
  const char *name = family_name(family);
  if (name != NULL) return name;
  snprintf(buf, n, "family%d", (int)family);
  return buf;
}

static const char *op_text(cake_family_t family, cake_op_t op, char *buf, size_t n) {
  const char *name = op_name(family, op);
  if (name != NULL) return name;
  snprintf(buf, n, "op%d", (int)op);
  return buf;
}

/* A route bound: 2^N for powers of two from 2^10 (the reported routes are written so). */
static void bound_text(int64_t v, char *out, size_t n) {
  if (v < 0) {
    snprintf(out, n, "open");
    return;
  }
  if (v >= 1024 && (v & (v - 1)) == 0) {
    int e = 0;
    while ((v >> e) != 1) ++e;
    snprintf(out, n, "2^%d", e);
    return;
  }
  snprintf(out, n, "%" PRId64, v);
}

static void version_text(int v, char *out, size_t n) {
  snprintf(out, n, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

static void print_text(const report *r) {
  char lib[32], hdr[32];
  version_text(r->version, lib, sizeof lib);
  version_text(CAKE_VERSION, hdr, sizeof hdr);
  printf("Cake %s", lib);
  if (r->version != CAKE_VERSION) printf(" (cake-info built with cake.h %s)", hdr);
  printf("\n\nDevices\n");
  int usable = 0;
  for (int i = 0; i < r->device_count; ++i) {
    const device_entry *e = &r->devices[i];
    if (e->status != CAKE_STATUS_SUCCESS) {
      printf("  device %d: %s: %s\n", e->ordinal, cake_status_string(e->status), e->message);
      continue;
    }
    const cake_device_info *d = &e->info;
    ++usable;
    printf("  device %d: %s, compute capability %d.%d, %d SMs\n", e->ordinal, d->device_name,
           (int)d->cc_major, (int)d->cc_minor, (int)d->sm_count);
    printf("    table sm%d, image %s%s%s, %d programs\n", (int)d->table, d->image,
           d->jit ? " (PTX compiled by the driver at load)" : "",
           d->cross_check ? " (cross-check image)" : "", (int)d->program_count);
  }
  if (usable == 0) printf("  no usable device: the tables below are what the library ships\n");

  for (int ti = 0; ti < r->table_count; ++ti) {
    const table_entry *t = &r->tables[ti];
    printf("\nTable sm%d: %d programs, %d routes\n", t->arch, (int)t->program_count,
           (int)t->route_count);
    printf("  %-34s %-13s %-17s %7s %7s  %s\n", "program", "family", "op", "threads", "CTAs/SM",
           "knobs");
    for (int32_t i = 0; i < t->program_count; ++i) {
      const cake_table_program *p = &t->programs[i];
      char fam_buf[24], op_buf[24];
      const char *fam = family_text(p->family, fam_buf, sizeof fam_buf);
      const char *op = op_text(p->family, p->op, op_buf, sizeof op_buf);
      printf("  %-34s %-13s %-17s %7d %7d ", p->name, fam, op, (int)p->threads,
             (int)p->min_ctas_per_sm);
      const char *const *names;
      const int n = knob_names(p->family, &names);
      for (int k = 0; k < n; ++k) {
        if (names != NULL) printf(" %s=%d", names[k], (int)p->knobs[k]);
        else printf(" knob%d=%d", k, (int)p->knobs[k]);
      }
      printf("\n");
    }
    printf("  %-4s %-13s %-17s %-5s %-30s %s\n", "#", "family", "op", "d", "metric range",
           "program");
    for (int32_t i = 0; i < t->route_count; ++i) {
      const cake_table_route *q = &t->routes[i];
      char fam_buf[24], op_buf[24], d_buf[16], lo_buf[24], hi_buf[24], range[64];
      const char *fam = family_text(q->family, fam_buf, sizeof fam_buf);
      const char *op = op_text(q->family, q->op, op_buf, sizeof op_buf);
      /* d: the normgate width a route serves (0: any); swiglu_mxfp8 routes have none. */
      if (q->d != 0) snprintf(d_buf, sizeof d_buf, "%d", (int)q->d);
      else snprintf(d_buf, sizeof d_buf, "%s", q->family == CAKE_FAMILY_NORMGATE ? "any" : "-");
      bound_text(q->metric_lo, lo_buf, sizeof lo_buf);
      bound_text(q->metric_hi, hi_buf, sizeof hi_buf);
      snprintf(range, sizeof range, "%s [%s, %s)", metric_name(q->family), lo_buf, hi_buf);
      printf("  %-4d %-13s %-17s %-5s %-30s %s", (int)i, fam, op, d_buf, range, q->program);
      /* A wave route: the band of waves of wave_rows-row units over the SMs it also needs. */
      if (q->wave_rows != 0)
        printf("  (waves of %d rows: [%d.%02d, %d.%02d), last wave %d-%d%% full)", (int)q->wave_rows,
               (int)q->waves_lo / 100, (int)q->waves_lo % 100, (int)q->waves_hi / 100,
               (int)q->waves_hi % 100, (int)q->frac_lo, (int)q->frac_hi);
      printf("\n");
    }
  }
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped; bytes above 0x7F as
 * \u00XX (Latin-1), so the output is valid JSON whatever a driver message contains. */
static void json_string(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p == '\n') printf("\\n");
    else if (*p == '\t') printf("\\t");
    else if (*p < 0x20 || *p > 0x7e) printf("\\u%04x", (unsigned)*p);
    else putchar(*p);
  }
  putchar('"');
}

/* A name, or null when this tool does not know the number. */
static void json_name(const char *name) {
  if (name != NULL) json_string(name);
  else printf("null");
}

static void print_json(const report *r) {
  char lib[32], hdr[32];
  version_text(r->version, lib, sizeof lib);
  version_text(CAKE_VERSION, hdr, sizeof hdr);
  printf("{\n  \"version\": \"%s\",\n  \"version_number\": %d,\n  \"header_version\": \"%s\",\n",
         lib, r->version, hdr);
  printf("  \"devices\": [");
  for (int i = 0; i < r->device_count; ++i) {
    const device_entry *e = &r->devices[i];
    printf("%s\n    {\"ordinal\": %d, \"status\": ", i ? "," : "", e->ordinal);
    json_string(cake_status_string(e->status));
    if (e->status != CAKE_STATUS_SUCCESS) {
      printf(", \"message\": ");
      json_string(e->message);
      printf("}");
      continue;
    }
    const cake_device_info *d = &e->info;
    printf(", \"name\": ");
    json_string(d->device_name);
    printf(", \"cc_major\": %d, \"cc_minor\": %d, \"sm_count\": %d, \"table\": \"sm%d\", "
           "\"image\": ",
           (int)d->cc_major, (int)d->cc_minor, (int)d->sm_count, (int)d->table);
    json_string(d->image);
    printf(", \"jit\": %s, \"cross_check\": %s, \"program_count\": %d}", d->jit ? "true" : "false",
           d->cross_check ? "true" : "false", (int)d->program_count);
  }
  printf("%s],\n  \"tables\": [", r->device_count ? "\n  " : "");
  for (int ti = 0; ti < r->table_count; ++ti) {
    const table_entry *t = &r->tables[ti];
    printf("%s\n    {\n      \"table\": \"sm%d\",\n      \"arch\": %d,\n      \"programs\": [",
           ti ? "," : "", t->arch, t->arch);
    for (int32_t i = 0; i < t->program_count; ++i) {
      const cake_table_program *p = &t->programs[i];
      printf("%s\n        {\"name\": ", i ? "," : "");
      json_string(p->name);
      printf(", \"kernel\": ");
      json_string(p->kernel);
      printf(", \"family\": ");
      json_name(family_name(p->family));
      printf(", \"op\": ");
      json_name(op_name(p->family, p->op));
      printf(", \"family_id\": %d, \"op_id\": %d, \"threads\": %d, \"ctas_per_sm\": %d, "
             "\"knobs\": {",
             (int)p->family, (int)p->op, (int)p->threads, (int)p->min_ctas_per_sm);
      const char *const *names;
      const int n = knob_names(p->family, &names);
      for (int k = 0; k < n; ++k) {
        if (names != NULL) printf("%s\"%s\": %d", k ? ", " : "", names[k], (int)p->knobs[k]);
        else printf("%s\"knob%d\": %d", k ? ", " : "", k, (int)p->knobs[k]);
      }
      printf("}}");
    }
    printf("%s],\n      \"routes\": [", t->program_count ? "\n      " : "");
    for (int32_t i = 0; i < t->route_count; ++i) {
      const cake_table_route *q = &t->routes[i];
      printf("%s\n        {\"family\": ", i ? "," : "");
      json_name(family_name(q->family));
      printf(", \"op\": ");
      json_name(op_name(q->family, q->op));
      printf(", \"family_id\": %d, \"op_id\": %d, \"d\": ", (int)q->family, (int)q->op);
      if (q->d == 0) printf("null");
      else printf("%d", (int)q->d);
      printf(", \"metric\": \"%s\", \"metric_lo\": %" PRId64 ", \"metric_hi\": ",
             metric_name(q->family), q->metric_lo);
      if (q->metric_hi < 0) printf("null");
      else printf("%" PRId64, q->metric_hi);
      printf(", \"program\": ");
      json_string(q->program);
      if (q->wave_rows != 0)
        printf(", \"wave_rows\": %d, \"waves_lo\": %d, \"waves_hi\": %d, \"frac_lo\": %d, \"frac_hi\": %d",
               (int)q->wave_rows, (int)q->waves_lo, (int)q->waves_hi, (int)q->frac_lo, (int)q->frac_hi);
      printf("}");
    }
    printf("%s]\n    }", t->route_count ? "\n      " : "");
  }
  printf("%s]\n}\n", r->table_count ? "\n  " : "");
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(FILE *out) {
  fprintf(out,
          "usage: cake-info [--json]\n"
          "  Prints the Cake library version, the devices it can use (cake_create on each\n"
          "  ordinal) and every architecture table it ships: programs (name, family, op,\n"
          "  threads, CTAs per SM, knobs) and routes (family, op, d, metric range, program).\n"
          "  --json  the same as one JSON object (d null: any width; metric_hi null: open)\n");
}

int main(int argc, char **argv) {
  int json = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "cake-info: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  static report r; /* static: the device array is large for the stack of a small tool */
  r.version = cake_version();
  gather_devices(&r);
  if (!gather_tables(&r)) {
    fprintf(stderr, "cake-info: out of memory\n");
    return 1;
  }
  if (json) print_json(&r);
  else print_text(&r);
  for (int i = 0; i < r.table_count; ++i) {
    free(r.tables[i].programs);
    free(r.tables[i].routes);
  }
  free(r.tables);
  return 0;
}
