"""A Curio-like client in another language: proves a C1 file through the zkforge daemon.

Usage: prove_client.py ADDRESS C1_FILE OUT_FILE   (stubs generated from cuzk/v1/proving.proto
into the directory on PYTHONPATH). Writes the proof bytes to OUT_FILE; exits non-zero unless
the daemon answers COMPLETED.
"""

import sys

import grpc

from cuzk.v1 import proving_pb2 as pb
from cuzk.v1 import proving_pb2_grpc as rpc


def main(address: str, c1_path: str, out_path: str) -> int:
    with open(c1_path, "rb") as f:
        c1 = f.read()
    options = [("grpc.max_send_message_length", 256 << 20)]
    with grpc.insecure_channel(address, options=options) as channel:
        client = rpc.ProvingEngineStub(channel)
        request = pb.ProveRequest(
            submit=pb.SubmitProofRequest(
                request_id="python-client",
                proof_kind=pb.POREP_SEAL_COMMIT,
                sector_size=2048,
                vanilla_proof=c1,
            )
        )
        result = client.Prove(request, timeout=600).result
    if result.status != pb.COMPLETED:
        print(f"not completed: status {result.status}: {result.error_message}", file=sys.stderr)
        return 1
    with open(out_path, "wb") as f:
        f.write(result.proof)
    print(f"proof of {len(result.proof)} bytes in {result.total_ms} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
