/* Tests runtime/batcher.c: choosing the compiled batch size, the row layout,
 * zero padding and splitting results back per request; on the synthetic
 * artifact (batch sizes 1, 2, 4, 8) and on a hand-made unbatched model. */
#include "batcher.h"
#include "test/runtime/rt_support.h"

static void chooses_smallest_size_that_fits(void** state) {
  hx_model_t* m;
  rt_assert_ok(hx_model_load(rt_synthetic_path(), &m));
  assert_int_equal(hx_model_batch_count(m), 4);
  assert_int_equal(hx_model_batch_size(m, 2), 4);
  assert_int_equal(hx_model_batch_size(m, 9), 0);
  hx_batcher b;
  rt_assert_ok(hx_batcher_init(&b, m, 0));
  assert_int_equal(b.num_programs, 4);
  assert_int_equal(b.max_requests, 8);
  assert_int_equal(b.max_rows, 8);
  const int want[] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 3};
  for (int n = 0; n <= 9; ++n) assert_int_equal(hx_batcher_choose(&b, n), want[n]);
  assert_int_equal(b.in_row[0], 16 * sizeof(float));
  assert_int_equal(b.out_row[0], 16 * sizeof(float));
  hx_batcher_release(&b);

  /* max_batch 3: batches of up to 3 requests run on the batch-4 program;
   * batch 8 is never needed. */
  rt_assert_ok(hx_batcher_init(&b, m, 3));
  assert_int_equal(b.num_programs, 3);
  assert_int_equal(b.max_requests, 3);
  assert_int_equal(b.max_rows, 4);
  assert_int_equal(b.sizes[hx_batcher_choose(&b, 3)], 4);
  hx_batcher_release(&b);
  /* More than compiled is capped at the largest size. */
  rt_assert_ok(hx_batcher_init(&b, m, 32));
  assert_int_equal(b.max_requests, 8);
  hx_batcher_release(&b);
  hx_model_free(m);
}

static void gathers_pads_and_splits_rows(void** state) {
  hx_model_t* m;
  rt_assert_ok(hx_model_load(rt_synthetic_path(), &m));
  hx_batcher b;
  rt_assert_ok(hx_batcher_init(&b, m, 0));
  float buf_in[8][16], buf_out[8][16];
  memset(buf_in, 0x7f, sizeof buf_in); /* stale data from an earlier batch */
  void* ins[1] = {buf_in};
  void* outs[1] = {buf_out};
  float samples[3][16];
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 16; ++j) samples[r][j] = (float)(r * 100 + j);
    const void* in[1] = {samples[r]};
    hx_batcher_gather(&b, ins, r, in);
  }
  hx_batcher_pad(&b, ins, 3, 4);
  for (int j = 0; j < 16; ++j) {
    assert_float_equal(buf_in[2][j], 200 + j, 0);
    assert_float_equal(buf_in[3][j], 0, 0); /* padding is zero */
  }
  /* Row pointers are what pre/post callbacks receive. */
  void* row[1];
  hx_batcher_rows(&b, 0, ins, 2, row);
  assert_ptr_equal(row[0], buf_in[2]);
  hx_batcher_rows(&b, 1, outs, 1, row);
  assert_ptr_equal(row[0], buf_out[1]);

  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 16; ++j) buf_out[r][j] = (float)(r * 1000 + j);
  float got[16];
  void* dst[1] = {got};
  hx_batcher_split(&b, outs, 2, dst);
  for (int j = 0; j < 16; ++j) assert_float_equal(got[j], 2000 + j, 0);
  void* none[1] = {NULL};
  hx_batcher_split(&b, outs, 1, none); /* NULL destinations are skipped */
  hx_batcher_release(&b);
  hx_model_free(m);
}

/* An artifact without --batch is one batch-1 program whose row is the whole
 * tensor. Built by hand: only the fields the batcher reads. */
static void unbatched_model_is_one_row(void** state) {
  static const int64_t dims[2] = {2, 3};
  static const hx_abi_tensor in[1] = {{"x", dims, 24, 1, 2}};
  static const hx_abi_tensor out[2] = {{"y", dims, 24, 1, 2}, {"z", dims, 48, 11, 2}};
  hx_abi_header h = {.num_inputs = 1, .num_outputs = 2, .inputs = in, .outputs = out};
  hx_program p = {.batch = 0, .inputs = in, .outputs = out};
  hx_model_t m = {.header = &h, .programs = &p, .num_programs = 1, .batched = 0};
  hx_batcher b;
  rt_assert_ok(hx_batcher_init(&b, &m, 0));
  assert_int_equal(b.num_programs, 1);
  assert_int_equal(b.sizes[0], 1);
  assert_int_equal(b.max_requests, 1);
  assert_int_equal(b.in_row[0], 24);
  assert_int_equal(b.out_row[1], 48);
  assert_int_equal(hx_batcher_choose(&b, 1), 0);
  hx_batcher_release(&b);
  rt_assert_error(hx_batcher_init(&b, &m, -1), HX_STATUS_INVALID_ARGUMENT, "max_batch");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chooses_smallest_size_that_fits),
      cmocka_unit_test(gathers_pads_and_splits_rows),
      cmocka_unit_test(unbatched_model_is_one_row),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
