/* launch: the one shape of tftap's messages on stderr, "tftap: <message>",
 * one line, for the run's notes and every command's errors (cli/options.c). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "launch/launch_int.h"

/* A message is one line of at most this many bytes: an argument that
 * came in whole (120 KB of it) is cut, not echoed. */
#define MESSAGE_MAX 1024

void launch_vmessage(const char *fmt, va_list ap)
{
    char msg[MESSAGE_MAX];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    fputs("tftap: ", stderr);
    if (n < 0)
        fputs(fmt, stderr);
    else if ((size_t)n < sizeof msg)
        fputs(msg, stderr);
    else
        fprintf(stderr, "%.*s... (%d bytes cut)", (int)sizeof msg - 64, msg,
                n - ((int)sizeof msg - 64));
}

void launch_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    launch_vmessage(fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
