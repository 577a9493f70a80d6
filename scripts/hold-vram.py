#!/usr/bin/env python3
"""Makes the GPU a smaller card, for real: holds all but GIB GiB of device 0's free memory in
one plain allocation (PyTorch's caching allocator: one cudaMalloc), until killed. Prints
"holding ..." once the memory is taken. Usage: hold-vram.py GIB"""
import sys
import time

import torch

leave = int(float(sys.argv[1]) * (1 << 30))
free, total = torch.cuda.mem_get_info(0)
take = free - leave
if take <= 0:
    sys.exit(f"only {free / 2**30:.2f} GiB free, cannot leave {leave / 2**30:.2f}")
held = torch.empty(take, dtype=torch.uint8, device="cuda:0")
free_now, _ = torch.cuda.mem_get_info(0)
print(f"holding {take / 2**30:.2f} GiB of {total / 2**30:.2f}: {free_now / 2**30:.2f} GiB free",
      flush=True)
while True:
    time.sleep(3600)
