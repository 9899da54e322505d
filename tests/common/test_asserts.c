/* assert() is live in the builds that run the suite: configure's
 * --disable-asserts (NDEBUG) is for the Debian package alone, and this
 * test holds the build to what configure chose (TFTAP_ASSERTS, "yes" or
 * "no", defined by Makefile.am), so a -DNDEBUG slipped into CFLAGS does
 * not quietly turn the invariants off. */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

/* 1 when a failing assert() ends a child with SIGABRT, 0 when it does not. */
static int assert_fires(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 2); /* the assertion's message is expected */
        volatile int zero = 0;
        assert(zero);
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

int main(void)
{
    int fires = assert_fires();
    CHECK(fires >= 0);
    CHECK_INT_EQ(fires, strcmp(TFTAP_ASSERTS, "no") != 0);
    return check_report("test_asserts");
}
