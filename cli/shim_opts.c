/* tftap shim META_JSON [ARGS...]: run as the provider a shim directory
 * stands for (launch_shim, launch/shim.c). Shim scripts written by tftap
 * wrap and tftap run call it. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "launch/launch.h"

int cli_shim(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: tftap shim META_JSON [ARGS...]\n\n"
                "Run as a provider plugin: start the provider META_JSON names, relay and\n"
                "record every call. Shim scripts written by 'tftap wrap' call this.\n");
        return argc < 2 ? 2 : 0;
    }
    return launch_shim(argv[1], argv + 2);
}
