/* CPU pinning order from the affinity mask and the kernel's NUMA lists. */
#define _GNU_SOURCE
#include "cpu_topology.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a kernel CPU list ("0-3,8,10-11") and sets node[cpu] = id for every
 * CPU in it. Malformed text stops the parse; what was read stays. */
static void apply_cpulist(const char* text, int id, int* node) {
  const char* p = text;
  while (*p) {
    char* end;
    long lo = strtol(p, &end, 10);
    if (end == p) break;
    long hi = lo;
    p = end;
    if (*p == '-') {
      hi = strtol(p + 1, &end, 10);
      if (end == p + 1) break;
      p = end;
    }
    for (long c = lo; c <= hi && c < HX_TOPOLOGY_MAX_CPUS; ++c)
      if (c >= 0) node[c] = id;
    if (*p != ',') break;
    ++p;
  }
}

hx_status_t hx_cpu_topology_read(hx_cpu_topology* out) {
  memset(out, 0, sizeof(*out));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return hx_status_make(HX_STATUS_UNAVAILABLE, "cannot read the CPU affinity mask: %s", strerror(errno));

  /* node[cpu] for every CPU the kernel lists; -1 = no NUMA information. */
  int* node = malloc(sizeof(int) * HX_TOPOLOGY_MAX_CPUS);
  if (!node) return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory reading the CPU topology");
  for (int c = 0; c < HX_TOPOLOGY_MAX_CPUS; ++c) node[c] = -1;
  int max_node = -1;
  for (int id = 0; id < 1024; ++id) {
    char path[96], text[4096];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", id);
    FILE* f = fopen(path, "r");
    if (!f) {
      /* Node ids may have holes; stop after a long run of missing ones. */
      if (id > max_node + 64) break;
      continue;
    }
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    apply_cpulist(text, id, node);
    max_node = id;
  }

  /* Allowed CPUs, grouped by node (CPUs without a node come last). */
  int count = 0;
  for (int id = 0; id <= max_node + 1; ++id) {
    int want = id <= max_node ? id : -1;
    int added = 0;
    for (int c = 0; c < HX_TOPOLOGY_MAX_CPUS && c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &set) || node[c] != want) continue;
      out->cpus[count] = c;
      out->node_of[count] = want < 0 ? 0 : want;
      ++count;
      added = 1;
    }
    if (added) out->num_nodes++;
  }
  free(node);
  out->num_cpus = count;
  if (out->num_nodes == 0) out->num_nodes = 1;
  if (count == 0) return hx_status_make(HX_STATUS_UNAVAILABLE, "the CPU affinity mask is empty");
  return HX_OK;
}
