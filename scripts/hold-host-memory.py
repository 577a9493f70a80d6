#!/usr/bin/env python3
"""Makes the host smaller, or squeezes it, for real: takes and touches host memory, with
oom_score_adj = -1000 so that the kernel never picks this process when memory runs out (the
limit is real: whatever else holds too much is what it kills). Prints "holding ..." each time
it has taken what it was asked, and holds until killed.

Usage: hold-host-memory.py GIB [AFTER_S GIB2 ...]
  GIB      take GIB GiB now; "leave:N" takes all but N GiB of MemAvailable
  AFTER_S GIB2
           after AFTER_S more seconds, take GIB2 GiB more (repeatable: a squeeze in steps)
"""
import sys
import time

CHUNK = 1 << 30


def available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no MemAvailable in /proc/meminfo")


def size(arg):
    if arg.startswith("leave:"):
        return max(0, available() - int(float(arg[6:]) * (1 << 30)))
    return int(float(arg) * (1 << 30))


def take(held, nbytes):
    while nbytes > 0:
        n = min(CHUNK, nbytes)
        held.append(b"\x01" * n)  # written: every page resident
        nbytes -= n


try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-1000")
except OSError as e:
    print(f"warning: oom_score_adj not set ({e}): this process may be the one killed",
          flush=True)

held = []
steps = sys.argv[1:]
first, rest = steps[0], steps[1:]
t0 = time.time()
take(held, size(first))
print(f"holding {sum(map(len, held)) / 2**30:.2f} GiB at {time.time() - t0:.1f} s; "
      f"MemAvailable {available() / 2**30:.2f} GiB", flush=True)
for after, more in zip(rest[::2], rest[1::2]):
    time.sleep(float(after))
    take(held, size(more))
    print(f"holding {sum(map(len, held)) / 2**30:.2f} GiB at {time.time() - t0:.1f} s; "
          f"MemAvailable {available() / 2**30:.2f} GiB", flush=True)
while True:
    time.sleep(3600)
