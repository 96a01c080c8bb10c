/* Embedding a Harness artifact in a C program: load it, inspect its
 * signature, bind buffers, run, read the result. Every call returns a
 * status; nothing in libharness prints, exits or aborts.
 *
 *   harnessc examples/tiny_cnn.onnx -o tiny_cnn.so
 *   cc embed.c -I runtime/include -L build/lib -lharness -o embed
 *   LD_LIBRARY_PATH=build/lib ./embed tiny_cnn.so
 */
#include <harness/harness.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints a failed status and releases it; returns 1 for main's exit code. */
static int report(hx_status_t st, const char* what) {
  fprintf(stderr, "%s: %s (%s)\n", what, hx_status_message(st), hx_status_code_name(hx_status_code(st)));
  hx_status_free(st);
  return 1;
}

static void print_info(const char* kind, const hx_tensor_info_t* t) {
  printf("%s '%s': %s[", kind, t->name, hx_dtype_name(t->dtype));
  for (int d = 0; d < t->rank; ++d) printf("%s%lld", d ? "x" : "", (long long)t->dims[d]);
  printf("] (%zu bytes)\n", t->bytes);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ARTIFACT.so\n", argv[0]);
    return 2;
  }
  hx_model_t* model = NULL;
  hx_status_t st = hx_model_load(argv[1], &model);
  if (st != HX_OK) return report(st, "load");
  printf("model '%s' by %s, code for %s\n", hx_model_name(model), hx_model_producer(model), hx_model_target(model));

  /* This example expects one float32 input and one float32 output. */
  hx_tensor_info_t in, out;
  if ((st = hx_model_input_info(model, 0, &in)) != HX_OK) return report(st, "input info");
  if ((st = hx_model_output_info(model, 0, &out)) != HX_OK) return report(st, "output info");
  print_info("input", &in);
  print_info("output", &out);
  if (in.dtype != HX_DTYPE_FLOAT32 || out.dtype != HX_DTYPE_FLOAT32) {
    fprintf(stderr, "this example handles float32 models only\n");
    hx_model_free(model);
    return 1;
  }

  hx_session_options_t opts = {.threads = 2}; /* arena and threads are set up once, here */
  hx_session_t* session = NULL;
  if ((st = hx_session_create(model, &opts, &session)) != HX_OK) return report(st, "session");

  size_t n_in = in.bytes / sizeof(float), n_out = out.bytes / sizeof(float);
  float* x = malloc(in.bytes);
  float* y = malloc(out.bytes);
  for (size_t i = 0; i < n_in; ++i) x[i] = (float)((i * 37) % 101) / 101.0f; /* a fixed test pattern */

  if ((st = hx_session_bind_input(session, 0, x, in.bytes)) != HX_OK) return report(st, "bind input");
  if ((st = hx_session_bind_output(session, 0, y, out.bytes)) != HX_OK) return report(st, "bind output");
  if ((st = hx_session_run(session)) != HX_OK) return report(st, "run");

  size_t best = 0;
  for (size_t i = 1; i < n_out; ++i)
    if (y[i] > y[best]) best = i;
  printf("predicted class %zu (score %.4f)\n", best, y[best]);

  free(x);
  free(y);
  hx_session_free(session);
  hx_model_free(model);
  return 0;
}
