/* Tests runtime/weights_memory.c: a weights blob of at least one huge page,
 * read from a file mapping as an artifact's is, is copied into huge-page
 * memory byte for byte, the file's pages leave the process's resident size
 * (and still read the same afterwards); small blobs, HX_HUGEPAGES=0 and a
 * kernel without transparent huge pages leave the blob in place. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena_memory.h"
#include "test/support/test_support.h"
#include "weights_memory.h"

#define MIB ((size_t)1 << 20)

/* A read-only private mapping of a temporary file of `bytes` patterned
 * bytes, every page touched (resident), as dlopen maps an artifact. */
static unsigned char* map_file(size_t bytes) {
  char path[] = "/tmp/hx_weights_test_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  unsigned char* buf = malloc(bytes);
  assert_non_null(buf);
  for (size_t i = 0; i < bytes; ++i) buf[i] = (unsigned char)(i * 131 + (i >> 12));
  assert_int_equal(write(fd, buf, bytes), (ssize_t)bytes);
  free(buf);
  unsigned char* p = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  assert_true(p != MAP_FAILED);
  volatile unsigned sum = 0;
  for (size_t i = 0; i < bytes; i += 4096) sum += ((volatile unsigned char*)p)[i];
  return p;
}

static int pattern_ok(const unsigned char* p, size_t from, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != (unsigned char)((from + i) * 131 + ((from + i) >> 12))) return 0;
  return 1;
}

static void large_blobs_move_to_huge_pages(void** state) {
  unsetenv("HX_HUGEPAGES");
  size_t file = 6 * MIB, off = 64, bytes = 5 * MIB + 123; /* a blob starts 64-byte aligned, not page aligned */
  unsigned char* m = map_file(file);
  size_t before = ts_resident_bytes();
  unsigned char* copy = hx_weights_memory_place(m + off, bytes);
  if (!hx_thp_available()) {
    assert_null(copy);
  } else {
    assert_non_null(copy);
    assert_int_equal((uintptr_t)copy % (2 * MIB), 0);
    assert_true(pattern_ok(copy, off, bytes));
    /* The copy replaced the file's pages: about one blob in all, not two. */
    size_t after = ts_resident_bytes();
    if (after > before + bytes / 4) {
      print_error("placing a %zu-byte blob made the process %zu bytes larger\n", bytes, after - before);
      fail();
    }
    /* Released pages read the same when touched again. */
    assert_true(pattern_ok(m + off, off, bytes));
    hx_weights_memory_free(copy, bytes);
  }
  munmap(m, file);
}

static void small_blobs_stay_in_place(void** state) {
  unsetenv("HX_HUGEPAGES");
  unsigned char* m = map_file(2 * MIB);
  assert_null(hx_weights_memory_place(m + 64, 2 * MIB - 64));
  assert_true(pattern_ok(m, 0, 2 * MIB));
  munmap(m, 2 * MIB);
}

static void environment_keeps_blobs_in_place(void** state) {
  setenv("HX_HUGEPAGES", "0", 1);
  unsigned char* m = map_file(4 * MIB);
  assert_null(hx_weights_memory_place(m, 4 * MIB));
  assert_true(pattern_ok(m, 0, 4 * MIB));
  munmap(m, 4 * MIB);
  unsetenv("HX_HUGEPAGES");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(large_blobs_move_to_huge_pages),
      cmocka_unit_test(small_blobs_stay_in_place),
      cmocka_unit_test(environment_keeps_blobs_in_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
