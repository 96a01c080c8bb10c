/* Relocatable ELF object with one data symbol (see blob_object.h).
 *
 * Layout: ELF header, the blob (at an `align`-aligned offset), the string
 * tables, the symbol table and the section headers. Sections: 0 null,
 * 1 .rodata.<symbol> (the blob), 2 .note.GNU-stack, 3 .symtab, 4 .strtab,
 * 5 .shstrtab. The file is sized first (ftruncate), so the bytes the fill
 * callback never writes read as zeros. */
#define _GNU_SOURCE
#include "compiler/backend/blob_object.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sink {
  int fd;
  uint64_t base; /* file offset of the blob */
  uint64_t size;
  const char* path;
} sink;

static hx_status_t pwrite_all(int fd, const void* data, uint64_t n, uint64_t off, const char* path) {
  const char* p = data;
  while (n) {
    ssize_t w = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return hx_status_make(HX_STATUS_IO, "cannot write '%s': %s", path, w < 0 ? strerror(errno) : "short write");
    p += w;
    off += (uint64_t)w;
    n -= (uint64_t)w;
  }
  return HX_OK;
}

static hx_status_t blob_write(void* s_, uint64_t offset, const void* data, uint64_t size) {
  sink* s = s_;
  if (offset > s->size || size > s->size - offset)
    return hx_status_make(HX_STATUS_INTERNAL, "blob write of %llu bytes at %llu overruns its %llu bytes",
                          (unsigned long long)size, (unsigned long long)offset, (unsigned long long)s->size);
  return pwrite_all(s->fd, data, size, s->base + offset, s->path);
}

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

hx_status_t hc_write_blob_object(const char* path, const char* symbol, uint64_t size, uint64_t align,
                                 hc_blob_fill_fn fill, void* ctx) {
  if (align == 0 || (align & (align - 1)) || align > 4096)
    return hx_status_make(HX_STATUS_INTERNAL, "blob alignment %llu is not a power of two up to 4096",
                          (unsigned long long)align);
  /* String tables. */
  size_t symlen = strlen(symbol);
  char* strtab = calloc(1, symlen + 2);
  char* shstrtab = calloc(1, symlen + 64);
  if (!strtab || !shstrtab) {
    free(strtab);
    free(shstrtab);
    return hx_status_make(HX_STATUS_OUT_OF_MEMORY, "out of memory writing '%s'", path);
  }
  memcpy(strtab + 1, symbol, symlen);
  size_t strtab_len = symlen + 2;
  size_t sh_len = 1;
  uint32_t name_data = (uint32_t)sh_len;
  sh_len += (size_t)sprintf(shstrtab + sh_len, ".rodata.%s", symbol) + 1;
  uint32_t name_note = (uint32_t)sh_len;
  sh_len += (size_t)sprintf(shstrtab + sh_len, ".note.GNU-stack") + 1;
  uint32_t name_symtab = (uint32_t)sh_len;
  sh_len += (size_t)sprintf(shstrtab + sh_len, ".symtab") + 1;
  uint32_t name_strtab = (uint32_t)sh_len;
  sh_len += (size_t)sprintf(shstrtab + sh_len, ".strtab") + 1;
  uint32_t name_shstrtab = (uint32_t)sh_len;
  sh_len += (size_t)sprintf(shstrtab + sh_len, ".shstrtab") + 1;

  /* File layout. */
  uint64_t data_off = round_up(sizeof(Elf64_Ehdr), align);
  uint64_t shstr_off = data_off + size;
  uint64_t str_off = shstr_off + sh_len;
  uint64_t sym_off = round_up(str_off + strtab_len, 8);
  uint64_t shdr_off = round_up(sym_off + 2 * sizeof(Elf64_Sym), 8);
  uint64_t total = shdr_off + 6 * sizeof(Elf64_Shdr);

  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof eh);
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = ET_REL;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = shdr_off;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 6;
  eh.e_shstrndx = 5;

  Elf64_Sym syms[2];
  memset(syms, 0, sizeof syms);
  syms[1].st_name = 1;
  syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
  syms[1].st_other = STV_HIDDEN;
  syms[1].st_shndx = 1;
  syms[1].st_size = size;

  Elf64_Shdr sh[6];
  memset(sh, 0, sizeof sh);
  sh[1] = (Elf64_Shdr){.sh_name = name_data, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_offset = data_off,
                       .sh_size = size, .sh_addralign = align};
  sh[2] = (Elf64_Shdr){.sh_name = name_note, .sh_type = SHT_PROGBITS, .sh_offset = shstr_off, .sh_addralign = 1};
  sh[3] = (Elf64_Shdr){.sh_name = name_symtab, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
                       .sh_size = sizeof syms, .sh_link = 4, .sh_info = 1, .sh_addralign = 8,
                       .sh_entsize = sizeof(Elf64_Sym)};
  sh[4] = (Elf64_Shdr){.sh_name = name_strtab, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = strtab_len,
                       .sh_addralign = 1};
  sh[5] = (Elf64_Shdr){.sh_name = name_shstrtab, .sh_type = SHT_STRTAB, .sh_offset = shstr_off, .sh_size = sh_len,
                       .sh_addralign = 1};

  hx_status_t st = HX_OK;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) st = hx_status_make(HX_STATUS_IO, "cannot create '%s': %s", path, strerror(errno));
  if (st == HX_OK && ftruncate(fd, (off_t)total) != 0)
    st = hx_status_make(HX_STATUS_IO, "cannot size '%s' to %llu bytes: %s", path, (unsigned long long)total,
                        strerror(errno));
  if (st == HX_OK) st = pwrite_all(fd, &eh, sizeof eh, 0, path);
  if (st == HX_OK) {
    sink s = {fd, data_off, size, path};
    st = fill(ctx, blob_write, &s);
  }
  if (st == HX_OK) st = pwrite_all(fd, shstrtab, sh_len, shstr_off, path);
  if (st == HX_OK) st = pwrite_all(fd, strtab, strtab_len, str_off, path);
  if (st == HX_OK) st = pwrite_all(fd, syms, sizeof syms, sym_off, path);
  if (st == HX_OK) st = pwrite_all(fd, sh, sizeof sh, shdr_off, path);
  if (fd >= 0 && close(fd) != 0 && st == HX_OK)
    st = hx_status_make(HX_STATUS_IO, "cannot write '%s': %s", path, strerror(errno));
  free(strtab);
  free(shstrtab);
  return st;
}
