/* System linker invocation (no shell: arguments go straight to execvp). */
#define _GNU_SOURCE
#include "compiler/backend/link.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

hx_status_t hc_link_shared(const char* const* objs, int num_objs, const char* out_path) {
  const char* cc = getenv("HARNESS_CC");
  if (!cc || !*cc) cc = "cc";
  if (num_objs < 1 || num_objs > 8) return hx_status_make(HX_STATUS_INTERNAL, "cannot link %d objects", num_objs);
  char errpath[] = "/tmp/harnessc-link-XXXXXX";
  int errfd = mkstemp(errpath);
  if (errfd < 0) return hx_status_make(HX_STATUS_IO, "cannot create a temporary file: %s", strerror(errno));
  unlink(errpath);
  char* argv[24];
  int argc = 0;
  argv[argc++] = (char*)cc;
  argv[argc++] = "-shared";
  argv[argc++] = "-o";
  argv[argc++] = (char*)out_path;
  for (int i = 0; i < num_objs; ++i) argv[argc++] = (char*)objs[i];
  const char* const tail[] = {"-lm", "-Wl,-z,noexecstack", "-Wl,-z,relro", "-Wl,-z,now", "-Wl,--hash-style=gnu"};
  for (size_t i = 0; i < sizeof tail / sizeof tail[0]; ++i) argv[argc++] = (char*)tail[i];
  argv[argc] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, errfd, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&fa, errfd, STDOUT_FILENO);
  pid_t pid;
  int rc = posix_spawnp(&pid, cc, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    close(errfd);
    return hx_status_make(HX_STATUS_NOT_FOUND,
                          "cannot run the linker '%s': %s (install a C compiler such as gcc, or set HARNESS_CC)", cc,
                          strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    close(errfd);
    return HX_OK;
  }
  char buf[2048] = "";
  lseek(errfd, 0, SEEK_SET);
  ssize_t got = read(errfd, buf, sizeof buf - 1);
  if (got > 0) buf[got] = '\0';
  close(errfd);
  size_t len = strlen(buf);
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
  unlink(out_path);
  return hx_status_make(HX_STATUS_IO, "linking '%s' with '%s' failed: %s", out_path, cc, buf);
}
