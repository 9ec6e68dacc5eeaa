# dialect: triton
# family: escape: socket connections
# task: gpu/silu
# expect: rejected
# message: import of 'socket' is not allowed
import socket

import torch


def run(x):
    socket.create_connection(("127.0.0.1", 8000), timeout=1).sendall(b"shapes please")
    return torch.empty_like(x)
