/* Tests runtime/status.c: creation, annotation, codes, OK handling. */
#include <string.h>

#include "test/support/test_support.h"

static void ok_is_null_and_empty(void** state) {
  assert_null(HX_OK);
  assert_int_equal(hx_status_code(HX_OK), HX_STATUS_OK);
  assert_string_equal(hx_status_message(HX_OK), "");
  hx_status_free(HX_OK);
  assert_null(hx_status_annotate(HX_OK, "context %d", 1));
}

static void make_formats_message(void** state) {
  hx_status_t st = hx_status_make(HX_STATUS_UNSUPPORTED, "op %s at %d", "Foo", 3);
  assert_int_equal(hx_status_code(st), HX_STATUS_UNSUPPORTED);
  assert_string_equal(hx_status_message(st), "op Foo at 3");
  hx_status_free(st);
}

static void annotate_prefixes_context(void** state) {
  hx_status_t st = hx_status_make(HX_STATUS_IO, "disk full");
  st = hx_status_annotate(st, "writing '%s'", "a.so");
  st = hx_status_annotate(st, "compiling");
  assert_string_equal(hx_status_message(st), "compiling: writing 'a.so': disk full");
  assert_int_equal(hx_status_code(st), HX_STATUS_IO);
  hx_status_free(st);
}

static void ok_code_is_never_returned_for_failure(void** state) {
  hx_status_t st = hx_status_make(HX_STATUS_OK, "bogus");
  assert_non_null(st);
  assert_int_equal(hx_status_code(st), HX_STATUS_INTERNAL);
  hx_status_free(st);
}

static void code_names(void** state) {
  assert_string_equal(hx_status_code_name(HX_STATUS_INCOMPATIBLE), "incompatible");
  assert_string_equal(hx_status_code_name(HX_STATUS_UNSUPPORTED), "unsupported");
}

static void dtype_facts(void** state) {
  assert_int_equal(hx_dtype_size(HX_DTYPE_FLOAT32), 4);
  assert_int_equal(hx_dtype_size(HX_DTYPE_BFLOAT16), 2);
  assert_int_equal(hx_dtype_size(HX_DTYPE_INT64), 8);
  assert_int_equal(hx_dtype_size(HX_DTYPE_STRING), 0);
  assert_string_equal(hx_dtype_name(HX_DTYPE_FLOAT16), "float16");
  assert_string_equal(hx_dtype_name((hx_dtype_t)99), "invalid");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ok_is_null_and_empty),    cmocka_unit_test(make_formats_message),
      cmocka_unit_test(annotate_prefixes_context), cmocka_unit_test(ok_code_is_never_returned_for_failure),
      cmocka_unit_test(code_names),              cmocka_unit_test(dtype_facts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
