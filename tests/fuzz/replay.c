/* Runs a libFuzzer target over files without libFuzzer: every file named on
 * the command line, or every file in a directory named there. `make check`
 * uses it to replay the seed corpora (and any crash reproducers kept there)
 * under the normal and the sanitizer builds. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    tftap_buf b = TFTAP_BUF_INIT;
    int rc = tftap_read_file(path, (size_t)64 << 20, &b);
    if (rc) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, tftap_strerror(rc));
        tftap_buf_done(&b);
        return 1;
    }
    /* A private copy of exactly size bytes, so ASan sees any over-read. */
    uint8_t *copy = malloc(b.len ? b.len : 1);
    if (!copy) {
        tftap_buf_done(&b);
        return 1;
    }
    if (b.len)
        memcpy(copy, b.data, b.len);
    LLVMFuzzerTestOneInput(copy, b.len);
    free(copy);
    tftap_buf_done(&b);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            errors++;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            tftap_buf p = TFTAP_BUF_INIT;
            tftap_buf_printf(&p, "%s/%s", argv[i], e->d_name);
            errors += run_file(tftap_buf_cstr(&p));
            files++;
            tftap_buf_done(&p);
        }
        closedir(d);
    }
    printf("replay: %d passed, %d failed\n", files - errors, errors);
    return errors || files == 0 ? 1 : 0;
}
