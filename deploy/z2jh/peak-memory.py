#!/usr/bin/env python3
"""Run a command and report the peak memory of its whole process tree (Linux, stdlib only).

    deploy/z2jh/peak-memory.py [--interval S] -- COMMAND [ARG...]

A student's pod holds several processes at once (the Jupyter server, the GoNB kernel, the Go
compiler and linker building a cell, the cell's program), and the pod's memory limit counts them
together. `/usr/bin/time -v` reports only the largest single process ("Maximum resident set size");
this script samples the command's process tree every --interval seconds (default 0.1) and prints,
on its last line,

    peak-memory: tree RSS peak N MiB (at T s), largest single process M MiB (NAME), samples K, exit E

RSS counts shared pages once per process, so the tree's sum is an upper bound of what the tree
uses (a short-lived peak between two samples can be missed). It exits with the command's status.
"""
import argparse
import os
import subprocess
import sys
import time


def children_of():
    """Maps each pid to its parent's pid, for every process now visible in /proc."""
    parent = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses; split after the last ')'.
        rest = stat[stat.rfind(")") + 2:].split()
        parent[int(name)] = int(rest[1])
    return parent


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    peak_tree, peak_at, peak_one, peak_name, samples = 0, 0.0, 0, "", 0
    while proc.poll() is None:
        parent = children_of()
        tree, todo = set(), [proc.pid]
        while todo:
            pid = todo.pop()
            tree.add(pid)
            todo.extend(p for p, pp in parent.items() if pp == pid and p not in tree)
        sizes = {pid: rss_kib(pid) for pid in tree}
        total = sum(sizes.values())
        samples += 1
        if total > peak_tree:
            peak_tree, peak_at = total, time.monotonic() - start
        biggest = max(sizes, key=sizes.get)
        if sizes[biggest] > peak_one:
            peak_one, peak_name = sizes[biggest], comm(biggest)
        time.sleep(args.interval)
    print(f"peak-memory: tree RSS peak {peak_tree // 1024} MiB (at {peak_at:.1f} s), largest single "
          f"process {peak_one // 1024} MiB ({peak_name}), samples {samples}, exit {proc.returncode}",
          flush=True)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
