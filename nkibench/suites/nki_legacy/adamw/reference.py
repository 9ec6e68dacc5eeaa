"""One AdamW step at t = 1 (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) on an
(M, N) parameter; returns the new parameter."""

import numpy as np

M = 10944
N = 2048

LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01


def get_inputs():
    theta = np.random.normal(size=(M, N)).astype(np.float32)
    grad = np.random.normal(size=(M, N)).astype(np.float32)
    m = np.random.normal(size=(M, N)).astype(np.float32)
    v = np.abs(np.random.normal(size=(M, N))).astype(np.float32)
    return [theta, grad, m, v]


def forward(theta, grad, m, v):
    theta = theta * (1.0 - LR * WEIGHT_DECAY)
    m = BETA1 * m + (1.0 - BETA1) * grad
    v = BETA2 * v + (1.0 - BETA2) * grad * grad
    m_hat = m / (1.0 - BETA1)
    v_hat = v / (1.0 - BETA2)
    return (theta - LR * m_hat / (np.sqrt(v_hat) + EPS)).astype(np.float32)
