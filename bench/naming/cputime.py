#!/usr/bin/env python3
# Run a command as a subreaper: every descendant, detached ones too, is
# reaped here, so RUSAGE_CHILDREN counts all of their CPU. Prints wall,
# CPU until the command exited, and CPU including what outlived it.
import ctypes, os, sys, time, resource
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_CHILD_SUBREAPER = 36
libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, st = os.waitpid(pid, 0)
t1 = time.monotonic()
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
t2 = time.monotonic()
r2 = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wall %.2f s, cpu %.2f s (all descendants, until the last ended %.2f s later: %.2f s)" % (
    t1 - t0, r1.ru_utime + r1.ru_stime, t2 - t1, r2.ru_utime + r2.ru_stime), file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(st))
