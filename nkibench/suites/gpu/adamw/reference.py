"""One AdamW step at t = 1 (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) on an
(M, N) float32 parameter; returns the new parameter (a fresh tensor, inputs untouched).

    m' = beta1 m + (1 - beta1) g;   v' = beta2 v + (1 - beta2) g^2
    theta' = theta (1 - lr wd) - lr (m' / (1 - beta1)) / (sqrt(v' / (1 - beta2)) + eps)

theta, grad, m, v: (M, N) float32, row-major (M x N = an 11008 x 4096 MLP weight of a 7B
LLM). Optimizer state is float32.
"""

import torch

M = 11008
N = 4096

LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01


def get_inputs():
    # weights at LLM scale (std 0.02); m and v scaled so that the step (about lr per element)
    # is a few percent of theta, so a wrong update shows in the relative L2 error
    theta = 0.02 * torch.randn(M, N, dtype=torch.float32)
    grad = torch.randn(M, N, dtype=torch.float32)
    m = 0.1 * torch.randn(M, N, dtype=torch.float32)
    v = 0.01 * torch.rand(M, N, dtype=torch.float32) + 0.001
    return [theta, grad, m, v]


def forward(theta, grad, m, v):
    theta = theta * (1.0 - LR * WEIGHT_DECAY)
    m = BETA1 * m + (1.0 - BETA1) * grad
    v = BETA2 * v + (1.0 - BETA2) * grad * grad
    m_hat = m / (1.0 - BETA1)
    v_hat = v / (1.0 - BETA2)
    return theta - LR * m_hat / (torch.sqrt(v_hat) + EPS)
