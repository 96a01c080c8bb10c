/* Tests runtime/arena_memory.c: large arenas are 2 MiB-aligned mappings
 * (huge pages unless HX_HUGEPAGES=0), small ones plain aligned memory, and
 * every byte asked for is usable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena_memory.h"
#include "test/support/test_support.h"

#define MIB ((size_t)1 << 20)

static void fill_and_free(size_t bytes, size_t align, int want_mapped, size_t want_align) {
  int mapped = -1;
  unsigned char* p = hx_arena_memory_alloc(bytes, align, &mapped);
  assert_non_null(p);
  assert_int_equal(mapped, want_mapped);
  assert_int_equal((uintptr_t)p % want_align, 0);
  memset(p, 0xab, bytes);
  assert_int_equal(p[0], 0xab);
  assert_int_equal(p[bytes - 1], 0xab);
  hx_arena_memory_free(p, bytes, mapped);
}

static void large_arenas_are_huge_page_mappings(void** state) {
  unsetenv("HX_HUGEPAGES");
  fill_and_free(2 * MIB, 64, 1, 2 * MIB);
  fill_and_free(5 * MIB + 123, 64, 1, 2 * MIB);
  fill_and_free(9 * MIB, 4096, 1, 2 * MIB);
}

/* A huge-page arena costs its own size, not its size rounded up to 2 MiB:
 * the part past the last whole huge page stays in small pages (on a
 * kernel without transparent huge pages this holds trivially). */
static void huge_page_arenas_cost_their_size(void** state) {
  unsetenv("HX_HUGEPAGES");
  size_t bytes = 4 * MIB + 100 * 1024;
  int mapped = -1;
  size_t before = ts_resident_bytes();
  unsigned char* p = hx_arena_memory_alloc(bytes, 64, &mapped);
  assert_non_null(p);
  memset(p, 1, bytes);
  size_t grown = ts_resident_bytes() - before;
  hx_arena_memory_free(p, bytes, mapped);
  if (grown > bytes + 256 * 1024) {
    print_error("a %zu-byte arena made the process %zu bytes larger\n", bytes, grown);
    fail();
  }
}

static void small_arenas_are_aligned_allocations(void** state) {
  unsetenv("HX_HUGEPAGES");
  fill_and_free(1000, 64, 0, 64);
  fill_and_free(2 * MIB - 64, 128, 0, 128);
}

static void environment_turns_huge_pages_off(void** state) {
  setenv("HX_HUGEPAGES", "0", 1);
  fill_and_free(5 * MIB, 64, 0, 64);
  unsetenv("HX_HUGEPAGES");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(large_arenas_are_huge_page_mappings),
      cmocka_unit_test(huge_page_arenas_cost_their_size),
      cmocka_unit_test(small_arenas_are_aligned_allocations),
      cmocka_unit_test(environment_turns_huge_pages_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
