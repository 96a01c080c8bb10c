/* The CPUs this process may use, in the order threads should be pinned.
 *
 * Pinning thread i to "CPU i" goes wrong in containers and under taskset
 * (CPU i may not be ours) and on multi-socket machines (threads 0..N-1 may
 * straddle NUMA nodes while another node sits idle). This reads the process's
 * affinity mask and the kernel's NUMA node lists (/sys/devices/system/node)
 * and orders the allowed CPUs node by node, so that a pool of N threads fills
 * one node before it touches the next. Machines without NUMA information are
 * one node. */
#ifndef HARNESS_RUNTIME_CPU_TOPOLOGY_H
#define HARNESS_RUNTIME_CPU_TOPOLOGY_H

#include "harness/status.h"

#define HX_TOPOLOGY_MAX_CPUS 1024

typedef struct hx_cpu_topology {
  int num_cpus;                      /* allowed CPUs */
  int num_nodes;                     /* NUMA nodes that hold at least one allowed CPU */
  int cpus[HX_TOPOLOGY_MAX_CPUS];    /* pinning order */
  int node_of[HX_TOPOLOGY_MAX_CPUS]; /* NUMA node of cpus[i] */
} hx_cpu_topology;

/* Fills *out for the calling process. Fails only if the affinity mask cannot
 * be read at all. */
hx_status_t hx_cpu_topology_read(hx_cpu_topology* out);

#endif /* HARNESS_RUNTIME_CPU_TOPOLOGY_H */
