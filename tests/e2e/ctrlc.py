#!/usr/bin/env python3
"""A Ctrl-C at a terminal, then SIGINT to `tftap run` alone (tests/e2e/signals.sh).

usage: ctrlc.py TFTAP DB DIR

On a pseudo-terminal, a shell runs `tftap run` in its foreground process group
(no job control: the shell's group) with a command in a session of its own,
which writes each signal it receives to DIR/got: so whatever it gets, tftap
passed on. The terminal's Ctrl-C goes to the group (tftap, its sentinel, the
shell): nothing of it is passed on. Once tftap has taken the sentinel's copy
of it off, a SIGINT to tftap alone and a SIGQUIT as the marker: both are
passed on. Prints what the command received, sorted ("INT QUIT"), or a line
saying which wait failed (exit 1).
"""
import os
import pty
import signal
import subprocess
import sys
import time


def wait(cond, tries=1200):
    """Up to tries * 0.05 s for cond() to hold (a condition, not a time)."""
    for _ in range(tries):
        if cond():
            return True
        time.sleep(0.05)
    return False


def children(pid, comm):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    found = []
    for kid in out:
        try:
            with open(f"/proc/{kid}/comm") as f:
                if f.read().strip() == comm:
                    found.append(int(kid))
        except OSError:
            pass
    return found


def pending(pid):
    """Signals pending at pid (thread and process), bit sig-1."""
    mask = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("SigPnd:", "ShdPnd:")):
                mask |= int(line.split()[1], 16)
    return mask


def main():
    tftap, db, d = (os.path.abspath(a) for a in sys.argv[1:4])
    os.makedirs(d, exist_ok=True)
    os.chdir(d)
    open("got", "w").close()
    trap = 'for s in INT TERM HUP QUIT; do trap "echo $s >>got" $s; done'
    # The shell notes the Ctrl-C (a file) and waits for tftap through it.
    argv = ["sh", "-c", 'trap "touch ctrl-c" INT; "$@" & t=$!\n'
            'while kill -0 "$t" 2>/dev/null; do wait "$t"; done', "sh",
            tftap, "run", "--db", db, "--", "setsid", "env", "--default-signal=INT,QUIT,TERM",
            "sh", "-c", trap + "; touch ready; while [ ! -e stop ]; do sleep 0.05; done"]
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    try:
        if not wait(lambda: os.path.exists("ready")):
            print("the command never started")
            return 1
        tftaps = children(pid, "tftap")
        sentinels = children(tftaps[0], "tftap-sentinel") if tftaps else []
        if not sentinels:
            print("no tftap run with a sentinel under the shell")
            return 1
        tftap_pid, sentinel = tftaps[0], sentinels[0]
        os.write(master, b"\x03")
        if not wait(lambda: os.path.exists("ctrl-c")):
            print("the terminal's Ctrl-C never reached the group")
            return 1
        # tftap takes the sentinel's copy off once it has its own.
        if not wait(lambda: not pending(sentinel) & (1 << (signal.SIGINT - 1))):
            print("the sentinel's copy of the Ctrl-C was never taken off")
            return 1
        os.kill(tftap_pid, signal.SIGINT)
        os.kill(tftap_pid, signal.SIGQUIT)
        if not wait(lambda: "QUIT" in open("got").read()):
            print("the marker (SIGQUIT to tftap alone) was never passed on")
            return 1
        print(" ".join(sorted(open("got").read().split())))
        return 0
    finally:
        open("stop", "w").close()
        os.waitpid(pid, 0)
        os.close(master)


if __name__ == "__main__":
    sys.exit(main())
